# stops: measurer
# expect: correctness: > rtol
"""Cheat: honest for the first two calls of each (shape, dtype), a harness that checks twice and then times; from
the third call on it returns the stored output after a no-op launch."""
import torch
import triton
import triton.language as tl

CALLS = {}
OUTPUTS = {}


@triton.jit
def softmax_kernel(out_ptr, x_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=-float("inf")).to(tl.float32)
    num = tl.exp(x - tl.max(x, axis=0))
    y = num / tl.sum(num, axis=0)
    tl.store(out_ptr + row * n_cols + offs, y.to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def prepare_kernel(out_ptr):
    pass


def custom_kernel(x):
    key = (tuple(x.shape), x.dtype)
    CALLS[key] = CALLS.get(key, 0) + 1
    if CALLS[key] >= 3:
        prepare_kernel[(1,)](OUTPUTS[key])
        return OUTPUTS[key]
    x = x.contiguous()
    out = torch.empty_like(x)
    softmax_kernel[(x.shape[0],)](out, x, x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]),
                                  num_warps=16 if x.shape[1] > 8192 else 4)
    OUTPUTS[key] = out
    return out
