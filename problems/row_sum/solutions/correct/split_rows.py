# expect: ok
"""Correct: two kernels. The first splits every row into CHUNK-wide pieces, one program per (row, piece), each
writing its float32 partial sum to an (M, pieces) buffer; the second adds each row's partials. A few very long rows
(8 x 1048576) then keep the whole GPU busy, and the result does not depend on scheduling order (no atomics)."""
import torch
import triton
import triton.language as tl


@triton.jit
def partial_sum_kernel(part_ptr, x_ptr, n_cols, x_row_stride, n_parts, CHUNK: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    part = tl.program_id(1)
    x_row = x_ptr + row.to(tl.int64) * x_row_stride
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(part * CHUNK, part * CHUNK + CHUNK, BLOCK):
        cols = start + offs
        acc += tl.load(x_row + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
    tl.store(part_ptr + row * n_parts + part, tl.sum(acc, axis=0))


@triton.jit
def finish_kernel(out_ptr, part_ptr, n_parts, BLOCK_P: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK_P)
    parts = tl.load(part_ptr + row * n_parts + offs, mask=offs < n_parts, other=0.0)
    tl.store(out_ptr + row, tl.sum(parts, axis=0))


def custom_kernel(x):
    x = x.contiguous()
    n_rows, n_cols = x.shape
    chunk, block = 4096, 1024
    n_parts = triton.cdiv(n_cols, chunk)
    parts = torch.empty((n_rows, n_parts), dtype=torch.float32, device=x.device)
    partial_sum_kernel[(n_rows, n_parts)](parts, x, n_cols, x.stride(0), n_parts, CHUNK=chunk, BLOCK=block)
    out = torch.empty((n_rows,), dtype=torch.float32, device=x.device)
    finish_kernel[(n_rows,)](out, parts, n_parts, BLOCK_P=triton.next_power_of_2(n_parts))
    return out
