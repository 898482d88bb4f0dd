# stops: runner
# expect: compile: no triton kernel
"""Cheat: no kernel and no compute op at all: fill the output with the uniform distribution (allocation and fills are
allowed host ops), which is wrong, but would look like a result if nobody asked whether a kernel ran."""
import torch


def custom_kernel(x):
    return torch.full_like(x, 1.0 / x.shape[-1])
