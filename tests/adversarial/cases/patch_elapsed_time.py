# stops: static check, then measurer
# expect: load: assigns into torch
# expect-dynamic: run|correctness: not finite|> rtol
"""Cheat: every CUDA event interval reads as one microsecond; the kernel returns garbage quickly."""
import torch
import triton
import triton.language as tl

torch.cuda.Event.elapsed_time = lambda self, end_event: 0.001


@triton.jit
def prepare_kernel(out_ptr):
    pass


def custom_kernel(x):
    out = torch.empty_like(x)
    prepare_kernel[(1,)](out)
    return out
