# expect: ok
"""Correct: ROWS_PER_PROGRAM rows per program as one 2-D block [ROWS_PER_PROGRAM, BLOCK_N].

Short rows leave most lanes of a one-row program idle; packing several rows per program keeps about 4096 elements
in flight per program and loads the weight once for all of them. The sums of squares run along axis 1; rows past
the end are masked on load and store (they load zeros, so their 1/rms is 1/sqrt(eps), finite and never stored).
"""
import torch
import triton
import triton.language as tl


@triton.jit
def rmsnorm_rows_kernel(out_ptr, x_ptr, w_ptr, x_row_stride, out_row_stride, n_rows, n_cols, eps,
                        ROWS_PER_PROGRAM: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * ROWS_PER_PROGRAM + tl.arange(0, ROWS_PER_PROGRAM)
    cols = tl.arange(0, BLOCK_N)
    col_mask = cols < n_cols
    mask = (rows < n_rows)[:, None] & col_mask[None, :]
    x = tl.load(x_ptr + rows[:, None] * x_row_stride + cols[None, :], mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=col_mask, other=0.0).to(tl.float32)
    inv_rms = tl.math.rsqrt(tl.sum(x * x, axis=1) / n_cols + eps)
    y = x * inv_rms[:, None] * w[None, :]
    tl.store(out_ptr + rows[:, None] * out_row_stride + cols[None, :], y.to(out_ptr.dtype.element_ty), mask=mask)


def custom_kernel(x, weight):
    x = x.contiguous()
    weight = weight.contiguous()
    n_rows, n_cols = x.shape
    out = torch.empty_like(x)
    BLOCK_N = triton.next_power_of_2(n_cols)
    ROWS_PER_PROGRAM = max(1, min(16, 4096 // BLOCK_N))
    elements = ROWS_PER_PROGRAM * BLOCK_N
    num_warps = 4 if elements <= 2048 else (8 if elements <= 8192 else 16)
    grid = (triton.cdiv(n_rows, ROWS_PER_PROGRAM),)
    rmsnorm_rows_kernel[grid](out, x, weight, x.stride(0), out.stride(0), n_rows, n_cols, 1e-6,
                              ROWS_PER_PROGRAM=ROWS_PER_PROGRAM, BLOCK_N=BLOCK_N, num_warps=num_warps)
    return out
