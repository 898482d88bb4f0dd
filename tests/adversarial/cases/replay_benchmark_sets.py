# stops: measurer
# expect: benchmark: a timed call returned a wrong output
"""Cheat: a harness that times each benchmark shape by alternating between a few fixed input sets can be answered
from memory. On benchmark shapes this candidate computes its first two calls honestly and from then on returns the
output it returned two calls earlier (after a no-op launch): right whenever the sets alternate in pairs, and free."""
import torch
import triton
import triton.language as tl

BENCHMARK_SHAPES = ((64, 1024), (8, 8192), (4096, 1024), (4096, 4096), (8192, 8192), (4096, 32768), (1024, 131072))
HISTORY = {}


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
def noop_kernel(out_ptr):
    pass


def custom_kernel(x):
    key = (tuple(x.shape), x.dtype)
    seen = HISTORY.setdefault(key, [])
    if tuple(x.shape) in BENCHMARK_SHAPES and len(seen) >= 2:
        out = seen[-2]
        noop_kernel[(1,)](out)
        seen.append(out)
        return out
    x = x.contiguous()
    out = torch.empty_like(x)
    softmax_kernel[(x.shape[0],)](out, x, x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]),
                                  num_warps=16 if x.shape[1] > 8192 else 4)
    seen.append(out)
    return out
