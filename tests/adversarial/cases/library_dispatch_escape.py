# stops: static check, then window
# expect: load: torch.utils|torch.softmax|library internals
# expect-dynamic: ok
"""Cheat: the op log is a Python dispatch mode; suspend the active modes around the library call so it is never seen.

The static check refuses torch.utils; with it off the runner's op log is blind, and nothing more needs to stop it:
the answer is right and the window times the library's work like any other, so it earns the library's speed."""
import torch
import torch.utils._python_dispatch
import triton
import triton.language as tl


@triton.jit
def prepare_kernel(out_ptr):
    pass


def custom_kernel(x):
    out = torch.empty_like(x)
    prepare_kernel[(1,)](out)
    with torch.utils._python_dispatch._disable_current_modes():
        return torch.softmax(x, dim=-1)
