# expect: correctness: max_rel
"""RMSNorm in TileLang (the seed's kernel) with eps added outside the square root: y = x / (sqrt(mean(x^2)) + eps) *
w, which is far off wherever the mean square is near eps."""
import torch
import tilelang
import tilelang.language as T

KNOBS = {"BLOCK": 2048, "THREADS": 256}
KNOB_SPACE = {"BLOCK": [512, 1024, 2048, 4096], "THREADS": [128, 256, 512]}
EPS = 1e-6

_cache = {}


def _rmsnorm(M: int, N: int, dtype: str, BLOCK: int, THREADS: int):
    steps = (N + BLOCK - 1) // BLOCK

    @T.prim_func
    def rmsnorm_rows(X: T.Tensor((M, N), dtype), W: T.Tensor((N,), dtype), Y: T.Tensor((M, N), dtype)):
        with T.Kernel(M, threads=THREADS) as row:
            squares = T.alloc_fragment((BLOCK,), "float32")
            chunk_sum = T.alloc_fragment((1,), "float32")
            total = T.alloc_fragment((1,), "float32")
            T.fill(total, 0.0)
            for k in T.serial(steps):
                for i in T.Parallel(BLOCK):
                    squares[i] = T.if_then_else(k * BLOCK + i < N, T.cast(X[row, k * BLOCK + i], "float32"), 0.0)
                    squares[i] = squares[i] * squares[i]
                T.reduce_sum(squares, chunk_sum, dim=0)
                total[0] = total[0] + chunk_sum[0]
            rstd = 1.0 / (T.sqrt(total[0] / N) + EPS)
            for k in T.serial(steps):
                for i in T.Parallel(BLOCK):
                    if k * BLOCK + i < N:
                        Y[row, k * BLOCK + i] = T.cast(
                            T.cast(X[row, k * BLOCK + i], "float32") * rstd * T.cast(W[k * BLOCK + i], "float32"),
                            dtype)

    return rmsnorm_rows


def _compiled(M: int, N: int, dtype: str):
    block = min(KNOBS["BLOCK"], max(32, 1 << (N - 1).bit_length()))  # no longer than the row needs
    key = (M, N, dtype, block, KNOBS["THREADS"])
    if key not in _cache:
        _cache[key] = tilelang.compile(_rmsnorm(M, N, dtype, block, KNOBS["THREADS"]))
    return _cache[key]


def custom_kernel(*inputs):
    if len(inputs) == 1 and isinstance(inputs[0], (tuple, list)):
        inputs = tuple(inputs[0])
    x, w = inputs[0].contiguous(), inputs[1].contiguous()
    y = torch.empty_like(x)
    if x.numel() == 0:
        return y
    _compiled(x.shape[0], x.shape[1], str(x.dtype).removeprefix("torch."))(x, w, y)  # "float32", "bfloat16"
    return y
