"""Seed: LayerNorm in Triton, one row per program.

Rows up to KNOBS["MAX_SINGLE_BLOCK"] elements (after padding to a power of two) are held in registers in one block
and normalised in two passes over the registers: the mean, then the mean of squared deviations from it (never
E[x^2] - E[x]^2, which cancels in float32 when the mean is large against the spread). Longer rows are looped over in
chunks of KNOBS["CHUNK"]: pass 1 takes the mean of the first chunk as a shift K and keeps per-lane sums of (x - K)
and (x - K)^2, so var = E[(x - K)^2] - E[x - K]^2 is computed on values centred near zero and does not cancel;
pass 2 re-reads the row and stores. All arithmetic is float32; the result is rounded to the output dtype once.
"""
import torch
import triton
import triton.language as tl

EPS = 1e-5

# Knobs a tuner may adjust; the wrapper reads them at every call.
KNOBS = {
    "MAX_SINGLE_BLOCK": 32768,  # longest padded row kept in one block
    "CHUNK": 4096,  # chunk width of the looped kernel
    "LOOP_WARPS": 8,  # num_warps of the looped kernel
}
KNOB_SPACE = {"MAX_SINGLE_BLOCK": [8192, 16384, 32768], "CHUNK": [1024, 2048, 4096, 8192], "LOOP_WARPS": [4, 8, 16]}


@triton.jit
def layernorm_row_kernel(out_ptr, x_ptr, w_ptr, b_ptr, x_row_stride, out_row_stride, n_cols, eps,
                         BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK_SIZE)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * x_row_stride + offs, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / n_cols
    # Padding lanes hold 0 - mean after the subtraction: zero them so they add nothing to the variance.
    d = tl.where(mask, x - mean, 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(d * d, axis=0) / n_cols + eps)
    w = tl.load(w_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    y = d * rstd * w + b
    tl.store(out_ptr + row * out_row_stride + offs, y.to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def layernorm_looped_kernel(out_ptr, x_ptr, w_ptr, b_ptr, x_row_stride, out_row_stride, n_cols, eps,
                            CHUNK: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * x_row_stride
    out_row = out_ptr + row * out_row_stride
    offs = tl.arange(0, CHUNK)
    # The shift: the mean of the first chunk, close to the row mean (within spread / sqrt(CHUNK) for random data).
    first = offs < n_cols
    x0 = tl.load(x_row + offs, mask=first, other=0.0).to(tl.float32)
    shift = tl.sum(x0, axis=0) / tl.sum(first.to(tl.float32), axis=0)
    # Pass 1: per-lane sums of the shifted values and their squares.
    s1 = tl.zeros([CHUNK], dtype=tl.float32)
    s2 = tl.zeros([CHUNK], dtype=tl.float32)
    for start in range(0, n_cols, CHUNK):
        cols = start + offs
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
        d = tl.where(mask, x - shift, 0.0)
        s1 += d
        s2 += d * d
    mean_d = tl.sum(s1, axis=0) / n_cols
    var = tl.maximum(tl.sum(s2, axis=0) / n_cols - mean_d * mean_d, 0.0)
    mean = shift + mean_d
    rstd = 1.0 / tl.sqrt(var + eps)
    # Pass 2: normalise, scale, shift and store.
    for start in range(0, n_cols, CHUNK):
        cols = start + offs
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        y = (x - mean) * rstd * w + b
        tl.store(out_row + cols, y.to(out_ptr.dtype.element_ty), mask=mask)


def custom_kernel(x, weight, bias):
    x = x.contiguous()
    weight = weight.contiguous()
    bias = bias.contiguous()
    n_rows, n_cols = x.shape
    out = torch.empty_like(x)
    block = triton.next_power_of_2(n_cols)
    if block <= KNOBS["MAX_SINGLE_BLOCK"]:
        num_warps = 4 if block <= 2048 else (8 if block <= 8192 else 16)
        layernorm_row_kernel[(n_rows,)](
            out, x, weight, bias, x.stride(0), out.stride(0), n_cols, EPS, BLOCK_SIZE=block, num_warps=num_warps
        )
    else:
        layernorm_looped_kernel[(n_rows,)](
            out, x, weight, bias, x.stride(0), out.stride(0), n_cols, EPS, CHUNK=KNOBS["CHUNK"],
            num_warps=KNOBS["LOOP_WARPS"]
        )
    return out
