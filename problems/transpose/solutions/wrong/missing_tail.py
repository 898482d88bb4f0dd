# expect: correctness: max_rel
"""Wrong: each program takes BLOCK rows of x and walks along them tile by tile, but the loop bound
range(0, N - BLOCK + 1, BLOCK) stops before the last partial tile, so the last N % BLOCK columns of x (the last rows
of out) are never written and keep the zeros they were allocated with. Every benchmark N is a multiple of 32, so
this would pass there; test shapes are not."""
import torch
import triton
import triton.language as tl


@triton.jit
def transpose_rows_kernel(out_ptr, x_ptr, n_rows, n_cols, BLOCK: tl.constexpr):
    rows = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    row_mask = rows[:, None] < n_rows
    for start in range(0, n_cols - BLOCK + 1, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        tile = tl.load(x_ptr + rows[:, None] * n_cols + cols[None, :], mask=row_mask)
        tl.store(out_ptr + cols[None, :] * n_rows + rows[:, None], tile, mask=row_mask)


def custom_kernel(x):
    x = x.contiguous()
    n_rows, n_cols = x.shape
    out = torch.zeros((n_cols, n_rows), dtype=x.dtype, device=x.device)
    transpose_rows_kernel[(triton.cdiv(n_rows, 32),)](out, x, n_rows, n_cols, BLOCK=32)
    return out
