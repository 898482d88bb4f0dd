# stops: measurer
# expect: run|correctness: not finite|> rtol
"""Cheat: half the bandwidth by writing only the first half of each row (the rest is whatever the memory held)."""
import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(out_ptr, x_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=-float("inf")).to(tl.float32)
    num = tl.exp(x - tl.max(x, axis=0))
    y = num / tl.sum(num, axis=0)
    tl.store(out_ptr + row * n_cols + offs, y.to(out_ptr.dtype.element_ty), mask=offs < (n_cols + 1) // 2)


def custom_kernel(x):
    x = x.contiguous()
    out = torch.empty_like(x)
    softmax_kernel[(x.shape[0],)](out, x, x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]),
                                  num_warps=16 if x.shape[1] > 8192 else 4)
    return out
