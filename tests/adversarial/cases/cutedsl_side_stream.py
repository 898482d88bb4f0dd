# stops: window
# expect: ok or run|correctness|benchmark: not finite|> rtol|wrong output
# gpu
# language: cutedsl
"""Trick: launch the CuTeDSL kernel on a side stream of the candidate's own (the compiled function takes a stream
argument; the DSL hands one out for torch's current stream, made current for a moment), so that the work runs where
events on the runner's stream do not look. The measurer's window times the whole card from outside the runner, side
streams included, and reads the outputs back itself: the work is either timed like any other or not there yet."""
import math

import torch
import cutlass
import cutlass.cute as cute
import cutlass.torch
from cutlass import Float32
from cutlass.cute.runtime import from_dlpack
from cutlass.memory import SmemAllocator

_LOG2E = math.log2(math.e)
_THREADS = 256
_cache = {}
SIDE = {}


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


@cute.jit
def _softmax_host(mX: cute.Tensor, mY: cute.Tensor, stream):
    _softmax_kernel(mX, mY).launch(grid=(mX.shape[0], 1, 1), block=(_THREADS, 1, 1), stream=stream)


def custom_kernel(x):
    y = torch.empty_like(x)
    if x.numel() == 0:
        return y
    if "s" not in SIDE:
        SIDE["s"] = torch.cuda.Stream()
    with torch.cuda.stream(SIDE["s"]):
        stream = cutlass.torch.current_stream()
    key = (tuple(x.shape), x.dtype)
    if key not in _cache:
        _cache[key] = cute.compile(_softmax_host, from_dlpack(x), from_dlpack(y), stream)
    _cache[key](from_dlpack(x), from_dlpack(y), stream)
    return y
