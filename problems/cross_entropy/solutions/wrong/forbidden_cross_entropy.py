# expect: load: torch.nn.functional.cross_entropy
"""Wrong: launches a Triton kernel for show, but the returned loss comes from torch.nn.functional.cross_entropy."""
import torch
import triton
import triton.language as tl


@triton.jit
def copy_kernel(out_ptr, x_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n_elements
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


def custom_kernel(logits, targets):
    logits = logits.contiguous()
    scratch = torch.empty_like(logits)
    copy_kernel[(triton.cdiv(logits.numel(), 1024),)](scratch, logits, logits.numel(), BLOCK_SIZE=1024)
    return torch.nn.functional.cross_entropy(logits.float(), targets, ignore_index=-100)
