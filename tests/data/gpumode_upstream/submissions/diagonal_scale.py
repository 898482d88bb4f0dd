import torch
import triton
import triton.language as tl
from task import input_t, output_t


@triton.jit
def scale_rows(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    d = tl.load(x_ptr + row * n + row)
    x = tl.load(x_ptr + row * n + offs, mask=mask)
    tl.store(out_ptr + row * n + offs, x * d, mask=mask)


def custom_kernel(data: input_t) -> output_t:
    out = torch.empty_like(data)
    n = data.shape[0]
    scale_rows[(n,)](data, out, n, BLOCK=triton.next_power_of_2(n))
    return out
