# expect: compile: copies and conversions
"""Wrong: the transpose is `out.copy_(x.T)` on the host (Tensor.T is not on the forbidden list, being Triton's own
idiom inside kernels): torch's copy kernel moves the data, the Triton launch is for show. The runner's op log sees
the copy at the first call."""
import torch
import triton
import triton.language as tl


@triton.jit
def touch_kernel(x_ptr):
    pass


def custom_kernel(x):
    touch_kernel[(1,)](x)
    n_rows, n_cols = x.shape
    out = torch.empty((n_cols, n_rows), dtype=x.dtype, device=x.device)
    out.copy_(x.T)
    return out
