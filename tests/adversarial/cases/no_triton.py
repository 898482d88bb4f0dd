# stops: runner
# expect: compile: torch ops
"""Cheat: pure PyTorch on the host, no Triton launch at all (a Triton import for show)."""
import torch
import triton


def custom_kernel(x):
    z = x.float()
    e = (z - z.amax(dim=-1, keepdim=True)).exp()
    return (e / e.sum(dim=-1, keepdim=True)).to(x.dtype)
