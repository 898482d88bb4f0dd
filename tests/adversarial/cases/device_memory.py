# stops: limits
# expect: compile|run: out of memory
# gpu
"""Resource exhaustion: 400 GB asked of the GPU (a 'workspace' sized by a bug); it must fail as an out-of-memory
error of this candidate, not a dead process or a poisoned device for the next one."""
import torch
import triton
import triton.language as tl


@triton.jit
def prepare_kernel(out_ptr):
    pass


def custom_kernel(x):
    workspace = torch.full((100_000_000_000,), 1.0, device=x.device)
    out = torch.empty_like(x)
    prepare_kernel[(1,)](workspace)
    return out
