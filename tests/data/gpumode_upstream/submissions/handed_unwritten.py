# Returns the output tensor the task hands out after writing only its first element: every other element keeps what
# the harness filled it with (NaN), so the result never computed shows.
import torch
import triton
import triton.language as tl
from task import input_t, output_t


@triton.jit
def first_only(x_ptr, out_ptr):
    tl.store(out_ptr, tl.load(x_ptr))


def custom_kernel(data: input_t) -> output_t:
    x, output = data
    first_only[(1,)](x, output)
    return output
