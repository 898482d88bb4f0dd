"""A TileLang kernel that copies its input (not a softmax): the compile rung's subject on a machine without a GPU."""
import torch
import tilelang
import tilelang.language as T

BLOCK = 256
_cache = {}


def _copy(M: int, N: int, dtype: str):
    @T.prim_func
    def copy(X: T.Tensor((M, N), dtype), Y: T.Tensor((M, N), dtype)):
        with T.Kernel(M, T.ceildiv(N, BLOCK), threads=128) as (row, col):
            for i in T.Parallel(BLOCK):
                if col * BLOCK + i < N:
                    Y[row, col * BLOCK + i] = X[row, col * BLOCK + i]

    return copy


def custom_kernel(x):
    y = torch.empty_like(x)
    key = (x.shape[0], x.shape[1], str(x.dtype))
    if key not in _cache:
        _cache[key] = tilelang.compile(_copy(x.shape[0], x.shape[1], str(x.dtype).removeprefix("torch.")))
    _cache[key](x, y)
    return y
