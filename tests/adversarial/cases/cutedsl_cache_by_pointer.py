# stops: measurer
# expect: correctness|benchmark: > rtol|wrong output
# gpu
# language: cutedsl
"""Cheat: a CuTeDSL softmax whose outputs are cached by the input's address, a tiny kernel launched on a hit so a
kernel still runs: a timing loop that reuses one input buffer would measure a dictionary lookup. Fresh, distinct
inputs in every call, each output read back and checked, catch it."""
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
OUTPUTS = {}


@cute.jit
def _block_max(val: Float32, buf: cute.Tensor) -> Float32:
    lane, warp = cute.arch.lane_idx(), cute.arch.warp_idx()  # before any branch: warp_idx shuffles the warp
    val = cute.arch.warp_reduction(val, cute.arch.fmax)
    if lane == 0:
        buf[warp] = val
    cute.arch.barrier()
    total = buf[0]
    for w in cutlass.range_constexpr(1, _THREADS // 32):
        total = cute.arch.fmax(total, buf[w])
    return total


@cute.jit
def _block_sum(val: Float32, buf: cute.Tensor) -> Float32:
    lane, warp = cute.arch.lane_idx(), cute.arch.warp_idx()  # before any branch: warp_idx shuffles the warp
    val = cute.arch.warp_reduction(val, lambda a, b: a + b)
    if lane == 0:
        buf[warp] = val
    cute.arch.barrier()
    total = buf[0]
    for w in cutlass.range_constexpr(1, _THREADS // 32):
        total = total + buf[w]
    return total


@cute.kernel
def _softmax_kernel(gX: cute.Tensor, gY: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    row, _, _ = cute.arch.block_idx()
    n = gX.shape[1]
    smem = SmemAllocator()
    buf_max = smem.allocate_tensor(Float32, cute.make_layout((_THREADS // 32,)), byte_alignment=16)
    buf_sum = smem.allocate_tensor(Float32, cute.make_layout((_THREADS // 32,)), byte_alignment=16)
    m = Float32(-3.4028234663852886e38)
    for i in cutlass.range(tidx, n, _THREADS):
        m = cute.arch.fmax(m, gX[row, i].to(Float32))
    m = _block_max(m, buf_max)
    s = Float32(0.0)
    for i in cutlass.range(tidx, n, _THREADS):
        s = s + cute.math.exp2((gX[row, i].to(Float32) - m) * _LOG2E)
    s = _block_sum(s, buf_sum)
    for i in cutlass.range(tidx, n, _THREADS):
        gY[row, i] = (cute.math.exp2((gX[row, i].to(Float32) - m) * _LOG2E) / s).to(gY.element_type)


@cute.kernel
def _touch_kernel(gY: cute.Tensor):
    pass


@cute.jit
def _softmax_host(mX: cute.Tensor, mY: cute.Tensor):
    _softmax_kernel(mX, mY).launch(grid=(mX.shape[0], 1, 1), block=(_THREADS, 1, 1))


@cute.jit
def _touch(mY: cute.Tensor):
    _touch_kernel(mY).launch(grid=(1, 1, 1), block=(32, 1, 1))


def custom_kernel(x):
    key = (x.data_ptr(), tuple(x.shape), x.dtype)
    if key in OUTPUTS:
        y = OUTPUTS[key]
        if ("touch", y.shape, y.dtype) not in _cache:
            _cache[("touch", y.shape, y.dtype)] = cute.compile(_touch, from_dlpack(y))
        _cache[("touch", y.shape, y.dtype)](from_dlpack(y))
        return y
    y = torch.empty_like(x)
    if x.numel() == 0:
        return y
    if key[1:] not in _cache:
        _cache[key[1:]] = cute.compile(_softmax_host, from_dlpack(x), from_dlpack(y))
    _cache[key[1:]](from_dlpack(x), from_dlpack(y))
    OUTPUTS[key] = y
    return y
