# expect: correctness: max_rel
"""Wrong: keeps sigmoid(gate) and silu(gate) in bfloat16 "because the output is bf16 anyway". Each bf16 rounding
costs up to 3.9e-3 relative, so float32 inputs come out 40x past their tolerance (1e-4). (bf16 inputs may pass by
luck: their own tolerance admits one bf16 ulp, and two or three roundings usually stay near it.)
Only conversions touch bf16 values here (the CPU interpreter mishandles arithmetic on bf16)."""
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
    sig = (1.0 / (1.0 + tl.exp(-gate))).to(tl.bfloat16)
    silu = (gate * sig.to(tl.float32)).to(tl.bfloat16)
    y = silu.to(tl.float32) * up
    tl.store(out_ptr + row * out_row_stride + cols, y.to(out_ptr.dtype.element_ty), mask=mask)


def custom_kernel(x):
    x = x.contiguous()
    n_rows, width = x.shape
    n_cols = width // 2
    out = torch.empty((n_rows, n_cols), dtype=x.dtype, device=x.device)
    grid = (n_rows, triton.cdiv(n_cols, 1024))
    swiglu_kernel[grid](out, x, n_cols, x.stride(0), out.stride(0), BLOCK=1024)
    return out
