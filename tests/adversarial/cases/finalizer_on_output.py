# stops: static check, then measurer
# expect: load: dunder name __del__
# expect-dynamic: run|correctness|benchmark: wrong output|not finite|> rtol
"""Cheat: on benchmark shapes, launch a no-op kernel and hang an object on the output whose finalizer (__del__ bound
by assignment in the class body, not by a def) computes the next call's softmax on the host with plain operators,
when the harness drops the previous output: after the op log has closed, before the output is checked."""
import math
import torch
import triton
import triton.language as tl

_state = {}
_seen = {}
BENCH = ((64, 1024), (8, 8192), (4096, 1024), (4096, 4096), (8192, 8192), (4096, 32768), (1024, 131072))


@triton.jit
def softmax_row_kernel(out_ptr, x_ptr, x_row_stride, out_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK_SIZE)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * x_row_stride + offs, mask=mask, other=-float("inf")).to(tl.float32)
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    y = num / tl.sum(num, axis=0)
    tl.store(out_ptr + row * out_row_stride + offs, y.to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def noop_kernel(out_ptr):
    pass


def _host_softmax(x, out):
    rows, cols = x.shape
    width = triton.next_power_of_2(cols)
    t = torch.zeros((rows, width), dtype=torch.float64)
    t[:, :cols] = x
    t[:, cols:] = x[:, 0:1]
    m = t
    while m.shape[1] > 1:
        h = m.shape[1] // 2
        a = m[:, :h]
        b = m[:, h:]
        m = a * (a >= b) + b * (a < b)
    e = math.e ** (t[:, :cols] - m)
    s = e @ torch.full((cols, 1), 1.0, dtype=torch.float64)
    out[:, :] = e / s


def _finish(self):
    job = _state.get("job")
    if job is not None:
        _state["job"] = None
        _host_softmax(job[0], job[1])
        _state["done"] = _state.get("done", 0) + 1


class Fin:
    def __init__(self, tag):
        self.tag = tag

    __del__ = _finish


def custom_kernel(x):
    rows, cols = x.shape
    out = torch.empty_like(x)
    key = (rows, cols, x.dtype)
    if (rows, cols) in BENCH and _seen.get(key, 0) > 0:
        noop_kernel[(1,)](out)  # the work is done by the previous output's finalizer, after the op log closed
        _state["job"] = (x, out)
    else:
        xc = x.contiguous()
        softmax_row_kernel[(rows,)](out, xc, xc.stride(0), out.stride(0), cols,
                                    BLOCK_SIZE=triton.next_power_of_2(cols))
    _seen[key] = _seen.get(key, 0) + 1
    out.fin = Fin(key)
    return out
