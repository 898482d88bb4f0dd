# expect: ok
"""Correct: 2-D tiles of ROWS x BLOCK_N outputs per program, and a sigmoid that never overflows.

sigmoid(g) is computed from e = exp(-|g|), which lies in (0, 1]: 1 / (1 + e) for g >= 0 and e / (1 + e) for g < 0,
both in float32 and exp2-based. Rows and columns past the end are masked.
"""
import torch
import triton
import triton.language as tl


@triton.jit
def swiglu_tile_kernel(out_ptr, x_ptr, n_rows, n_cols, x_row_stride, out_row_stride,
                       ROWS: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    src = x_ptr + rows[:, None] * x_row_stride + cols[None, :]
    gate = tl.load(src, mask=mask, other=0.0).to(tl.float32)
    up = tl.load(src + n_cols, mask=mask, other=0.0).to(tl.float32)
    e = tl.exp2(-tl.abs(gate) * 1.4426950408889634)  # exp(-|g|) = 2^(-|g| * log2(e))
    sig = tl.where(gate >= 0, 1.0 / (1.0 + e), e / (1.0 + e))
    y = gate * sig * up
    tl.store(out_ptr + rows[:, None] * out_row_stride + cols[None, :], y.to(out_ptr.dtype.element_ty), mask=mask)


def custom_kernel(x):
    x = x.contiguous()
    n_rows, width = x.shape
    n_cols = width // 2
    out = torch.empty((n_rows, n_cols), dtype=x.dtype, device=x.device)
    rows, block_n = 4, 512
    grid = (triton.cdiv(n_rows, rows), triton.cdiv(n_cols, block_n))
    swiglu_tile_kernel[grid](out, x, n_rows, n_cols, x.stride(0), out.stride(0), ROWS=rows, BLOCK_N=block_n)
    return out
