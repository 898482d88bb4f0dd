# expect: run: not finite
"""Wrong: writes sigmoid(g) as exp(g) / (1 + exp(g)). For gate above 88.7 exp(g) overflows float32 to inf and the
ratio is inf / inf = NaN, so every row with such a gate (one in eight gate values is drawn from [-100, 100]) has NaN
in its output; the run rung stops it."""
import torch
import triton
import triton.language as tl


@triton.jit
def swiglu_kernel(out_ptr, x_ptr, n_cols, x_row_stride, out_row_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < n_cols
    x_row = x_ptr + row * x_row_stride
    gate = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
    up = tl.load(x_row + n_cols + cols, mask=mask, other=0.0).to(tl.float32)
    e = tl.exp(gate)
    y = gate * (e / (1.0 + e)) * up
    tl.store(out_ptr + row * out_row_stride + cols, y.to(out_ptr.dtype.element_ty), mask=mask)


def custom_kernel(x):
    x = x.contiguous()
    n_rows, width = x.shape
    n_cols = width // 2
    out = torch.empty((n_rows, n_cols), dtype=x.dtype, device=x.device)
    grid = (n_rows, triton.cdiv(n_cols, 1024))
    swiglu_kernel[grid](out, x, n_cols, x.stride(0), out.stride(0), BLOCK=1024)
    return out
