import torch
import triton
import triton.language as tl


@triton.jit
def scale_shift_relu_kernel(x_ptr, w_ptr, s_ptr, out_ptr, n_rows, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask)
    w = tl.load(w_ptr + cols, mask=mask)
    s = tl.load(s_ptr + cols, mask=mask)
    tl.store(out_ptr + row * n_cols + cols, tl.maximum(x * w + s, 0.0), mask=mask)


def custom_kernel(x, weight, shift):
    """Inputs in KernelBench order: the forward's x, then the parameter weight, then the buffer shift."""
    x = x.contiguous()
    out = torch.empty_like(x)
    n_rows, n_cols = x.shape
    scale_shift_relu_kernel[(n_rows,)](x, weight, shift, out, n_rows, n_cols, BLOCK=triton.next_power_of_2(n_cols))
    return out
