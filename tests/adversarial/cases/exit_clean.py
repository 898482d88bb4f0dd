# stops: static check, then limits
# expect: load: imports os
# expect-dynamic: compile|run: exited (code 0) before a verdict
"""Cheat: launch, then leave the process with status 0 before any check can fail, hoping 'exit 0' reads as a pass."""
import os

import torch
import triton
import triton.language as tl


@triton.jit
def prepare_kernel(out_ptr):
    pass


def custom_kernel(x):
    out = torch.empty_like(x)
    prepare_kernel[(1,)](out)
    os._exit(0)
