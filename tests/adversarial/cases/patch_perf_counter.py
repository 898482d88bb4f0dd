# stops: static check, then measurer
# expect: load: imports time
# expect-dynamic: run|correctness: not finite|> rtol
"""Cheat: a host clock that advances one nanosecond per reading, so any host-timed call looks instant."""
import time

import torch
import triton
import triton.language as tl

TICKS = [0]


def fake_clock():
    TICKS[0] += 1
    return TICKS[0] * 1e-9


time.perf_counter = fake_clock
time.perf_counter_ns = lambda: TICKS[0]


@triton.jit
def prepare_kernel(out_ptr):
    pass


def custom_kernel(x):
    out = torch.empty_like(x)
    prepare_kernel[(1,)](out)
    return out
