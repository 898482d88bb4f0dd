# expect: compile|run: more than 2 gb of host memory
# max-memory: 2
"""Resource exhaustion: a 32 GiB host allocation (torch.full is an allowed allocation), which would take the machine
down with it; the memory watchdog must kill the child at the limit."""
import torch
import triton
import triton.language as tl


@triton.jit
def prepare_kernel(out_ptr):
    pass


def custom_kernel(x):
    scratch = torch.full((1 << 33,), 1.0)
    out = torch.empty_like(x)
    prepare_kernel[(1,)](out)
    return out
