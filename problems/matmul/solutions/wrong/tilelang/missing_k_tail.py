# expect: correctness: max_rel
"""C = A @ B in TileLang (the seed's tensor-core kernel) whose K loop stops at the last whole BLOCK_K tile: the
K % BLOCK_K trailing columns of A and rows of B never enter the sum, and for K < BLOCK_K the output is zero."""
import torch
import tilelang
import tilelang.language as T

KNOBS = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "STAGES": 3, "THREADS": 128}
KNOB_SPACE = {"BLOCK_M": [64, 128], "BLOCK_N": [64, 128, 256], "BLOCK_K": [32, 64], "STAGES": [2, 3, 4],
              "THREADS": [128, 256]}

_cache = {}


def _matmul(M: int, N: int, K: int, dtype: str, BLOCK_M: int, BLOCK_N: int, BLOCK_K: int, STAGES: int,
            THREADS: int):
    @T.prim_func
    def tiled_gemm(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, BLOCK_N), T.ceildiv(M, BLOCK_M), threads=THREADS) as (bx, by):
            a_tile = T.alloc_shared((BLOCK_M, BLOCK_K), dtype)
            b_tile = T.alloc_shared((BLOCK_K, BLOCK_N), dtype)
            acc = T.alloc_fragment((BLOCK_M, BLOCK_N), "float32")
            T.clear(acc)
            for k in T.Pipelined(K // BLOCK_K, num_stages=STAGES):  # the K tail dropped
                T.copy(A[by * BLOCK_M, k * BLOCK_K], a_tile)
                T.copy(B[k * BLOCK_K, bx * BLOCK_N], b_tile)
                T.gemm(a_tile, b_tile, acc)
            T.copy(acc, C[by * BLOCK_M, bx * BLOCK_N])

    return tiled_gemm


def _compiled(M: int, N: int, K: int, dtype: str):
    key = (M, N, K, dtype, *KNOBS.values())
    if key not in _cache:
        _cache[key] = tilelang.compile(_matmul(M, N, K, dtype, KNOBS["BLOCK_M"], KNOBS["BLOCK_N"], KNOBS["BLOCK_K"],
                                               KNOBS["STAGES"], KNOBS["THREADS"]))
    return _cache[key]


def custom_kernel(*inputs):
    if len(inputs) == 1 and isinstance(inputs[0], (tuple, list)):
        inputs = tuple(inputs[0])
    a, b = inputs[0].contiguous(), inputs[1].contiguous()
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)
    if M == 0 or N == 0:
        return c
    _compiled(M, N, K, str(a.dtype).removeprefix("torch."))(a, b, c)  # "bfloat16"
    return c
