# expect: load: tensor.t
"""Wrong: Tensor.t called through the class, `torch.Tensor.t(x)`, to dodge a check that only looks at methods on
values; the static check resolves it to Tensor.t, which this problem forbids."""
import torch
import triton
import triton.language as tl


@triton.jit
def touch_kernel(x_ptr):
    pass


def custom_kernel(x):
    touch_kernel[(1,)](x)
    return torch.Tensor.t(x).contiguous()
