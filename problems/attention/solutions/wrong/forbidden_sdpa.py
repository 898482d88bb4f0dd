# expect: load: torch.nn.functional.scaled_dot_product_attention
"""Wrong: launches a Triton kernel for show, but the returned values come from PyTorch's own attention."""
import torch
import torch.nn.functional as F
import triton
import triton.language as tl


@triton.jit
def copy_kernel(out_ptr, x_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n_elements
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


def custom_kernel(q, k, v, causal):
    scratch = torch.empty_like(q)
    copy_kernel[(triton.cdiv(q.numel(), 1024),)](scratch, q, q.numel(), BLOCK_SIZE=1024)
    return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
