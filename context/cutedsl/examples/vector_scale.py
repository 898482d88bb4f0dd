"""y = alpha * x over a contiguous tensor, 16 bytes per thread per step: the smallest complete CuTeDSL candidate shape
(a @cute.kernel, the @cute.jit launcher that launches it, cute.compile once per shape and dtype, then calls)."""
import torch
import cutlass
import cutlass.cute as cute
from cutlass import Float32
from cutlass.cute.runtime import from_dlpack

THREADS = 256
_compiled = {}


@cute.kernel
def scale_kernel(gx: cute.Tensor, gy: cute.Tensor, alpha: Float32, vec: cutlass.Constexpr[int]):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    tx = cute.zipped_divide(gx, (vec,))  # ((vec), (n / vec)): mode 1 indexes 16-byte vectors
    ty = cute.zipped_divide(gy, (vec,))
    j = bidx * THREADS + tidx
    if j < gx.shape[0] // vec:
        v = tx[(None, j)].load().to(Float32)  # one 16-byte load into registers (a TensorSSA)
        ty[(None, j)].store((v * alpha).to(gy.element_type))


@cute.jit
def scale(mx: cute.Tensor, my: cute.Tensor, alpha: Float32, vec: cutlass.Constexpr[int]):
    vectors = mx.shape[0] // vec
    scale_kernel(mx, my, alpha, vec).launch(grid=((vectors + THREADS - 1) // THREADS, 1, 1), block=(THREADS, 1, 1))


def scaled(x: torch.Tensor, alpha: float) -> torch.Tensor:
    """x flattened; its length a multiple of 16 bytes' worth of elements, its storage 16-byte aligned."""
    x = x.reshape(-1)
    y = torch.empty_like(x)
    vec = 16 // x.element_size()
    assert x.numel() % vec == 0 and x.data_ptr() % 16 == 0 and y.data_ptr() % 16 == 0
    mx, my = from_dlpack(x, assumed_align=16), from_dlpack(y, assumed_align=16)
    key = (x.numel(), x.dtype)
    if key not in _compiled:  # cute.compile is slow (tens of ms to seconds): once per shape and dtype
        _compiled[key] = cute.compile(scale, mx, my, Float32(alpha), vec)
    _compiled[key](mx, my, Float32(alpha))  # Constexpr arguments are left out of the compiled call
    return y


def check(device: str = "cuda") -> str:
    for dtype in (torch.float32, torch.bfloat16):
        x = torch.randn(1 << 20, device=device, dtype=dtype)
        torch.testing.assert_close(scaled(x, 0.5), x * 0.5)
    return "ok"


if __name__ == "__main__":
    print(check())
