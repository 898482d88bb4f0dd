# stops: static check, then runner
# expect: load: getattr
# expect-dynamic: compile: torch ops
"""Cheat: the library softmax reached by a computed name, invisible to a reading of call names."""
import torch
import triton
import triton.language as tl


@triton.jit
def prepare_kernel(out_ptr):
    pass


def custom_kernel(x):
    out = torch.empty_like(x)
    prepare_kernel[(1,)](out)
    return getattr(torch, "soft" + "max")(x, -1)
