# stops: static check, then measurer
# expect: load: assigns into torch
# expect-dynamic: run|correctness: not finite|> rtol
"""Cheat: every comparison passes; the output is garbage from a no-op launch."""
import torch
import torch.testing
import triton
import triton.language as tl

torch.allclose = lambda *args, **kwargs: True
torch.testing.assert_close = lambda *args, **kwargs: None


@triton.jit
def prepare_kernel(out_ptr):
    pass


def custom_kernel(x):
    out = torch.empty_like(x)
    prepare_kernel[(1,)](out)
    return out
