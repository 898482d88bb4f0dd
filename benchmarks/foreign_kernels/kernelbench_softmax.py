# Solves KernelBench level1/23_Softmax.py: torch.softmax(x, dim=1) of a float32 (batch, dim) matrix.
"""One program per row, two passes over it in chunks of CHUNK columns. Pass 1 keeps a running maximum and a running
sum of exp(x - max) per lane (each lane rescales its own sum when its maximum grows, so the loop has no cross-lane
reduction); the lanes are combined once at the end. Pass 2 reads the row again and writes exp(x - max) / sum. Rows of
393216 floats do not fit on chip, so the row is read twice and written once; all arithmetic is float32."""
import torch
import triton
import triton.language as tl

KNOBS = {"CHUNK": 4096, "WARPS": 8}
KNOB_SPACE = {"CHUNK": [1024, 2048, 4096, 8192], "WARPS": [4, 8, 16]}


@triton.jit
def softmax_kernel(x_ptr, y_ptr, n_cols, x_row_stride, y_row_stride, CHUNK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * x_row_stride
    y_row = y_ptr + row * y_row_stride
    offs = tl.arange(0, CHUNK)
    m = tl.full([CHUNK], -float("inf"), dtype=tl.float32)
    s = tl.zeros([CHUNK], dtype=tl.float32)
    for start in range(0, n_cols, CHUNK):
        cols = start + offs
        x = tl.load(x_row + cols, mask=cols < n_cols, other=-float("inf")).to(tl.float32)
        m_new = tl.maximum(m, x)
        # A lane that has seen only padding keeps m = -inf; scale its (zero) sum by 1, not by exp(nan).
        scale = tl.where(m_new == -float("inf"), 1.0, tl.exp(m - m_new))
        s = s * scale + tl.where(m_new == -float("inf"), 0.0, tl.exp(x - m_new))
        m = m_new
    row_max = tl.max(m, axis=0)
    total = tl.sum(tl.where(m == -float("inf"), 0.0, s * tl.exp(m - row_max)), axis=0)
    inv = 1.0 / total
    for start in range(0, n_cols, CHUNK):
        cols = start + offs
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_row + cols, (tl.exp(x - row_max) * inv).to(y_ptr.dtype.element_ty), mask=mask)


def custom_kernel(x):
    n_rows, n_cols = x.shape
    y = torch.empty_like(x)
    chunk = min(KNOBS["CHUNK"], triton.next_power_of_2(n_cols))
    softmax_kernel[(n_rows,)](x, y, n_cols, x.stride(0), y.stride(0), CHUNK=chunk, num_warps=KNOBS["WARPS"])
    return y
