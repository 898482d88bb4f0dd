# stops: runner
# expect: compile: compiled for c: candidates compile for the gpu
# language: tilelang
"""Trick: a TileLang kernel compiled for the host (target "c"), which computes on the CPU, outside any GPU kernel and
the torch op log. The runner refuses a kernel compiled for anything but CUDA; were that bypassed, the window would
time the host work like any other and the launch audit would find none of its own kernels on the card."""
import torch
import tilelang
import tilelang.language as T

_cache = {}


def _copy(M: int, N: int):
    @T.prim_func
    def copy(X: T.Tensor((M, N), "float32"), Y: T.Tensor((M, N), "float32")):
        with T.Kernel(M, threads=128) as row:
            for i in T.Parallel(N):
                Y[row, i] = X[row, i]

    return copy


def custom_kernel(x):
    y = torch.empty_like(x)
    key = tuple(x.shape)
    if key not in _cache:
        _cache[key] = tilelang.compile(_copy(x.shape[0], x.shape[1]), target="c")
    _cache[key](x, y)
    return y
