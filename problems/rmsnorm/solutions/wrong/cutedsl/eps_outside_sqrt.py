# expect: correctness: max_rel
"""RMSNorm in CuTeDSL (the seed's kernel) with eps added outside the square root: y = x / (sqrt(mean(x^2)) + eps) *
w, which is far off wherever the mean square is near eps."""
import torch
import cutlass
import cutlass.cute as cute
from cutlass import Float32
from cutlass.cute.runtime import from_dlpack
from cutlass.memory import SmemAllocator

_cache = {}


def _num_threads(n: int) -> int:
    # n = loop items (elements or vectors); aim for ~8 per thread, 128..1024 threads
    t = 128
    while t < 1024 and t * 8 < n:
        t *= 2
    return t


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
def _rmsnorm_kernel(
    gX: cute.Tensor,
    gW: cute.Tensor,
    gY: cute.Tensor,
    eps: Float32,
    num_threads: cutlass.Constexpr[int],
    vec: cutlass.Constexpr[int],
):
    tidx, _, _ = cute.arch.thread_idx()
    row, _, _ = cute.arch.block_idx()
    n = gX.shape[1]
    num_warps = num_threads // 32

    smem = SmemAllocator()
    buf = smem.allocate_tensor(Float32, cute.make_layout((num_warps,)), byte_alignment=16)

    ss = Float32(0.0)
    if cutlass.const_expr(vec > 1):
        tX = cute.zipped_divide(gX[row, None], (vec,))  # ((vec), (N/vec))
        tY = cute.zipped_divide(gY[row, None], (vec,))
        tW = cute.zipped_divide(gW, (vec,))
        nv = n // vec
        for j in cutlass.range(tidx, nv, num_threads, unroll=4):
            v = tX[(None, j)].load().to(Float32)
            ss = ss + (v * v).reduce(cute.ReductionOp.ADD, Float32(0.0), 0)
        total = _block_allreduce_sum(ss, buf, num_warps)
        rstd = Float32(1.0) / (cute.math.sqrt(total / Float32(n)) + eps)
        for j in cutlass.range(tidx, nv, num_threads, unroll=4):
            v = tX[(None, j)].load().to(Float32)
            w = tW[(None, j)].load().to(Float32)
            tY[(None, j)].store((v * rstd * w).to(gY.element_type))
    else:
        for i in cutlass.range(tidx, n, num_threads):
            v = gX[row, i].to(Float32)
            ss = ss + v * v
        total = _block_allreduce_sum(ss, buf, num_warps)
        rstd = Float32(1.0) / (cute.math.sqrt(total / Float32(n)) + eps)
        for i in cutlass.range(tidx, n, num_threads):
            v = gX[row, i].to(Float32)
            w = gW[i].to(Float32)
            gY[row, i] = (v * rstd * w).to(gY.element_type)


@cute.jit
def _rmsnorm_host(
    mX: cute.Tensor,
    mW: cute.Tensor,
    mY: cute.Tensor,
    eps: Float32,
    num_threads: cutlass.Constexpr[int],
    vec: cutlass.Constexpr[int],
):
    m = mX.shape[0]
    _rmsnorm_kernel(mX, mW, mY, eps, num_threads, vec).launch(
        grid=(m, 1, 1), block=(num_threads, 1, 1)
    )


def _pick_vec(n, dtype, *tensors):
    es = torch.empty((), dtype=dtype).element_size()
    v = 16 // es
    if n % v == 0 and all(t.data_ptr() % 16 == 0 for t in tensors):
        return v
    return 1


def _wrap(t, vec):
    return from_dlpack(t, assumed_align=16) if vec > 1 else from_dlpack(t)


def _compiled(shape, dtype, x=None, w=None, y=None, options=None, vec=None, w_dtype=None):
    """Cached compiled function for (shape, dtype, w dtype, vec)."""
    if x is None:
        x = torch.empty(shape, dtype=dtype)
    if w is None:
        w = torch.empty(shape[1], dtype=w_dtype or dtype)
    if y is None:
        y = torch.empty_like(x)
    if vec is None:
        vec = _pick_vec(shape[1], dtype, x, w, y)
    key = (tuple(shape), dtype, w.dtype, vec, options)
    fn = _cache.get(key)
    if fn is None:
        nt = _num_threads(shape[1] // vec)
        kw = {} if options is None else {"options": options}
        fn = cute.compile(
            _rmsnorm_host, _wrap(x, vec), _wrap(w, vec), _wrap(y, vec), Float32(1e-6), nt, vec, **kw
        )
        _cache[key] = fn
    return fn


def custom_kernel(*inputs):
    if len(inputs) == 1 and isinstance(inputs[0], (tuple, list)):
        inputs = tuple(inputs[0])
    x, w = inputs[0], inputs[1]
    eps = float(inputs[2]) if len(inputs) > 2 else 1e-6
    assert x.dim() == 2 and w.dim() == 1 and w.shape[0] == x.shape[1]
    x = x.contiguous()
    w = w.contiguous()
    y = torch.empty_like(x)
    if x.shape[0] == 0 or x.shape[1] == 0:
        return y
    vec = _pick_vec(x.shape[1], x.dtype, x, w, y)
    fn = _compiled(tuple(x.shape), x.dtype, x, w, y, vec=vec)
    fn(_wrap(x, vec), _wrap(w, vec), _wrap(y, vec), Float32(eps))
    return y
