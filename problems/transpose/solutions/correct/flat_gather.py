# expect: ok
"""Correct: one flat pass over the output. Output element o is out[j, i] with j = o // M and i = o % M; it reads
x[i, j] at i * N + j. The stores are contiguous and the loads strided by N (slow on a GPU for large N, but right)."""
import torch
import triton
import triton.language as tl


@triton.jit
def transpose_gather_kernel(out_ptr, x_ptr, n_rows, n_cols, n_elements, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    j = offs // n_rows
    i = offs % n_rows
    tl.store(out_ptr + offs, tl.load(x_ptr + i * n_cols + j, mask=mask), mask=mask)


def custom_kernel(x):
    x = x.contiguous()
    n_rows, n_cols = x.shape
    out = torch.empty((n_cols, n_rows), dtype=x.dtype, device=x.device)
    n_elements = x.numel()
    transpose_gather_kernel[(triton.cdiv(n_elements, 1024),)](out, x, n_rows, n_cols, n_elements, BLOCK=1024)
    return out
