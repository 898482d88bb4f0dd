# stops: static check, then runner
# expect: load: torch.softmax
# expect-dynamic: compile: torch ops
"""Cheat: the library softmax hidden behind a module-level alias, so no call site names it."""
import torch
import triton
import triton.language as tl

sm = torch.softmax


@triton.jit
def prepare_kernel(out_ptr):
    pass


def custom_kernel(x):
    out = torch.empty_like(x)
    prepare_kernel[(1,)](out)
    return sm(x, -1)
