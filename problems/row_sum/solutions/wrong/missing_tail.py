# expect: correctness: max_rel
"""Wrong: unmasked chunk loop whose bound range(0, N - BLOCK + 1, BLOCK) covers whole chunks only, so the last
N % BLOCK columns of every row are left out of its sum (and rows shorter than BLOCK sum to 0). Right only when N is
a multiple of BLOCK, as every benchmark N is."""
import torch
import triton
import triton.language as tl


@triton.jit
def row_sum_kernel(out_ptr, x_ptr, n_cols, x_row_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * x_row_stride
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols - BLOCK + 1, BLOCK):
        acc += tl.load(x_row + start + offs).to(tl.float32)
    tl.store(out_ptr + row, tl.sum(acc, axis=0))


def custom_kernel(x):
    x = x.contiguous()
    n_rows, n_cols = x.shape
    out = torch.empty((n_rows,), dtype=torch.float32, device=x.device)
    row_sum_kernel[(n_rows,)](out, x, n_cols, x.stride(0), BLOCK=256)
    return out
