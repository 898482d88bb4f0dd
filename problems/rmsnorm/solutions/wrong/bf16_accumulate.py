# expect: correctness: max_rel
"""Wrong: accumulates the sum of squares in bfloat16, per lane over chunks, and reduces it to a bfloat16 total.
Each square, each running sum and the total round to 8 significant bits, so 1/rms is off by 1e-3 or more: far
outside the float32 tolerance (1e-4). Long rows drift further (the CPU interpreter's conversion truncates, so there
each of the 40 chunk additions of a 40000-wide row rounds down, and the outputs come out 3% off in bf16 as well).
x itself and the final products stay in float32, so only the accumulation is at fault. (Written as float32
arithmetic with a round trip through bfloat16 after every step, which is what bfloat16 arithmetic computes; the CPU
interpreter mishandles arithmetic on bfloat16 values themselves.)"""
import torch
import triton
import triton.language as tl


@triton.jit
def rmsnorm_kernel(out_ptr, x_ptr, w_ptr, x_row_stride, out_row_stride, n_cols, eps, CHUNK: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * x_row_stride
    out_row = out_ptr + row * out_row_stride
    offs = tl.arange(0, CHUNK)
    acc = tl.zeros([CHUNK], dtype=tl.float32)
    for start in range(0, n_cols, CHUNK):
        cols = start + offs
        x = tl.load(x_row + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
        sq = (x * x).to(tl.bfloat16).to(tl.float32)
        acc = (acc + sq).to(tl.bfloat16).to(tl.float32)
    total = tl.sum(acc, axis=0).to(tl.bfloat16).to(tl.float32)
    inv_rms = 1.0 / tl.sqrt(total / n_cols + eps)
    for start in range(0, n_cols, CHUNK):
        cols = start + offs
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(out_row + cols, (x * inv_rms * w).to(out_ptr.dtype.element_ty), mask=mask)


def custom_kernel(x, weight):
    x = x.contiguous()
    n_rows, n_cols = x.shape
    out = torch.empty_like(x)
    CHUNK = min(1024, triton.next_power_of_2(n_cols))
    rmsnorm_kernel[(n_rows,)](out, x, weight, x.stride(0), out.stride(0), n_cols, 1e-6, CHUNK=CHUNK, num_warps=4)
    return out
