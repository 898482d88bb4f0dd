# expect: run: not finite
"""Wrong: divides the sum of squared deviations by N - 1 (the unbiased variance, torch.var's default) where
LayerNorm uses the biased one, dividing by N. For long rows the difference is small (1/(2N) relative on the output,
still 6e-4 at N = 781), but a row of one element gives 0 / 0 = NaN, and the 6x1 test stops the ladder at the run
rung, which checks every shape before correctness."""
import torch
import triton
import triton.language as tl


@triton.jit
def layernorm_kernel(out_ptr, x_ptr, w_ptr, b_ptr, x_row_stride, out_row_stride, n_cols, eps,
                     BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK_SIZE)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * x_row_stride + offs, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / n_cols
    d = tl.where(mask, x - mean, 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(d * d, axis=0) / (n_cols - 1) + eps)
    w = tl.load(w_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    y = d * rstd * w + b
    tl.store(out_ptr + row * out_row_stride + offs, y.to(out_ptr.dtype.element_ty), mask=mask)


def custom_kernel(x, weight, bias):
    x = x.contiguous()
    n_rows, n_cols = x.shape
    out = torch.empty_like(x)
    BLOCK_SIZE = triton.next_power_of_2(n_cols)
    num_warps = 4 if BLOCK_SIZE <= 2048 else (8 if BLOCK_SIZE <= 8192 else 16)
    layernorm_kernel[(n_rows,)](out, x, weight, bias, x.stride(0), out.stride(0), n_cols, 1e-5,
                                BLOCK_SIZE=BLOCK_SIZE, num_warps=num_warps)
    return out
