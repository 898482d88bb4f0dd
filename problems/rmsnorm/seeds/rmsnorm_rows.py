"""Seed: RMSNorm in Triton, one row per program.

Rows up to KNOBS["MAX_SINGLE_BLOCK"] elements (after padding to a power of two) are held in registers in one block:
one read of x, one of the weight, one write. Longer rows are looped over in chunks of KNOBS["CHUNK"]: pass 1 keeps a
per-lane running sum of squares, pass 2 re-reads the row, scales it and stores, so a very long row does not spill.
The sum of squares, 1/rms and the products with the weight are all float32 whatever the input dtype; the result is
rounded to the output dtype once, on store.
"""
import torch
import triton
import triton.language as tl

EPS = 1e-6

# Knobs a tuner may adjust; the wrapper reads them at every call.
KNOBS = {
    "MAX_SINGLE_BLOCK": 32768,  # longest padded row kept in one block
    "CHUNK": 4096,  # chunk width of the looped kernel
    "LOOP_WARPS": 8,  # num_warps of the looped kernel
}
KNOB_SPACE = {"MAX_SINGLE_BLOCK": [8192, 16384, 32768], "CHUNK": [1024, 2048, 4096, 8192], "LOOP_WARPS": [4, 8, 16]}


@triton.jit
def rmsnorm_row_kernel(out_ptr, x_ptr, w_ptr, x_row_stride, out_row_stride, n_cols, eps,
                       BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK_SIZE)
    mask = offs < n_cols
    # Masked lanes load 0: they add nothing to the sum of squares, which is divided by n_cols, not BLOCK_SIZE.
    x = tl.load(x_ptr + row * x_row_stride + offs, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    inv_rms = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    y = x * inv_rms * w
    tl.store(out_ptr + row * out_row_stride + offs, y.to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def rmsnorm_looped_kernel(out_ptr, x_ptr, w_ptr, x_row_stride, out_row_stride, n_cols, eps, CHUNK: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * x_row_stride
    out_row = out_ptr + row * out_row_stride
    offs = tl.arange(0, CHUNK)
    # Pass 1: per-lane sums of squares, reduced across lanes once after the loop.
    acc = tl.zeros([CHUNK], dtype=tl.float32)
    for start in range(0, n_cols, CHUNK):
        cols = start + offs
        x = tl.load(x_row + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
        acc += x * x
    inv_rms = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / n_cols + eps)
    # Pass 2: scale and store.
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
    block = triton.next_power_of_2(n_cols)
    if block <= KNOBS["MAX_SINGLE_BLOCK"]:
        num_warps = 4 if block <= 2048 else (8 if block <= 8192 else 16)
        rmsnorm_row_kernel[(n_rows,)](
            out, x, weight, x.stride(0), out.stride(0), n_cols, EPS, BLOCK_SIZE=block, num_warps=num_warps
        )
    else:
        rmsnorm_looped_kernel[(n_rows,)](
            out, x, weight, x.stride(0), out.stride(0), n_cols, EPS, CHUNK=KNOBS["CHUNK"],
            num_warps=KNOBS["LOOP_WARPS"]
        )
    return out
