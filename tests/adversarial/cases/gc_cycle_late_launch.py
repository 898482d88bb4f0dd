# stops: measurer
# expect: run|correctness|benchmark: wrong output|not finite|> rtol
"""Cheat: on benchmark shapes, launch a no-op and leave the real launch in the finally block of a generator inside an
unreachable reference cycle, to run whenever the garbage collector next runs: after the timed region, inside the
harness's checks if the collector happens to run there."""
import torch
import triton
import triton.language as tl

BENCH = {(64, 1024), (8, 8192), (4096, 1024), (4096, 4096), (8192, 8192), (4096, 32768), (1024, 131072)}


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


class Box:
    pass


def _real(out, x):
    m, n = x.shape
    softmax_kernel[(m,)](out, x, n, BLOCK=triton.next_power_of_2(n))


def _later(out, x, flag):
    try:
        yield 0
    finally:
        if out is not None:
            _real(out, x)
        flag.append(1)


def _cycle(out, x, flag):
    b = Box()
    g = _later(out, x, flag)
    next(g)
    b.g = g
    b.me = b


def custom_kernel(x):
    out = torch.empty_like(x)
    if tuple(x.shape) not in BENCH:
        _real(out, x)
        return out
    noop_kernel[(1,)](out)
    _cycle(out, x, [])
    return out
