# expect: ok
"""Correct: loads a BLOCK x BLOCK tile of x, transposes it in registers with tl.trans, and stores it with out's own
row-major addressing (out rows are the tile's columns). Edge tiles are masked with the transposed mask."""
import torch
import triton
import triton.language as tl


@triton.jit
def transpose_kernel(out_ptr, x_ptr, n_rows, n_cols, BLOCK: tl.constexpr):
    rows = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    tile = tl.load(x_ptr + rows[:, None] * n_cols + cols[None, :], mask=mask, other=0.0)
    # out has n_cols rows of n_rows elements; its row index is x's column index.
    out_offs = cols[:, None] * n_rows + rows[None, :]
    out_mask = (cols[:, None] < n_cols) & (rows[None, :] < n_rows)
    tl.store(out_ptr + out_offs, tl.trans(tile), mask=out_mask)


def custom_kernel(x):
    x = x.contiguous()
    n_rows, n_cols = x.shape
    out = torch.empty((n_cols, n_rows), dtype=x.dtype, device=x.device)
    block = 32
    grid = (triton.cdiv(n_rows, block), triton.cdiv(n_cols, block))
    transpose_kernel[grid](out, x, n_rows, n_cols, BLOCK=block)
    return out
