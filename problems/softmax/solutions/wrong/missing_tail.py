# expect: correctness: max_rel
"""Wrong: looped kernel whose write pass only covers whole chunks (range stops at n_cols - CHUNK + 1), so the last
partial chunk of each row is never written and keeps the zeros it was allocated with. Rows shorter than a chunk get
no output at all; only N that are multiples of CHUNK come out right."""
import torch
import triton
import triton.language as tl


@triton.jit
def softmax_looped_kernel(out_ptr, x_ptr, x_row_stride, out_row_stride, n_cols, CHUNK: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * x_row_stride
    out_row = out_ptr + row * out_row_stride
    offs = tl.arange(0, CHUNK)
    m = -float("inf")
    s = 0.0
    for start in range(0, n_cols, CHUNK):
        cols = start + offs
        x = tl.load(x_row + cols, mask=cols < n_cols, other=-float("inf")).to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, axis=0))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
    for start in range(0, n_cols - CHUNK + 1, CHUNK):
        cols = start + offs
        x = tl.load(x_row + cols).to(tl.float32)
        tl.store(out_row + cols, (tl.exp(x - m) / s).to(out_ptr.dtype.element_ty))


def custom_kernel(x):
    x = x.contiguous()
    n_rows, n_cols = x.shape
    out = torch.zeros_like(x)
    softmax_looped_kernel[(n_rows,)](out, x, x.stride(0), out.stride(0), n_cols, CHUNK=1024)
    return out
