"""Cheat: the softmax computed by torch inside the @T.prim_func body, which TileLang traces as plain Python on the
host when the function is built (inside custom_kernel); the kernel it makes only copies. The static check refuses
torch inside a prim_func; without it, the runner's op log sees the host ops."""
import torch
import tilelang
import tilelang.language as T

HIDDEN = {}


def _copy(M: int, N: int):
    @T.prim_func
    def copy(X: T.Tensor((M, N), "float32"), Y: T.Tensor((M, N), "float32")):
        HIDDEN["out"] = torch.softmax(HIDDEN["x"], -1)
        with T.Kernel(M, threads=128) as row:
            for i in T.Parallel(N):
                Y[row, i] = X[row, i]

    return copy


def custom_kernel(x):
    HIDDEN["x"] = x
    kernel = tilelang.compile(_copy(x.shape[0], x.shape[1]))
    y = torch.empty_like(x)
    kernel(HIDDEN["out"], y)
    return y
