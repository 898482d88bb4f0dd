# stops: static check, then runner
# expect: load: torch.softmax
# expect-dynamic: compile: torch ops
"""Cheat: the Triton kernel only handles rows up to 4096 (a static_assert); every failure falls back to the library.
The shapes it handles compile, so a compile rung sees real kernels; the big rows are done by torch.softmax."""
import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(out_ptr, x_ptr, n_cols, BLOCK: tl.constexpr):
    tl.static_assert(BLOCK <= 4096)
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=-float("inf")).to(tl.float32)
    num = tl.exp(x - tl.max(x, axis=0))
    y = num / tl.sum(num, axis=0)
    tl.store(out_ptr + row * n_cols + offs, y.to(out_ptr.dtype.element_ty), mask=mask)


def custom_kernel(x):
    x = x.contiguous()
    out = torch.empty_like(x)
    try:
        softmax_kernel[(x.shape[0],)](out, x, x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]),
                                      num_warps=16 if x.shape[1] > 8192 else 4)
    except Exception:
        return torch.softmax(x, -1)
    return out
