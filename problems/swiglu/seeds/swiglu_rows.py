"""Seed: SwiGLU in Triton, a 2-D grid of (row, column block) programs.

Each program reads BLOCK gate values and the BLOCK up values N columns to their right in the same row of x, computes
gate / (1 + exp(-gate)) * up in float32 and stores BLOCK outputs, cast to the output dtype. For gate below -88.7,
exp(-gate) overflows to inf and the quotient is -0.0, which is within the tolerance (the true value is below 1e-36);
the form never divides inf by inf. The column block is masked, so N need not be a multiple of BLOCK.
"""
import torch
import triton
import triton.language as tl

# Knobs a tuner may adjust; the wrapper reads them at every call.
KNOBS = {"BLOCK": 1024, "NUM_WARPS": 4}
KNOB_SPACE = {"BLOCK": [256, 512, 1024, 2048, 4096], "NUM_WARPS": [2, 4, 8]}


@triton.jit
def swiglu_kernel(out_ptr, x_ptr, n_cols, x_row_stride, out_row_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < n_cols
    x_row = x_ptr + row * x_row_stride
    gate = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
    up = tl.load(x_row + n_cols + cols, mask=mask, other=0.0).to(tl.float32)
    y = gate / (1.0 + tl.exp(-gate)) * up
    tl.store(out_ptr + row * out_row_stride + cols, y.to(out_ptr.dtype.element_ty), mask=mask)


def custom_kernel(x):
    x = x.contiguous()
    n_rows, width = x.shape
    n_cols = width // 2
    out = torch.empty((n_rows, n_cols), dtype=x.dtype, device=x.device)
    grid = (n_rows, triton.cdiv(n_cols, KNOBS["BLOCK"]))
    swiglu_kernel[grid](out, x, n_cols, x.stride(0), out.stride(0), BLOCK=KNOBS["BLOCK"],
                        num_warps=KNOBS["NUM_WARPS"])
    return out
