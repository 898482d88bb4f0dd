"""Seed: row softmax in Triton, one row per program.

Rows up to KNOBS["MAX_SINGLE_BLOCK"] elements are held in registers in one block (one read, one write of x).
Longer rows are looped over in chunks of KNOBS["CHUNK"]: pass 1 keeps a per-lane running max and rescaled sum
(online softmax), pass 2 re-reads the row, normalises and stores, so a 131072-wide row does not spill registers.
All arithmetic is float32 whatever the input dtype; the result is cast to the output dtype on store. The
`# section:` comments mark the parts `evolve trace` times.
"""
import torch
import triton
import triton.language as tl

# Knobs a tuner may adjust; the wrapper reads them at every call.
KNOBS = {
    # Longest row (after padding to a power of two) kept in one block. On the H200, 32768 in one block of 16 warps
    # ran at 0.95 of copy bandwidth (fp32 4096x32768) against 0.64 looped; 131072 looped ran at 0.61.
    "MAX_SINGLE_BLOCK": 32768,
    "CHUNK": 4096,  # chunk width of the looped kernel
    "LOOP_WARPS": 8,  # num_warps of the looped kernel
}
# The values the tuner may try (blocks over 32768 elements take ptxas a minute and spill).
KNOB_SPACE = {"MAX_SINGLE_BLOCK": [8192, 16384, 32768], "CHUNK": [1024, 2048, 4096, 8192], "LOOP_WARPS": [4, 8, 16]}


@triton.jit
def softmax_row_kernel(out_ptr, x_ptr, x_row_stride, out_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK_SIZE)
    mask = offs < n_cols
    # section: load
    x = tl.load(x_ptr + row * x_row_stride + offs, mask=mask, other=-float("inf")).to(tl.float32)
    # section: reduce
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    y = num / tl.sum(num, axis=0)
    # section: store
    tl.store(out_ptr + row * out_row_stride + offs, y.to(out_ptr.dtype.element_ty), mask=mask)
    # section: end


@triton.jit
def softmax_looped_kernel(out_ptr, x_ptr, x_row_stride, out_row_stride, n_cols, CHUNK: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * x_row_stride
    out_row = out_ptr + row * out_row_stride
    offs = tl.arange(0, CHUNK)
    # Pass 1: per-lane running max m and sum s of exp(x - m), rescaled when m grows.
    # section: pass1
    m = tl.full([CHUNK], -float("inf"), tl.float32)
    s = tl.zeros([CHUNK], dtype=tl.float32)
    for start in range(0, n_cols, CHUNK):
        cols = start + offs
        x = tl.load(x_row + cols, mask=cols < n_cols, other=-float("inf")).to(tl.float32)
        m_new = tl.maximum(m, x)
        # A lane that has only seen masked (-inf) values keeps s = 0 (avoids exp(-inf - -inf) = nan).
        alpha = tl.where(m_new == -float("inf"), 0.0, tl.exp(m - m_new))
        s = s * alpha + tl.where(m_new == -float("inf"), 0.0, tl.exp(x - m_new))
        m = m_new
    # section: combine
    row_max = tl.max(m, axis=0)
    row_sum = tl.sum(s * tl.exp(m - row_max), axis=0)
    inv = 1.0 / row_sum
    # Pass 2: normalise and store.
    # section: pass2
    for start in range(0, n_cols, CHUNK):
        cols = start + offs
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=-float("inf")).to(tl.float32)
        y = tl.exp(x - row_max) * inv
        tl.store(out_row + cols, y.to(out_ptr.dtype.element_ty), mask=mask)
    # section: end


def custom_kernel(x):
    x = x.contiguous()
    n_rows, n_cols = x.shape
    out = torch.empty_like(x)
    block = triton.next_power_of_2(n_cols)
    if block <= KNOBS["MAX_SINGLE_BLOCK"]:
        num_warps = 4 if block <= 2048 else (8 if block <= 8192 else 16)
        softmax_row_kernel[(n_rows,)](
            out, x, x.stride(0), out.stride(0), n_cols, BLOCK_SIZE=block, num_warps=num_warps
        )
    else:
        softmax_looped_kernel[(n_rows,)](
            out, x, x.stride(0), out.stride(0), n_cols, CHUNK=KNOBS["CHUNK"], num_warps=KNOBS["LOOP_WARPS"]
        )
    return out
