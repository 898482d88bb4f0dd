# A GPU MODE submission as its users write them: the entry point an alias of the function, the sum in float32 written
# into the output tensor the task hands out, and that tensor returned.
import torch
import triton
import triton.language as tl
from task import input_t, output_t


@triton.jit
def scan_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    carry = tl.zeros((), dtype=tl.float32)
    for start in range(0, n, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + offs, mask=mask, other=0.0)
        s = tl.cumsum(x, axis=0) + carry
        tl.store(out_ptr + offs, s, mask=mask)
        carry += tl.sum(x, axis=0)


def _prefix_sum(data: input_t) -> output_t:
    x, output = data
    scan_kernel[(1,)](x, output, x.numel(), BLOCK=1024)
    return output


custom_kernel = _prefix_sum
