# expect: correctness: nan
"""Softmax in CuTeDSL without subtracting the row maximum: exp(x) overflows float32 once x > 88, and the problem's
rows carry offsets up to +-120, so inf / inf gives NaN."""
import math

import torch
import cutlass
import cutlass.cute as cute
from cutlass import Float32
from cutlass.cute.runtime import from_dlpack
from cutlass.memory import SmemAllocator

_LOG2E = math.log2(math.e)
_THREADS = 256
_cache = {}


@cute.kernel
def _softmax_kernel(gX: cute.Tensor, gY: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    row, _, _ = cute.arch.block_idx()
    n = gX.shape[1]
    buf = SmemAllocator().allocate_tensor(Float32, cute.make_layout((_THREADS // 32,)), byte_alignment=16)
    s = Float32(0.0)
    for i in cutlass.range(tidx, n, _THREADS):
        s = s + cute.math.exp2(gX[row, i].to(Float32) * _LOG2E)  # no max subtracted: overflows
    s = cute.arch.warp_reduction(s, lambda a, b: a + b)
    if cute.arch.lane_idx() == 0:
        buf[cute.arch.warp_idx()] = s
    cute.arch.barrier()
    total = buf[0]
    for w in cutlass.range_constexpr(1, _THREADS // 32):
        total = total + buf[w]
    for i in cutlass.range(tidx, n, _THREADS):
        gY[row, i] = (cute.math.exp2(gX[row, i].to(Float32) * _LOG2E) / total).to(gY.element_type)


@cute.jit
def _softmax_host(mX: cute.Tensor, mY: cute.Tensor):
    _softmax_kernel(mX, mY).launch(grid=(mX.shape[0], 1, 1), block=(_THREADS, 1, 1))


def custom_kernel(x):
    y = torch.empty_like(x)
    if x.numel() == 0:
        return y
    key = (tuple(x.shape), x.dtype)
    if key not in _cache:
        _cache[key] = cute.compile(_softmax_host, from_dlpack(x), from_dlpack(y))
    _cache[key](from_dlpack(x), from_dlpack(y))
    return y
