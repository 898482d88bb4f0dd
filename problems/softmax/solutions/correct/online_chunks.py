# expect: ok
"""Correct: online softmax over chunks, one row per program.

Pass 1 walks the row in CHUNK-wide pieces keeping a scalar running max m and a running sum s of exp(x - m); when a
chunk raises the max, s is rescaled by exp(m_old - m_new). Pass 2 re-reads the row and writes exp(x - m) / s.
Registers hold one chunk, so any row length works without spilling.
"""
import torch
import triton
import triton.language as tl


@triton.jit
def online_softmax_kernel(out_ptr, x_ptr, x_row_stride, out_row_stride, n_cols, CHUNK: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * x_row_stride
    out_row = out_ptr + row * out_row_stride
    offs = tl.arange(0, CHUNK)
    # The first chunk always holds column 0, so m is finite from here on.
    x = tl.load(x_row + offs, mask=offs < n_cols, other=-float("inf")).to(tl.float32)
    m = tl.max(x, axis=0)
    s = tl.sum(tl.exp(x - m), axis=0)
    for start in range(CHUNK, n_cols, CHUNK):
        cols = start + offs
        x = tl.load(x_row + cols, mask=cols < n_cols, other=-float("inf")).to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, axis=0))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
    inv = 1.0 / s
    for start in range(0, n_cols, CHUNK):
        cols = start + offs
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=-float("inf")).to(tl.float32)
        tl.store(out_row + cols, (tl.exp(x - m) * inv).to(out_ptr.dtype.element_ty), mask=mask)


def custom_kernel(x):
    x = x.contiguous()
    n_rows, n_cols = x.shape
    out = torch.empty_like(x)
    CHUNK = min(4096, triton.next_power_of_2(n_cols))
    num_warps = 4 if CHUNK <= 2048 else 8
    online_softmax_kernel[(n_rows,)](out, x, x.stride(0), out.stride(0), n_cols, CHUNK=CHUNK, num_warps=num_warps)
    return out
