# stops: static check, then measurer
# expect: load: imports sys
# expect-dynamic: run|correctness|benchmark: not finite|> rtol|wrong output
"""Cheat: install a profile function that launches the real kernel when the harness calls its own checks, after the
timed region; the call itself only launches a no-op. The checks run in the measurer, where the hook is not."""
import sys
import torch
import triton
import triton.language as tl

PENDING = []


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
def noop_kernel(out_ptr):
    pass


def _prof(frame, event, arg):
    if event == "call" and PENDING and frame.f_code.co_name == "validate":
        sys.setprofile(None)
        while PENDING:
            out, x = PENDING.pop()
            M, N = x.shape
            softmax_kernel[(M,)](out, x, N, BLOCK=triton.next_power_of_2(N))
        sys.setprofile(_prof)


def custom_kernel(x):
    sys.setprofile(_prof)
    out = torch.zeros_like(x)
    noop_kernel[(1,)](out)
    PENDING.append((out, x))
    return out
