# stops: static check, then measurer
# expect: load: builtin hasattr
# expect-dynamic: ok
# expect-dynamic-gpu: ok or run|correctness: > rtol|not finite
"""Cheat: tell the interpreter from the compiler inside the kernel (the interpreter swaps tl.load for a plain
function without Triton's signature) and take a different branch in each: the compiled kernel, whose registers the
compile rung reports, writes zeros; the interpreted one, which every check runs, computes softmax. On a GPU the
measurer checks the compiled kernel's own output (where a Triton version's code generator takes the softmax branch
too, the kernel is honest and passes). Without a GPU only the static check stands here: no rung runs the
compiled code (README's limits), and an interpreter run never earns fitness."""
import torch
import triton
import triton.language as tl


@triton.jit
def k(out_ptr, x_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    if not hasattr(tl.load, "signature"):
        x = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=-float("inf")).to(tl.float32)
        x = x - tl.max(x, axis=0)
        e = tl.exp(x)
        tl.store(out_ptr + row * n_cols + offs, (e / tl.sum(e, axis=0)).to(out_ptr.dtype.element_ty), mask=mask)
    else:
        tl.store(out_ptr + row * n_cols + offs, tl.zeros([BLOCK], tl.float32).to(out_ptr.dtype.element_ty), mask=mask)


def custom_kernel(x):
    x = x.contiguous()
    out = torch.empty_like(x)
    n_rows, n_cols = x.shape
    k[(n_rows,)](out, x, n_cols, BLOCK=triton.next_power_of_2(n_cols))
    return out
