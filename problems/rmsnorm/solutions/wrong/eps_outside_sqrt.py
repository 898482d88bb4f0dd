# expect: correctness: max_rel
"""Wrong: divides by sqrt(mean(x^2)) + eps instead of sqrt(mean(x^2) + eps). Harmless where the row's rms is large,
but rows with an rms near 1e-3 (mean square near eps = 1e-6) come out 41% too large (the right divisor is
sqrt(2e-6) = 1.41e-3, this one 1.001e-3), and rows with a smaller rms (a one-element row of 1e-4) several times."""
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
    inv_rms = 1.0 / (tl.sqrt(tl.sum(x * x, axis=0) / n_cols) + eps)
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
