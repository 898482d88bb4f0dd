# expect: compile: copies and conversions
"""Wrong: an output allocated with transposed strides, filled by a plain copy of x, then re-viewed as contiguous
(N, M) through its storage. No forbidden name appears; the copy is still torch's, and the op log sees it."""
import torch
import triton
import triton.language as tl


@triton.jit
def touch_kernel(x_ptr):
    pass


def custom_kernel(x):
    touch_kernel[(1,)](x)
    n_rows, n_cols = x.shape
    staged = torch.empty_strided((n_rows, n_cols), (1, n_rows), dtype=x.dtype, device=x.device)
    staged.copy_(x)
    out = torch.empty(0, dtype=x.dtype, device=x.device)
    out.set_(staged.untyped_storage(), 0, (n_cols, n_rows), (n_rows, 1))
    return out
