# stops: measurer
# expect: correctness|benchmark: > rtol|wrong output
# gpu
# language: tilelang
"""Cheat: a TileLang softmax whose outputs are cached by the input's address, a tiny kernel launched on a hit so a
kernel still runs: a timing loop that reuses one input buffer would measure a dictionary lookup. Fresh, distinct
inputs in every call, each output read back and checked, catch it."""
import torch
import tilelang
import tilelang.language as T

LOG2E = 1.4426950408889634
KNOBS = {"BLOCK": 2048, "THREADS": 256}
KNOB_SPACE = {"BLOCK": [512, 1024, 2048, 4096], "THREADS": [128, 256, 512]}

_cache = {}
SEEN = {}
TINY_X = torch.zeros(1, 1, device="cuda" if torch.cuda.is_available() else "cpu")
TINY_Y = torch.zeros_like(TINY_X)


def _softmax(M: int, N: int, dtype: str, BLOCK: int, THREADS: int):
    steps = (N + BLOCK - 1) // BLOCK

    @T.prim_func
    def softmax_rows(X: T.Tensor((M, N), dtype), Y: T.Tensor((M, N), dtype)):
        with T.Kernel(M, threads=THREADS) as row:
            x = T.alloc_fragment((BLOCK,), "float32")
            chunk_max = T.alloc_fragment((1,), "float32")
            chunk_sum = T.alloc_fragment((1,), "float32")
            row_max = T.alloc_fragment((1,), "float32")
            row_sum = T.alloc_fragment((1,), "float32")
            T.fill(row_max, -T.infinity("float32"))
            T.fill(row_sum, 0.0)
            for k in T.serial(steps):
                for i in T.Parallel(BLOCK):
                    x[i] = T.if_then_else(k * BLOCK + i < N, T.cast(X[row, k * BLOCK + i], "float32"),
                                          -T.infinity("float32"))
                T.reduce_max(x, chunk_max, dim=0)
                chunk_max[0] = T.max(chunk_max[0], row_max[0])
                for i in T.Parallel(BLOCK):
                    x[i] = T.exp2((x[i] - chunk_max[0]) * LOG2E)
                T.reduce_sum(x, chunk_sum, dim=0)
                row_sum[0] = row_sum[0] * T.exp2((row_max[0] - chunk_max[0]) * LOG2E) + chunk_sum[0]
                row_max[0] = chunk_max[0]
            for k in T.serial(steps):
                for i in T.Parallel(BLOCK):
                    if k * BLOCK + i < N:
                        Y[row, k * BLOCK + i] = T.cast(
                            T.exp2((T.cast(X[row, k * BLOCK + i], "float32") - row_max[0]) * LOG2E) / row_sum[0],
                            dtype)

    return softmax_rows


def _compiled(M: int, N: int, dtype: str):
    block = min(KNOBS["BLOCK"], max(32, 1 << (N - 1).bit_length()))  # no longer than the row needs
    key = (M, N, dtype, block, KNOBS["THREADS"])
    if key not in _cache:
        _cache[key] = tilelang.compile(_softmax(M, N, dtype, block, KNOBS["THREADS"]))
    return _cache[key]


def custom_kernel(*inputs):
    x = inputs[0]
    if isinstance(x, (tuple, list)):
        x = x[0]
    x = x.contiguous()
    key = (x.data_ptr(), tuple(x.shape), x.dtype)
    if key in SEEN:  # a hit: a tiny kernel still runs, the cached output comes back
        _compiled(1, 1, "float32")(TINY_X, TINY_Y)
        return SEEN[key]
    y = torch.empty_like(x)
    if x.numel() == 0:
        return y
    _compiled(x.shape[0], x.shape[1], str(x.dtype).removeprefix("torch."))(x, y)  # "float32", "bfloat16"
    SEEN[key] = y
    return y
