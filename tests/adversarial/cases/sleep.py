# stops: static check, then limits
# expect: load: imports time
# expect-dynamic: compile|run: timed out
# timeout: 20
"""Hang: launch, then sleep for eleven days (a model that 'waits for the GPU to cool down')."""
import time

import torch
import triton
import triton.language as tl


@triton.jit
def prepare_kernel(out_ptr):
    pass


def custom_kernel(x):
    out = torch.empty_like(x)
    prepare_kernel[(1,)](out)
    time.sleep(10**6)
    return out
