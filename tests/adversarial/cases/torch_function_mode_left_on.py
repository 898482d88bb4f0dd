# stops: static check, then window
# expect: load: torch._c|torch.overrides|library internals
# expect-dynamic: ok
# expect-dynamic-gpu: ok or run|correctness|benchmark: wrong output|not finite|> rtol
"""Cheat: enter a TorchFunctionMode and never leave it, so every torch call the harness makes afterwards runs through
candidate code; the mode fills a lazily returned output the first time the harness touches it. Only the runner's own
code runs through it, before the output reaches the measurer, so the work is done and timed inside the window: the
trick earns the library's honest speed."""
import torch
import triton
import triton.language as tl
from torch.overrides import TorchFunctionMode

BENCH = {(64, 1024), (8, 8192), (4096, 1024), (4096, 4096), (8192, 8192), (4096, 32768), (1024, 131072)}
PENDING = {}


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


class Lazy(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if PENDING:
            for a in args:
                if isinstance(a, torch.Tensor):
                    job = PENDING.pop(a.data_ptr(), None)
                    if job is not None:
                        out, x = job
                        with torch._C.DisableTorchFunction():
                            out.copy_(torch.softmax(x.float(), -1).to(out.dtype))
        return func(*args, **kwargs)


MODE = []


def custom_kernel(x):
    if not MODE:
        m = Lazy()
        m.__enter__()
        MODE.append(m)
    out = torch.zeros_like(x)
    noop_kernel[(1,)](out)
    PENDING[out.data_ptr()] = (out, x)
    return out
