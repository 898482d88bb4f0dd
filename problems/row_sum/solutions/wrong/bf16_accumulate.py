# expect: correctness: max_rel
"""Wrong: keeps the running per-lane totals in bfloat16 "to match the input". Each add rounds the total to 8
significant bits; for float32 inputs even the first add rounds the input itself (up to 2e-3 of it, 20x the
tolerance of 1e-4 at a sum near 1), and over a million-element row the rounding of totals that climb before they
cancel drifts by 1e-2 or more. Only conversions touch bf16 values here (the CPU interpreter mishandles arithmetic
on bf16)."""
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
        x = tl.load(x_row + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
        acc = (acc + x).to(tl.bfloat16).to(tl.float32)
    total = tl.sum(acc, axis=0).to(tl.bfloat16)
    tl.store(out_ptr + row, total.to(tl.float32))


def custom_kernel(x):
    x = x.contiguous()
    n_rows, n_cols = x.shape
    out = torch.empty((n_rows,), dtype=torch.float32, device=x.device)
    row_sum_kernel[(n_rows,)](out, x, n_cols, x.stride(0), BLOCK=1024)
    return out
