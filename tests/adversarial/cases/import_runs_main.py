# stops: static check, then runner
# expect: load: dunder
# expect-dynamic: load: import failed|exited
"""Trick aimed at the parent: a module's `__main__` runs code when imported (torch.utils.model_dump's calls
sys.exit). The static check runs in the parent before any child starts, so it must judge such an import without
importing anything itself; the import then fails in the child, never in the parent."""
import torch
import triton
import triton.language as tl
from torch.utils.model_dump import __main__ as md


@triton.jit
def softmax_kernel(out_ptr, x_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=-float("inf")).to(tl.float32)
    num = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * n_cols + offs, (num / tl.sum(num, axis=0)).to(out_ptr.dtype.element_ty), mask=mask)


def custom_kernel(x):
    x = x.contiguous()
    out = torch.empty_like(x)
    softmax_kernel[(x.shape[0],)](out, x, x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]))
    return (out, md)[0]
