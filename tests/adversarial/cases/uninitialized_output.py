# stops: measurer
# expect: run|correctness: not finite|> rtol
"""Cheat: launch a kernel that does nothing and return the uninitialised output; on a naive harness the allocator
hands back memory that still holds an earlier (reference or previous) result of the same size."""
import torch
import triton
import triton.language as tl


@triton.jit
def prepare_kernel(out_ptr):
    pass


def custom_kernel(x):
    out = torch.empty_like(x)
    prepare_kernel[(1,)](out)
    return out
