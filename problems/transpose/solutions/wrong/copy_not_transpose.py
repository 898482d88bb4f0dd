# expect: correctness: max_rel
"""Wrong: addresses the output with x's strides (row i of out at i * N), so the kernel is a plain copy of x into an
(N, M) buffer. The shape, dtype and strides are right; for a square input the result even looks plausible; for
1 x N and N x 1 inputs it is right (their transpose has the same memory), but from 33 x 65 on the values are in the
wrong places."""
import torch
import triton
import triton.language as tl


@triton.jit
def transpose_kernel(out_ptr, x_ptr, n_rows, n_cols, BLOCK: tl.constexpr):
    rows = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    offs = rows[:, None] * n_cols + cols[None, :]
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


def custom_kernel(x):
    x = x.contiguous()
    n_rows, n_cols = x.shape
    out = torch.empty((n_cols, n_rows), dtype=x.dtype, device=x.device)
    grid = (triton.cdiv(n_rows, 32), triton.cdiv(n_cols, 32))
    transpose_kernel[grid](out, x, n_rows, n_cols, BLOCK=32)
    return out
