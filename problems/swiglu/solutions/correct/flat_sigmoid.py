# expect: ok
"""Correct: the output seen as one flat array of M * N elements, BLOCK per program, 1-D grid.

Each element's row and column come from its flat index (row = i // N, col = i % N); gate sits at row * 2N + col and
up N further on. The sigmoid is tl.sigmoid, in float32.
"""
import torch
import triton
import triton.language as tl


@triton.jit
def swiglu_flat_kernel(out_ptr, x_ptr, n_cols, n_elements, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    row = offs // n_cols
    col = offs % n_cols
    src = x_ptr + row * (2 * n_cols) + col
    gate = tl.load(src, mask=mask, other=0.0).to(tl.float32)
    up = tl.load(src + n_cols, mask=mask, other=0.0).to(tl.float32)
    y = gate * tl.sigmoid(gate) * up
    tl.store(out_ptr + offs, y.to(out_ptr.dtype.element_ty), mask=mask)


def custom_kernel(x):
    x = x.contiguous()
    n_rows, width = x.shape
    n_cols = width // 2
    out = torch.empty((n_rows, n_cols), dtype=x.dtype, device=x.device)
    n_elements = n_rows * n_cols
    swiglu_flat_kernel[(triton.cdiv(n_elements, 2048),)](out, x, n_cols, n_elements, BLOCK=2048, num_warps=8)
    return out
