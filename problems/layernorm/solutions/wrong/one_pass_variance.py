# expect: correctness: max_rel
"""Wrong: the one-pass variance var = E[x^2] - E[x]^2, both sums taken in one sweep, in float32. With row means
of 50 to 100 and spreads of 0.25 to 1, E[x^2] is up to 1e4 and rounds to float32 with an error near 1e-3 (and so does
E[x]^2); their difference, the variance, is 0.06 to 1, so it keeps only two to four correct digits. 1/std is off by
1e-4 to 1e-2 relative, and the outputs by that times the normalised value: outside the float32 tolerance (5e-4) on
most rows. (The bfloat16 check alone would pass it: the error is below one bf16 ulp there. A spread much smaller
still would make the difference negative and the output NaN.)"""
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
    mean_sq = tl.sum(x * x, axis=0) / n_cols
    var = mean_sq - mean * mean
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    y = (x - mean) * rstd * w + b
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
