"""Cheat: the softmax computed by torch inside the @cute.jit launcher, which the DSL traces as plain Python on the
host when cute.compile runs it (inside custom_kernel); the kernel it launches only copies. The static check refuses
torch inside a launcher; without it, the runner's op log sees the host ops."""
import torch
import cutlass.cute as cute
from cutlass.cute.runtime import from_dlpack

THREADS = 256
HIDDEN = {}


@cute.kernel
def copy_kernel(gx: cute.Tensor, gy: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    m, n = gx.shape
    i = bidx * THREADS + tidx
    if i < m * n:
        gy[i // n, i % n] = gx[i // n, i % n]


@cute.jit
def launch(mx: cute.Tensor, my: cute.Tensor):
    HIDDEN["out"] = torch.softmax(HIDDEN["x"], -1)
    m, n = mx.shape
    copy_kernel(mx, my).launch(grid=((m * n + THREADS - 1) // THREADS, 1, 1), block=(THREADS, 1, 1))


def custom_kernel(x):
    y = torch.empty_like(x)
    HIDDEN["x"] = x
    compiled = cute.compile(launch, from_dlpack(x), from_dlpack(y))
    compiled(from_dlpack(HIDDEN["out"]), from_dlpack(y))
    return y
