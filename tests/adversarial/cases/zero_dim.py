# stops: runner
# expect: run: output shape
"""Cheat: a 0-d tensor, which broadcasts against any reference in a naive allclose; its value is the 1/N a
uniform softmax would give."""
import torch
import triton
import triton.language as tl


@triton.jit
def fill_kernel(out_ptr, value):
    tl.store(out_ptr, value)


def custom_kernel(x):
    out = torch.empty((), dtype=x.dtype, device=x.device)
    fill_kernel[(1,)](out, 1.0 / x.shape[1])
    return out
