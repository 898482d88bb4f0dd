# stops: limits
# expect: compile|run: timed out
# timeout: 30
"""Hang: a Triton kernel whose loop never ends. The loop re-reads x with a volatile load each turn (a side effect the
compiler may not delete: a side-effect-free endless loop is removed by LLVM and the kernel returns) and only exits
on a NaN, which the inputs never hold. Under the CPU interpreter the compile rung only compiles, so the run rung
hangs; on a GPU the compile rung's own launch hangs. The process group must be killed at the limit."""
import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(out_ptr, x_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=-float("inf")).to(tl.float32)
    num = tl.exp(x - tl.max(x, axis=0))
    first = tl.load(x_ptr + row * n_cols, volatile=True)
    while first == first:
        first = tl.load(x_ptr + row * n_cols, volatile=True)
    y = num / tl.sum(num, axis=0)
    tl.store(out_ptr + row * n_cols + offs, y.to(out_ptr.dtype.element_ty), mask=mask)


def custom_kernel(x):
    x = x.contiguous()
    out = torch.empty_like(x)
    softmax_kernel[(x.shape[0],)](out, x, x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]),
                                  num_warps=16 if x.shape[1] > 8192 else 4)
    return out
