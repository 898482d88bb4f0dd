# stops: static check, then none
# expect: load: imports gc
# expect-dynamic: ok
"""Cheat: switch the garbage collector back on inside the call, so that a collection during the harness's checks can
run a finalizer kept in a reference cycle (see gc_cycle_late_launch). The checks run in the measurer, so the trick
gains nothing and the honest kernel behind it passes."""
import gc

import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(out_ptr, x_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=-float("inf")).to(tl.float32)
    num = tl.exp(x - tl.max(x, axis=0))
    y = num / tl.sum(num, axis=0)
    tl.store(out_ptr + row * n_cols + offs, y.to(out_ptr.dtype.element_ty), mask=mask)


def custom_kernel(x):
    gc.enable()
    x = x.contiguous()
    out = torch.empty_like(x)
    softmax_kernel[(x.shape[0],)](out, x, x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]))
    return out
