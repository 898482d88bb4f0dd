# expect: correctness: mismatch
"""Softmax in CuTeDSL (the two-pass kernel) whose writing loops stop one item short: the last vector or column of
every row stays zero."""
import math

import torch
import cutlass
import cutlass.cute as cute
from cutlass import Float32, Int32
from cutlass.cute.runtime import from_dlpack
from cutlass.memory import SmemAllocator

_LOG2E = math.log2(math.e)
_NEG_BIG = -3.4028234663852886e38  # -FLT_MAX: finite, avoids (-inf) - (-inf) = NaN

KNOBS = {"ITEMS_PER_THREAD": 8, "MAX_THREADS": 1024, "UNROLL": 4}
KNOB_SPACE = {"ITEMS_PER_THREAD": [2, 4, 8, 16, 32], "MAX_THREADS": [256, 512, 1024], "UNROLL": [1, 2, 4, 8]}

_cache = {}


def _num_threads(n: int) -> int:
    # n = number of loop items (elements or vectors): 128 threads and more, doubling while each has over the knob's
    t = 128
    while t < KNOBS["MAX_THREADS"] and t * KNOBS["ITEMS_PER_THREAD"] < n:
        t *= 2
    return t


@cute.jit
def _block_allreduce_max(val: Float32, buf: cute.Tensor, num_warps: cutlass.Constexpr[int]) -> Float32:
    lane = cute.arch.lane_idx()
    warp = cute.arch.warp_idx()
    val = cute.arch.warp_reduction(val, cute.arch.fmax)
    if lane == 0:
        buf[warp] = val
    cute.arch.barrier()
    res = buf[0]
    for w in cutlass.range_constexpr(1, num_warps):
        res = cute.arch.fmax(res, buf[w])
    return res


@cute.jit
def _block_allreduce_sum(val: Float32, buf: cute.Tensor, num_warps: cutlass.Constexpr[int]) -> Float32:
    lane = cute.arch.lane_idx()
    warp = cute.arch.warp_idx()
    val = cute.arch.warp_reduction(val, lambda a, b: a + b)
    if lane == 0:
        buf[warp] = val
    cute.arch.barrier()
    res = buf[0]
    for w in cutlass.range_constexpr(1, num_warps):
        res = res + buf[w]
    return res


@cute.kernel
def _softmax_kernel(
    gX: cute.Tensor, gY: cute.Tensor, num_threads: cutlass.Constexpr[int], vec: cutlass.Constexpr[int],
    unroll: cutlass.Constexpr[int],
):
    tidx, _, _ = cute.arch.thread_idx()
    row, _, _ = cute.arch.block_idx()
    n = gX.shape[1]
    num_warps = num_threads // 32

    smem = SmemAllocator()
    buf_max = smem.allocate_tensor(Float32, cute.make_layout((num_warps,)), byte_alignment=16)
    buf_sum = smem.allocate_tensor(Float32, cute.make_layout((num_warps,)), byte_alignment=16)

    m = Float32(_NEG_BIG)
    s = Float32(0.0)
    if cutlass.const_expr(vec > 1):
        # ---- vectorized path: N % vec == 0, rows 16B aligned ----
        tX = cute.zipped_divide(gX[row, None], (vec,))  # ((vec), (N/vec))
        tY = cute.zipped_divide(gY[row, None], (vec,))
        nv = n // vec
        for j in cutlass.range(tidx, nv, num_threads, unroll=unroll):
            v = tX[(None, j)].load().to(Float32)
            mc = v.reduce(cute.ReductionOp.MAX, _NEG_BIG, 0)
            m_new = cute.arch.fmax(m, mc)
            e = cute.math.exp2((v - m_new) * _LOG2E, fastmath=True)
            s = s * cute.math.exp2((m - m_new) * _LOG2E, fastmath=True) + e.reduce(
                cute.ReductionOp.ADD, Float32(0.0), 0
            )
            m = m_new
        row_max = _block_allreduce_max(m, buf_max, num_warps)
        s = s * cute.math.exp2((m - row_max) * _LOG2E, fastmath=True)
        row_sum = _block_allreduce_sum(s, buf_sum, num_warps)
        inv_sum = Float32(1.0) / row_sum
        for j in cutlass.range(tidx, nv - 1, num_threads, unroll=unroll):
            v = tX[(None, j)].load().to(Float32)
            y = cute.math.exp2((v - row_max) * _LOG2E, fastmath=True) * inv_sum
            tY[(None, j)].store(y.to(gY.element_type))
    else:
        # ---- scalar path: any N ----
        for i in cutlass.range(tidx, n, num_threads):
            v = gX[row, i].to(Float32)
            m_new = cute.arch.fmax(m, v)
            s = s * cute.math.exp2((m - m_new) * _LOG2E, fastmath=True) + cute.math.exp2(
                (v - m_new) * _LOG2E, fastmath=True
            )
            m = m_new
        row_max = _block_allreduce_max(m, buf_max, num_warps)
        s = s * cute.math.exp2((m - row_max) * _LOG2E, fastmath=True)
        row_sum = _block_allreduce_sum(s, buf_sum, num_warps)
        inv_sum = Float32(1.0) / row_sum
        for i in cutlass.range(tidx, n - 1, num_threads):
            v = gX[row, i].to(Float32)
            y = cute.math.exp2((v - row_max) * _LOG2E, fastmath=True) * inv_sum
            gY[row, i] = y.to(gY.element_type)


