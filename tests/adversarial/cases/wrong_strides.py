# stops: runner
# expect: run: not contiguous
"""Cheat: right values in a column-major output (a transposed store pattern that is faster for some shapes, or
one that saves a copy); a harness that compares values only would pass it."""
import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(out_ptr, x_ptr, n_rows, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=-float("inf")).to(tl.float32)
    num = tl.exp(x - tl.max(x, axis=0))
    y = num / tl.sum(num, axis=0)
    tl.store(out_ptr + offs * n_rows + row, y.to(out_ptr.dtype.element_ty), mask=mask)


def custom_kernel(x):
    x = x.contiguous()
    n_rows, n_cols = x.shape
    out = torch.empty_strided((n_rows, n_cols), (1, n_rows), dtype=x.dtype, device=x.device)
    softmax_kernel[(n_rows,)](out, x, n_rows, n_cols, BLOCK=triton.next_power_of_2(n_cols),
                              num_warps=16 if n_cols > 8192 else 4)
    return out
