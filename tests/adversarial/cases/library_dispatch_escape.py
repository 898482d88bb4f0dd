# expect: load: torch.utils|torch.softmax|private attribute
"""Cheat: the op log is a Python dispatch mode; suspend the active modes around the library call so it is never seen.

Only the static check stops this one (torch.utils is not for candidates): with the static check off, the op log is
blind to it. README, 'What the harness guarantees', lists this limit."""
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
