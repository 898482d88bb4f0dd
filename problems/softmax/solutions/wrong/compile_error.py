# expect: compile: compilationerror
"""Wrong: sizes the block with the runtime argument n_cols; tl.arange needs constexpr bounds."""
import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(out_ptr, x_ptr, x_row_stride, out_row_stride, n_cols):
    row = tl.program_id(0)
    offs = tl.arange(0, n_cols)
    x = tl.load(x_ptr + row * x_row_stride + offs).to(tl.float32)
    num = tl.exp(x - tl.max(x, axis=0))
    y = num / tl.sum(num, axis=0)
    tl.store(out_ptr + row * out_row_stride + offs, y.to(out_ptr.dtype.element_ty))


def custom_kernel(x):
    x = x.contiguous()
    n_rows, n_cols = x.shape
    out = torch.empty_like(x)
    softmax_kernel[(n_rows,)](out, x, x.stride(0), out.stride(0), n_cols)
    return out
