# expect: correctness: max_rel
"""Wrong: reads gate from the right half of the row and up from the left, computing silu(up) * gate. The layout is
gate = x[:, :N], up = x[:, N:]; with the halves swapped every element is wrong (the two halves are drawn from
different distributions, so this cannot pass by symmetry)."""
import torch
import triton
import triton.language as tl


@triton.jit
def swiglu_kernel(out_ptr, x_ptr, n_cols, x_row_stride, out_row_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < n_cols
    x_row = x_ptr + row * x_row_stride
    up = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
    gate = tl.load(x_row + n_cols + cols, mask=mask, other=0.0).to(tl.float32)
    y = gate / (1.0 + tl.exp(-gate)) * up
    tl.store(out_ptr + row * out_row_stride + cols, y.to(out_ptr.dtype.element_ty), mask=mask)


def custom_kernel(x):
    x = x.contiguous()
    n_rows, width = x.shape
    n_cols = width // 2
    out = torch.empty((n_rows, n_cols), dtype=x.dtype, device=x.device)
    grid = (n_rows, triton.cdiv(n_cols, 1024))
    swiglu_kernel[grid](out, x, n_cols, x.stride(0), out.stride(0), BLOCK=1024)
    return out
