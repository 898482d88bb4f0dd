# stops: static check, then measurer
# expect: load: imports threading
# expect-dynamic: run|correctness|benchmark: not finite|> rtol|wrong output
"""Cheat: a no-op launch on the calling thread, the real kernel launched from a thread that outlives the call, so a
timer around the call measures nothing (and the result is usually there by the time anyone looks)."""
import threading

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


@triton.jit
def prepare_kernel(out_ptr):
    pass


def custom_kernel(x):
    x = x.contiguous()
    out = torch.empty_like(x)
    prepare_kernel[(1,)](out)
    n = x.shape[1]
    work = lambda: softmax_kernel[(x.shape[0],)](out, x, n, BLOCK=triton.next_power_of_2(n),
                                                 num_warps=16 if n > 8192 else 4)
    threading.Thread(target=work, daemon=True).start()
    return out
