# stops: static check, then runner
# expect: load: importlib
# expect-dynamic: compile: torch ops
"""Cheat: torch.nn.functional imported by a string, then its softmax does the work."""
import importlib

import torch
import triton
import triton.language as tl

F = importlib.import_module("torch.nn." + "functional")


@triton.jit
def prepare_kernel(out_ptr):
    pass


def custom_kernel(x):
    out = torch.empty_like(x)
    prepare_kernel[(1,)](out)
    return F.softmax(x, dim=-1)
