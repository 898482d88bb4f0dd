# Counts into the int64 tensor the task hands out (zeroed by a first kernel), with atomics per value.
import torch
import triton
import triton.language as tl
from task import input_t, output_t


@triton.jit
def zero_bins(out_ptr, BINS: tl.constexpr):
    tl.store(out_ptr + tl.arange(0, BINS), tl.zeros((BINS,), dtype=tl.int64))


@triton.jit
def count(values_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(values_ptr + offs, mask=mask, other=0).to(tl.int32)
    tl.atomic_add(out_ptr + v, tl.full((BLOCK,), 1, tl.int64), mask=mask)


def custom_kernel(data: input_t) -> output_t:
    values, output = data
    zero_bins[(1,)](output, BINS=256)
    count[(triton.cdiv(values.numel(), 1024),)](values, output, values.numel(), BLOCK=1024)
    return output
