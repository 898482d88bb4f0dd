# stops: limits
# expect: load|compile|run: more than 2 gb of host memory
# max-memory: 2
"""Resource exhaustion: 32 GiB of host memory in 256 MiB pieces (torch.full is an allowed allocation, and filled
pages are resident), enough to take the machine down with it; the memory watchdog must kill the child at the limit.
(One 32 GiB request would fail at once with ENOMEM on a small machine, a plain exception, not this test.)"""
import torch
import triton
import triton.language as tl


@triton.jit
def prepare_kernel(out_ptr):
    pass


def custom_kernel(x):
    scratch = [torch.full((1 << 26,), 1.0) for _ in range(128)]
    out = torch.empty_like(x)
    prepare_kernel[(1,)](out)
    return out
