# expect: load: torch.nn.functional.layer_norm
"""Wrong: launches a Triton kernel for show, but the returned values come from torch.nn.functional.layer_norm."""
import torch
import triton
import triton.language as tl


@triton.jit
def copy_kernel(out_ptr, x_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n_elements
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


def custom_kernel(x, weight, bias):
    x = x.contiguous()
    scratch = torch.empty_like(x)
    copy_kernel[(triton.cdiv(x.numel(), 1024),)](scratch, x, x.numel(), BLOCK_SIZE=1024)
    return torch.nn.functional.layer_norm(x, (x.shape[-1],), weight, bias, eps=1e-5)
