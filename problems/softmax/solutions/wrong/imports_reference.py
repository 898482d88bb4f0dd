# expect: load: reference
"""Wrong: imports the problem's own reference and copies its float64 result into the output with a Triton kernel."""
import torch
import triton
import triton.language as tl
from reference import ref_kernel


@triton.jit
def cast_copy_kernel(out_ptr, src_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n_elements
    v = tl.load(src_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, v.to(out_ptr.dtype.element_ty), mask=mask)


def custom_kernel(x):
    x = x.contiguous()
    ref = ref_kernel(x)
    out = torch.empty_like(x)
    cast_copy_kernel[(triton.cdiv(x.numel(), 1024),)](out, ref, x.numel(), BLOCK_SIZE=1024)
    return out
