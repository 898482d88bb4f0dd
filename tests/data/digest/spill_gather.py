"""A kernel with known faults for the SASS digest test: every global access is a 32-bit scalar one, and it spills."""
import torch
import triton
import triton.language as tl


@triton.jit
def gather_softmax_kernel(out_ptr, x_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    # a strided gather (stride 7): neighbouring lanes never read neighbouring addresses, so no vector loads;
    # 8192 elements on one warp is 256 values a thread: more than 255 registers hold, so it spills
    idx = (offs * 7) % n_cols
    x = tl.load(x_ptr + row * n_cols + idx, mask=offs < n_cols, other=-float("inf"))
    m = tl.max(x, axis=0)
    e = tl.exp(x - m)
    y = e / tl.sum(e, axis=0)
    tl.store(out_ptr + row * n_cols + idx, y, mask=offs < n_cols)


def custom_kernel(x):
    out = torch.empty_like(x)
    gather_softmax_kernel[(x.shape[0],)](out, x, x.shape[1], BLOCK=8192, num_warps=1)
    return out
