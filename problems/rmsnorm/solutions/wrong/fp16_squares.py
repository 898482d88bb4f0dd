# expect: correctness: max_rel
"""Wrong: squares x in float16 "to halve the registers". float16 tops out at 65504, so any |x| above 256 squares to
inf; rows scaled near 1e3 get an infinite sum, 1/rms = 0, and an output of zeros (finite, so the run rung passes it,
but every element of those rows is off by 100%). Smaller rows lose precision to float16 rounding (4.9e-4) as well."""
import torch
import triton
import triton.language as tl


@triton.jit
def rmsnorm_kernel(out_ptr, x_ptr, w_ptr, x_row_stride, out_row_stride, n_cols, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK_SIZE)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * x_row_stride + offs, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    x16 = x.to(tl.float16)
    sq = (x16 * x16).to(tl.float32)
    inv_rms = 1.0 / tl.sqrt(tl.sum(sq, axis=0) / n_cols + eps)
    tl.store(out_ptr + row * out_row_stride + offs, (x * inv_rms * w).to(out_ptr.dtype.element_ty), mask=mask)


def custom_kernel(x, weight):
    x = x.contiguous()
    n_rows, n_cols = x.shape
    out = torch.empty_like(x)
    BLOCK_SIZE = triton.next_power_of_2(n_cols)
    num_warps = 4 if BLOCK_SIZE <= 2048 else (8 if BLOCK_SIZE <= 8192 else 16)
    rmsnorm_kernel[(n_rows,)](out, x, weight, x.stride(0), out.stride(0), n_cols, 1e-6,
                              BLOCK_SIZE=BLOCK_SIZE, num_warps=num_warps)
    return out
