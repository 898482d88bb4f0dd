"""Honest: the shape of a small project that wraps its kernel in a torch.nn.Module. Configuration kept on self, a
functools.lru_cache for launch settings, an OrderedDict of settings by width, debug printing behind a flag, str()
and repr() of dtypes in messages, getattr and hasattr with names spelt out, type(x).__name__ in an error."""
import functools
from collections import OrderedDict

import torch
import triton
import triton.language as tl

DEBUG = False


@triton.jit
def softmax_fwd(x_ptr, y_ptr, n_cols, row_stride, BLOCK: tl.constexpr):
    row = tl.program_id(axis=0)
    offsets = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * row_stride + offsets, mask=offsets < n_cols, other=float("-inf"))
    x = x.to(tl.float32)
    z = x - tl.max(x, axis=0)
    num = tl.exp(z)
    tl.store(y_ptr + row * row_stride + offsets, (num / tl.sum(num, axis=0)).to(y_ptr.dtype.element_ty),
             mask=offsets < n_cols)


@triton.jit
def softmax_fwd_looped(x_ptr, y_ptr, n_cols, row_stride, BLOCK: tl.constexpr):
    row = tl.program_id(axis=0)
    offsets = tl.arange(0, BLOCK)
    mx = tl.full([BLOCK], float("-inf"), tl.float32)
    for start in range(0, n_cols, BLOCK):
        x = tl.load(x_ptr + row * row_stride + start + offsets, mask=start + offsets < n_cols, other=float("-inf"))
        mx = tl.maximum(mx, x.to(tl.float32))
    m = tl.max(mx, axis=0)
    acc = tl.zeros([BLOCK], tl.float32)
    for start in range(0, n_cols, BLOCK):
        x = tl.load(x_ptr + row * row_stride + start + offsets, mask=start + offsets < n_cols, other=float("-inf"))
        acc += tl.exp(x.to(tl.float32) - m)
    total = tl.sum(acc, axis=0)
    for start in range(0, n_cols, BLOCK):
        x = tl.load(x_ptr + row * row_stride + start + offsets, mask=start + offsets < n_cols, other=float("-inf"))
        tl.store(y_ptr + row * row_stride + start + offsets, (tl.exp(x.to(tl.float32) - m) / total).to(
            y_ptr.dtype.element_ty), mask=start + offsets < n_cols)


SETTINGS = OrderedDict([(1024, 4), (8192, 8), (32768, 16)])


@functools.lru_cache(maxsize=None)
def launch_settings(n_cols: int):
    block = triton.next_power_of_2(n_cols)
    for width, warps in SETTINGS.items():
        if block <= width:
            return block, warps, False
    return 4096, 8, True


class TritonSoftmax(torch.nn.Module):
    def __init__(self, dim: int = -1):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not isinstance(x, torch.Tensor):
            raise TypeError("expected a tensor, got " + type(x).__name__)
        if x.dtype not in (torch.float32, torch.bfloat16, torch.float16):
            raise TypeError("unsupported dtype " + str(x.dtype) + " (" + repr(x.dtype) + ")")
        if DEBUG:
            print(f"softmax {tuple(x.shape)} {x.dtype}")
        x = x.contiguous()
        y = torch.empty_like(x)
        block, warps, looped = launch_settings(x.shape[-1])
        kernel = softmax_fwd_looped if looped else softmax_fwd
        kernel[(x.shape[0],)](x, y, x.shape[-1], x.stride(0), BLOCK=block, num_warps=warps)
        return y


_MODULE = TritonSoftmax()


def custom_kernel(x):
    assert hasattr(x, "shape") and getattr(x, "ndim") == 2
    return _MODULE(x)
