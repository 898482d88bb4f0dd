# expect: correctness: max_rel
"""Wrong: takes the mean and the variance over all BLOCK_SIZE lanes of the padded row, so the masked lanes (loaded as
0) count as elements. For N = 781 (block 1024) the mean of a row around 80 comes out near 61, every deviation is off
by about 19, the variance is hundreds instead of at most 1, and every normalised value comes out near +-1.15 (19 over a
std near 17) instead of spreading around 0. Only N that are powers of two come out right."""
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
    mean = tl.sum(x, axis=0) / BLOCK_SIZE
    d = tl.where(mask, x - mean, 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(d * d, axis=0) / BLOCK_SIZE + eps)
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
