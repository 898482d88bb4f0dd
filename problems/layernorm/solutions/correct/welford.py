# expect: ok
"""Correct: Welford's running mean and sum of squared deviations (M2), one row per program, over CHUNK-wide pieces.

Each lane keeps its own count, mean and M2 across chunks (a numerically stable update: no E[x^2] - E[x]^2). After
the loop all lanes are merged at once with the parallel form of Chan's formula, in plain sums:
mean = sum(count * lane_mean) / N and M2 = sum(lane_M2) + sum(count * (lane_mean - mean)^2). (A pairwise merge
through tl.reduce with a combine function is the usual alternative; the CPU interpreter runs that as a sequential
fold, one Python call per lane, which is slow and, over 2048 lanes, rounds a mean near 100 about 2048 times.)
Pass 2 re-reads the row and stores. Registers hold one chunk, so any row length works without spilling.
"""
import torch
import triton
import triton.language as tl


@triton.jit
def layernorm_welford_kernel(out_ptr, x_ptr, w_ptr, b_ptr, x_row_stride, out_row_stride, n_cols, eps,
                             CHUNK: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * x_row_stride
    out_row = out_ptr + row * out_row_stride
    offs = tl.arange(0, CHUNK)
    mean = tl.zeros([CHUNK], dtype=tl.float32)
    m2 = tl.zeros([CHUNK], dtype=tl.float32)
    count = tl.zeros([CHUNK], dtype=tl.float32)
    for start in range(0, n_cols, CHUNK):
        cols = start + offs
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
        new_count = count + mask.to(tl.float32)
        delta = tl.where(mask, x - mean, 0.0)
        mean += delta / tl.maximum(new_count, 1.0)
        m2 += delta * tl.where(mask, x - mean, 0.0)
        count = new_count
    row_mean = tl.sum(count * mean, axis=0) / n_cols
    dev = mean - row_mean
    row_m2 = tl.sum(m2, axis=0) + tl.sum(count * dev * dev, axis=0)
    rstd = 1.0 / tl.sqrt(row_m2 / n_cols + eps)
    for start in range(0, n_cols, CHUNK):
        cols = start + offs
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(out_row + cols, ((x - row_mean) * rstd * w + b).to(out_ptr.dtype.element_ty), mask=mask)


def custom_kernel(x, weight, bias):
    x = x.contiguous()
    weight = weight.contiguous()
    bias = bias.contiguous()
    n_rows, n_cols = x.shape
    out = torch.empty_like(x)
    CHUNK = min(2048, triton.next_power_of_2(n_cols))
    num_warps = 4 if CHUNK <= 1024 else 8
    layernorm_welford_kernel[(n_rows,)](out, x, weight, bias, x.stride(0), out.stride(0), n_cols, 1e-5,
                                        CHUNK=CHUNK, num_warps=num_warps)
    return out
