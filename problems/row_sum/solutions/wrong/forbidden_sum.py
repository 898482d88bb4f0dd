# expect: load: torch.sum
"""Wrong: launches a Triton kernel for show, but the returned sums come from torch.sum on the host."""
import torch
import triton
import triton.language as tl


@triton.jit
def copy_kernel(out_ptr, x_ptr, n_elements, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


def custom_kernel(x):
    x = x.contiguous()
    scratch = torch.empty_like(x)
    copy_kernel[(triton.cdiv(x.numel(), 1024),)](scratch, x, x.numel(), BLOCK=1024)
    return torch.sum(x, dim=1, dtype=torch.float32)
