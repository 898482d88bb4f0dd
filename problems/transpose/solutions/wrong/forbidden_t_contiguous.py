# expect: load: tensor.t
"""Wrong: launches a Triton copy for show, but the result is x.t().contiguous(): the library makes the transposed
view and its copy kernel does the work. Tensor.t is forbidden (so are .transpose, .permute, .mT and the rest)."""
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
    return x.t().contiguous()
