# expect: run: dtype
"""Wrong: sums in float32 but allocates the output in the input's dtype, so bfloat16 inputs get bfloat16 sums. The
problem declares a float32 output for both input dtypes (output_dtypes = ["float32"]); the run rung checks the
dtype of every output before any value is compared."""
import torch
import triton
import triton.language as tl


@triton.jit
def row_sum_kernel(out_ptr, x_ptr, n_cols, x_row_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * x_row_stride
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + offs
        acc += tl.load(x_row + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
    tl.store(out_ptr + row, tl.sum(acc, axis=0).to(out_ptr.dtype.element_ty))


def custom_kernel(x):
    x = x.contiguous()
    n_rows, n_cols = x.shape
    out = torch.empty((n_rows,), dtype=x.dtype, device=x.device)
    row_sum_kernel[(n_rows,)](out, x, n_cols, x.stride(0), BLOCK=1024)
    return out
