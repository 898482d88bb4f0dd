# expect: ok
"""Correct: ROWS rows per program as one 2-D block [ROWS, BLOCK_N], looping over the columns and reducing along
axis 1 at the end. Short rows (N = 1024) then fill a program instead of leaving most lanes idle. Rows past the end
and columns past N load 0.0 and are never stored."""
import torch
import triton
import triton.language as tl


@triton.jit
def row_sum_rows_kernel(out_ptr, x_ptr, n_rows, n_cols, x_row_stride, ROWS: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    row_mask = rows < n_rows
    base = x_ptr + rows.to(tl.int64)[:, None] * x_row_stride
    acc = tl.zeros([ROWS, BLOCK_N], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        mask = row_mask[:, None] & (cols[None, :] < n_cols)
        acc += tl.load(base + cols[None, :], mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + rows, tl.sum(acc, axis=1), mask=row_mask)


def custom_kernel(x):
    x = x.contiguous()
    n_rows, n_cols = x.shape
    out = torch.empty((n_rows,), dtype=torch.float32, device=x.device)
    rows, block_n = 8, 256
    row_sum_rows_kernel[(triton.cdiv(n_rows, rows),)](out, x, n_rows, n_cols, x.stride(0), ROWS=rows,
                                                     BLOCK_N=block_n)
    return out
