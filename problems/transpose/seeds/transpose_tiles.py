"""Seed: out-of-place transpose in Triton, one BLOCK_M x BLOCK_N tile of x per program.

Each program loads a tile of x (rows i, columns j) and stores it to out[j, i]: the same values, addressed through
out's strides. The loads run along x's rows and the stores along out's rows, so the Triton compiler moves the tile
through shared memory between the two access patterns. Tiles at the right and bottom edges are masked.
"""
import torch
import triton
import triton.language as tl

# Knobs a tuner may adjust; the wrapper reads them at every call.
KNOBS = {"BLOCK_M": 64, "BLOCK_N": 64, "NUM_WARPS": 4}
KNOB_SPACE = {"BLOCK_M": [32, 64, 128], "BLOCK_N": [32, 64, 128], "NUM_WARPS": [2, 4, 8]}


@triton.jit
def transpose_kernel(out_ptr, x_ptr, n_rows, n_cols, x_row_stride, out_row_stride,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    tile = tl.load(x_ptr + rows[:, None] * x_row_stride + cols[None, :], mask=mask)
    # x[i, j] goes to out[j, i]: row j of out starts at j * out_row_stride.
    tl.store(out_ptr + cols[None, :] * out_row_stride + rows[:, None], tile, mask=mask)


def custom_kernel(x):
    x = x.contiguous()
    n_rows, n_cols = x.shape
    out = torch.empty((n_cols, n_rows), dtype=x.dtype, device=x.device)
    grid = (triton.cdiv(n_rows, KNOBS["BLOCK_M"]), triton.cdiv(n_cols, KNOBS["BLOCK_N"]))
    transpose_kernel[grid](out, x, n_rows, n_cols, x.stride(0), out.stride(0),
                           BLOCK_M=KNOBS["BLOCK_M"], BLOCK_N=KNOBS["BLOCK_N"], num_warps=KNOBS["NUM_WARPS"])
    return out
