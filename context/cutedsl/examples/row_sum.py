"""out[i] = sum of row i, accumulated in float32: one CTA per row, each thread's strided partial sum reduced across the
CTA with warp shuffles and then shared memory (one slot per warp). The thread count reaches the kernel and the block
reduction as a `cutlass.Constexpr` argument, as in the problems' CuTeDSL seeds that ran on a card."""
import torch
import cutlass
import cutlass.cute as cute
from cutlass import Float32
from cutlass.cute.runtime import from_dlpack
from cutlass.memory import SmemAllocator

THREADS = 256
_compiled = {}


@cute.jit
def block_sum(val: Float32, slots: cute.Tensor, num_warps: cutlass.Constexpr[int]) -> Float32:
    """Every thread's val summed over the CTA; every thread gets the total."""
    val = cute.arch.warp_reduction(val, lambda a, b: a + b)  # butterfly shuffles: all 32 lanes hold the warp's sum
    if cute.arch.lane_idx() == 0:
        slots[cute.arch.warp_idx()] = val
    cute.arch.barrier()  # __syncthreads: every warp's slot written before any thread reads them
    total = slots[0]
    for w in cutlass.range_constexpr(1, num_warps):  # unrolled at compile time
        total = total + slots[w]
    return total


@cute.kernel
def row_sum_kernel(gx: cute.Tensor, gout: cute.Tensor, num_threads: cutlass.Constexpr[int]):
    tidx, _, _ = cute.arch.thread_idx()
    row, _, _ = cute.arch.block_idx()
    num_warps = num_threads // 32
    slots = SmemAllocator().allocate_tensor(Float32, cute.make_layout((num_warps,)), byte_alignment=16)
    acc = Float32(0.0)
    for i in cutlass.range(tidx, gx.shape[1], num_threads):  # a runtime loop (scf.for); range_constexpr unrolls
        acc = acc + gx[row, i].to(Float32)
    total = block_sum(acc, slots, num_warps)
    if tidx == 0:
        gout[row] = total.to(gout.element_type)


@cute.jit
def row_sum(mx: cute.Tensor, mout: cute.Tensor, num_threads: cutlass.Constexpr[int]):
    row_sum_kernel(mx, mout, num_threads).launch(grid=(mx.shape[0], 1, 1), block=(num_threads, 1, 1))


def summed(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty(x.shape[0], device=x.device, dtype=x.dtype)
    mx, mout = from_dlpack(x), from_dlpack(out)
    key = (tuple(x.shape), x.dtype)
    if key not in _compiled:
        _compiled[key] = cute.compile(row_sum, mx, mout, THREADS)
    _compiled[key](mx, mout)
    return out


def check(device: str = "cuda") -> str:
    for m, n in ((1, 7), (333, 781), (64, 65537)):
        x = torch.randn(m, n, device=device)
        torch.testing.assert_close(summed(x), x.sum(dim=1), rtol=1e-4, atol=1e-3)
    return "ok"


if __name__ == "__main__":
    print(check())
