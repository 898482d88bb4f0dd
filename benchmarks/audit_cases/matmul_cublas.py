# gpu
# expect: launch audit failed: cuBLAS
"""Cheat for the launch audit: a matmul that is a cuBLAS call reached through a module stored in a name (issue 27,
class 5), with a Triton kernel launched beside it so that the compile rung has something to list."""
import torch
import triton
import triton.language as tl

functional = torch.nn.functional


@triton.jit
def prepare_kernel(c_ptr):
    pass


def custom_kernel(a, b):
    c = torch.empty((a.shape[0], b.shape[1]), dtype=a.dtype, device=a.device)
    prepare_kernel[(1,)](c)
    return functional.linear(a, b.t())
