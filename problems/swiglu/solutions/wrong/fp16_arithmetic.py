# expect: correctness: max_rel
"""Wrong: computes exp(-gate) and the sigmoid in float16 "to halve register use". float16 tops out at 65504, so
exp(-gate) is inf for gate < -11.1 and sigmoid(gate) comes out 0 where the true output is still about 1e-4 in
magnitude (a relative error of 1); where it does not overflow, each float16 rounding costs up to 4.9e-4, 5x the
float32 tolerance. Only conversions touch float16 values (tl.exp takes fp32 or fp64 only)."""
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
    e = tl.exp(-gate).to(tl.float16)
    sig = (1.0 / (1.0 + e.to(tl.float32))).to(tl.float16)
    y = gate * sig.to(tl.float32) * up
    tl.store(out_ptr + row * out_row_stride + cols, y.to(out_ptr.dtype.element_ty), mask=mask)


def custom_kernel(x):
    x = x.contiguous()
    n_rows, width = x.shape
    n_cols = width // 2
    out = torch.empty((n_rows, n_cols), dtype=x.dtype, device=x.device)
    grid = (n_rows, triton.cdiv(n_cols, 1024))
    swiglu_kernel[grid](out, x, n_cols, x.stride(0), out.stride(0), BLOCK=1024)
    return out
