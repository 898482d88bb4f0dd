# stops: static check, then runner
# expect: load: getattr|dunder
# expect-dynamic: run: not a plain torch.Tensor
"""Cheat: return a proxy that launches the real kernel only when the harness first touches the result (so a timed
region around the call sees a no-op launch), then delegates every attribute to the real output."""
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


class Lazy:
    def __init__(self, x):
        self.x = x.contiguous()
        self.out = None

    def __getattr__(self, name):
        if self.out is None:
            self.out = torch.empty_like(self.x)
            n = self.x.shape[1]
            softmax_kernel[(self.x.shape[0],)](self.out, self.x, n, BLOCK=triton.next_power_of_2(n),
                                               num_warps=16 if n > 8192 else 4)
        return getattr(self.out, name)


def custom_kernel(x):
    prepare_kernel[(1,)](x)
    return Lazy(x)
