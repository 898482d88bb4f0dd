# Wrong: forgets the buffer (shift): the kernel takes it but never adds it.
import torch
import triton
import triton.language as tl


@triton.jit
def scale_relu_kernel(x_ptr, w_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask)
    w = tl.load(w_ptr + cols, mask=mask)
    tl.store(out_ptr + row * n_cols + cols, tl.maximum(x * w, 0.0), mask=mask)


def custom_kernel(x, weight, shift):
    out = torch.empty_like(x)
    n_rows, n_cols = x.shape
    scale_relu_kernel[(n_rows,)](x, weight, out, n_cols, BLOCK=triton.next_power_of_2(n_cols))
    return out