@cute.jit
def _softmax_host(
    mX: cute.Tensor,
    mY: cute.Tensor,
    num_threads: cutlass.Constexpr[int],
    vec: cutlass.Constexpr[int],
    unroll: cutlass.Constexpr[int],
):
    m = mX.shape[0]
    _softmax_kernel(mX, mY, num_threads, vec, unroll).launch(
        grid=(m, 1, 1), block=(num_threads, 1, 1)
    )


def _pick_vec(n, dtype, *tensors):
    """Elements per 16-byte vector if N and all base pointers allow it, else 1."""
    es = torch.empty((), dtype=dtype).element_size()
    v = 16 // es
    if n % v == 0 and all(t.data_ptr() % 16 == 0 for t in tensors):
        return v
    return 1


def _wrap(t, vec):
    return from_dlpack(t, assumed_align=16) if vec > 1 else from_dlpack(t)


def _compiled(shape, dtype, x=None, y=None, options=None, vec=None):
    """Return (cached) compiled function for this (shape, dtype, vec).

    x/y are example tensors (any device); when absent, CPU tensors are made.
    """
    if x is None:
        x = torch.empty(shape, dtype=dtype)
    if y is None:
        y = torch.zeros_like(x)  # the columns never written stay zero
    if vec is None:
        vec = _pick_vec(shape[1], dtype, x, y)
    key = (tuple(shape), dtype, vec, options)
    fn = _cache.get(key)
    if fn is None:
        nt = _num_threads(shape[1] // vec)
        kw = {} if options is None else {"options": options}
        fn = cute.compile(_softmax_host, _wrap(x, vec), _wrap(y, vec), nt, vec, KNOBS["UNROLL"], **kw)
        _cache[key] = fn
    return fn


def custom_kernel(*inputs):
    x = inputs[0]
    if isinstance(x, (tuple, list)):
        x = x[0]
    assert x.dim() == 2
    x = x.contiguous()
    y = torch.zeros_like(x)  # the columns never written stay zero
    if x.shape[0] == 0 or x.shape[1] == 0:
        return y
    vec = _pick_vec(x.shape[1], x.dtype, x, y)
    fn = _compiled(tuple(x.shape), x.dtype, x, y, vec=vec)
    fn(_wrap(x, vec), _wrap(y, vec))
    return y
