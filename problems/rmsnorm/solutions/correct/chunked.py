# expect: ok
"""Correct: every row walked in CHUNK-wide pieces, whatever its length, one row per program.

Pass 1 adds x * x into a per-lane float32 accumulator (one reduction across lanes after the loop, not one per chunk);
pass 2 re-reads the row with the weight and stores x * inv_rms * weight. Registers hold one chunk, so any row length
works without spilling; the second read of a row usually hits L2.
"""
import torch
import triton
import triton.language as tl


@triton.jit
def rmsnorm_chunked_kernel(out_ptr, x_ptr, w_ptr, x_row_stride, out_row_stride, n_cols, eps, CHUNK: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * x_row_stride
    out_row = out_ptr + row * out_row_stride
    offs = tl.arange(0, CHUNK)
    acc = tl.zeros([CHUNK], dtype=tl.float32)
    for start in range(0, n_cols, CHUNK):
        cols = start + offs
        x = tl.load(x_row + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
        acc += x * x
    inv_rms = tl.math.rsqrt(tl.sum(acc, axis=0) / n_cols + eps)
    for start in range(0, n_cols, CHUNK):
        cols = start + offs
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(out_row + cols, (x * inv_rms * w).to(out_ptr.dtype.element_ty), mask=mask)


def custom_kernel(x, weight):
    x = x.contiguous()
    weight = weight.contiguous()
    n_rows, n_cols = x.shape
    out = torch.empty_like(x)
    CHUNK = min(2048, triton.next_power_of_2(n_cols))
    num_warps = 4 if CHUNK <= 1024 else 8
    rmsnorm_chunked_kernel[(n_rows,)](out, x, weight, x.stride(0), out.stride(0), n_cols, 1e-6,
                                      CHUNK=CHUNK, num_warps=num_warps)
    return out
