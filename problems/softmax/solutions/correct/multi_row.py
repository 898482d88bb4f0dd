# expect: ok
"""Correct: ROWS_PER_PROGRAM rows per program as one 2-D block [ROWS_PER_PROGRAM, BLOCK_N].

Short rows leave most lanes of a one-row program idle; packing several rows per program keeps about 4096 elements
in flight per program. Reductions run along axis 1; rows past the end are masked on load and store.
"""
import torch
import triton
import triton.language as tl


@triton.jit
def softmax_rows_kernel(out_ptr, x_ptr, x_row_stride, out_row_stride, n_rows, n_cols,
                        ROWS_PER_PROGRAM: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * ROWS_PER_PROGRAM + tl.arange(0, ROWS_PER_PROGRAM)
    cols = tl.arange(0, BLOCK_N)
    row_mask = rows < n_rows
    mask = row_mask[:, None] & (cols[None, :] < n_cols)
    x = tl.load(x_ptr + rows[:, None] * x_row_stride + cols[None, :], mask=mask, other=-float("inf")).to(tl.float32)
    # Rows past the end would be all -inf (max - max = nan); make them 0.0. They are never stored.
    x = tl.where(row_mask[:, None], x, 0.0)
    num = tl.exp(x - tl.max(x, axis=1)[:, None])
    y = num / tl.sum(num, axis=1)[:, None]
    tl.store(out_ptr + rows[:, None] * out_row_stride + cols[None, :], y.to(out_ptr.dtype.element_ty), mask=mask)


def custom_kernel(x):
    x = x.contiguous()
    n_rows, n_cols = x.shape
    out = torch.empty_like(x)
    BLOCK_N = triton.next_power_of_2(n_cols)
    ROWS_PER_PROGRAM = max(1, min(16, 4096 // BLOCK_N))
    num_warps = 4 if ROWS_PER_PROGRAM * BLOCK_N <= 2048 else (8 if ROWS_PER_PROGRAM * BLOCK_N <= 8192 else 16)
    grid = (triton.cdiv(n_rows, ROWS_PER_PROGRAM),)
    softmax_rows_kernel[grid](out, x, x.stride(0), out.stride(0), n_rows, n_cols,
                              ROWS_PER_PROGRAM=ROWS_PER_PROGRAM, BLOCK_N=BLOCK_N, num_warps=num_warps)
    return out
