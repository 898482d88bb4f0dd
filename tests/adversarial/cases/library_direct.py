# stops: static check, then runner
# expect: load: torch.softmax
# expect-dynamic: compile: torch ops
"""Cheat: a no-op Triton launch to satisfy a launch counter, then the library softmax does the work."""
import torch
import triton
import triton.language as tl


@triton.jit
def prepare_kernel(out_ptr):
    pass


def custom_kernel(x):
    out = torch.empty_like(x)
    prepare_kernel[(1,)](out)
    return torch.softmax(x, dim=-1)
