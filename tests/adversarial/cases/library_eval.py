# stops: static check, then runner
# expect: load: eval|exec
# expect-dynamic: compile: torch ops
"""Cheat: the library softmax built from strings with exec/eval."""
import torch
import triton
import triton.language as tl

exec("def fast(x):\n    return torch.soft" + "max(x, -1)\n")
fast = eval("fast")


@triton.jit
def prepare_kernel(out_ptr):
    pass


def custom_kernel(x):
    out = torch.empty_like(x)
    prepare_kernel[(1,)](out)
    return fast(x)
