# expect: load: torch.matmul
"""Wrong: launches a Triton kernel for show (it zero-fills a scratch buffer), but the returned product comes from
torch.matmul."""
import torch
import triton
import triton.language as tl


@triton.jit
def fill_kernel(out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    tl.store(out_ptr + offs, tl.zeros([BLOCK_SIZE], dtype=tl.float32), mask=offs < n_elements)


def custom_kernel(a, b):
    scratch = torch.empty((a.shape[0], b.shape[1]), dtype=torch.float32, device=a.device)
    fill_kernel[(triton.cdiv(scratch.numel(), 1024),)](scratch, scratch.numel(), BLOCK_SIZE=1024)
    return torch.matmul(a, b)
