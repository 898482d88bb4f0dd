# expect: correctness: max_rel
"""Wrong: the mask stops one element short, so the last element of the output is never written. Keep one kernel
here for each way this op is usually got wrong; the first line says the rung and reason it must fail with."""
import torch
import triton
import triton.language as tl


@triton.jit
def op_kernel(out_ptr, x_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n_elements - 1
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    y = x  # TODO: the same op as the seed
    tl.store(out_ptr + offs, y.to(out_ptr.dtype.element_ty), mask=mask)


def custom_kernel(x):
    x = x.contiguous()
    out = torch.zeros_like(x)
    n = x.numel()
    op_kernel[(triton.cdiv(n, 1024),)](out, x, n, BLOCK_SIZE=1024)
    return out
