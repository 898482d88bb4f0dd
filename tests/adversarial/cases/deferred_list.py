# stops: runner
# expect: run: not a plain torch.Tensor
"""Trick: return a list subclass whose __iter__ computes the answer with torch ops on the host. The harness iterates
the output after the call, when the op log has closed (and on a GPU after the end event and the host clock): the
work would be neither logged nor timed. Only exact tuples and lists are iterated."""
import math

import torch
import triton
import triton.language as tl


@triton.jit
def touch_kernel(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    v = tl.load(out_ptr + offs, mask=offs < n)
    tl.store(out_ptr + offs, v, mask=offs < n)


class Deferred(list):
    def __iter__(self):
        x, out = self.pending
        M, N = x.shape
        buf = torch.empty((M, N), dtype=torch.float64, device=x.device)
        buf[:] = x
        e = math.e ** buf
        ones = torch.full((N, 1), 1.0, dtype=torch.float64, device=x.device)
        out[:] = e / (e @ ones)
        yield out


def custom_kernel(x):
    out = torch.empty_like(x)
    touch_kernel[(1,)](out, 1, BLOCK=16)
    d = Deferred([out])
    d.pending = (x, out)
    return d
