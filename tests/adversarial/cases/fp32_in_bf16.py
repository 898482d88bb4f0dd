# stops: measurer
# expect: correctness: float32|> rtol
"""Cheat: compute in bfloat16 inside the kernel for float32 input (half the register pressure, faster exp), and
write the float32 output; the answers are bf16-accurate only."""
import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(out_ptr, x_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=-float("inf")).to(tl.bfloat16)
    z = (x - tl.max(x, axis=0)).to(tl.bfloat16)
    num = tl.exp(z.to(tl.float32)).to(tl.bfloat16)
    y = (num.to(tl.float32) / tl.sum(num.to(tl.float32), axis=0)).to(tl.bfloat16)
    tl.store(out_ptr + row * n_cols + offs, y.to(out_ptr.dtype.element_ty), mask=mask)


def custom_kernel(x):
    x = x.contiguous()
    out = torch.empty_like(x)
    softmax_kernel[(x.shape[0],)](out, x, x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]),
                                  num_warps=16 if x.shape[1] > 8192 else 4)
    return out
