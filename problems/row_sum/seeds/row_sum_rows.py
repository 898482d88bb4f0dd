"""Seed: row sums in Triton, one program per row.

Each program walks its row in chunks of BLOCK columns, adding each chunk into BLOCK per-lane float32 accumulators
(masked lanes load 0.0, so N need not be a multiple of BLOCK), and reduces the lanes with tl.sum at the end. Keeping
per-lane partial sums makes every accumulator add only N / BLOCK values, which keeps the rounding error small.
One program per row leaves most of the GPU idle when M is small (8 rows of a million), and launches many short
programs when N is small.
"""
import torch
import triton
import triton.language as tl

# Knobs a tuner may adjust; the wrapper reads them at every call.
KNOBS = {"BLOCK": 1024, "NUM_WARPS": 4}
KNOB_SPACE = {"BLOCK": [256, 512, 1024, 2048, 4096], "NUM_WARPS": [2, 4, 8]}


@triton.jit
def row_sum_kernel(out_ptr, x_ptr, n_cols, x_row_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row.to(tl.int64) * x_row_stride
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + offs
        acc += tl.load(x_row + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
    tl.store(out_ptr + row, tl.sum(acc, axis=0))


def custom_kernel(x):
    x = x.contiguous()
    n_rows, n_cols = x.shape
    out = torch.empty((n_rows,), dtype=torch.float32, device=x.device)
    row_sum_kernel[(n_rows,)](out, x, n_cols, x.stride(0), BLOCK=KNOBS["BLOCK"], num_warps=KNOBS["NUM_WARPS"])
    return out
