"""Seed: mean cross-entropy in two Triton kernels, one program per row, then one program for the mean.

Kernel 1 walks its row in chunks of KNOBS["CHUNK"] with a scalar online logsumexp: a running max m and a running
sum s of exp(x - m), rescaled by exp(m_old - m_new) when a chunk raises the max. It writes lse - logits[row, target]
to a float32 buffer of M per-row losses (0 for a row whose target is the ignore index -100). Every row is read, even
ignored ones. Kernel 2 (a single program) sums the losses and counts the kept rows in fixed order, so the result is
deterministic, and writes the float32 mean. All arithmetic is float32 whatever the logits' dtype.
"""
import torch
import triton
import triton.language as tl

# Knobs a tuner may adjust; the wrapper reads them at every call.
KNOBS = {
    "CHUNK": 4096,  # columns per loop step of the row kernel
    "ROW_WARPS": 8,  # num_warps of the row kernel
}
KNOB_SPACE = {"CHUNK": [1024, 2048, 4096, 8192], "ROW_WARPS": [4, 8, 16]}

IGNORE_INDEX = -100


@triton.jit
def row_loss_kernel(loss_ptr, logits_ptr, targets_ptr, row_stride, n_cols,
                    IGNORE: tl.constexpr, CHUNK: tl.constexpr):
    row = tl.program_id(0)
    # 64-bit row offset: M * V passes 2**31 elements for large vocabularies.
    row_ptr = logits_ptr + row.to(tl.int64) * row_stride
    offs = tl.arange(0, CHUNK)
    # The first chunk always holds column 0, so m is finite from here on and exp(m - m_new) never sees -inf - -inf.
    x = tl.load(row_ptr + offs, mask=offs < n_cols, other=-float("inf")).to(tl.float32)
    m = tl.max(x, axis=0)
    s = tl.sum(tl.exp(x - m), axis=0)
    for start in range(CHUNK, n_cols, CHUNK):
        cols = start + offs
        x = tl.load(row_ptr + cols, mask=cols < n_cols, other=-float("inf")).to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, axis=0))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
    lse = m + tl.log(s)
    target = tl.load(targets_ptr + row)
    valid = target != IGNORE
    # An ignored row's target (-100) is no column; read column 0 instead and discard it.
    picked = tl.load(row_ptr + tl.where(valid, target, 0)).to(tl.float32)
    tl.store(loss_ptr + row, tl.where(valid, lse - picked, 0.0))


@triton.jit
def mean_kernel(out_ptr, loss_ptr, targets_ptr, n_rows, IGNORE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    total = tl.zeros([BLOCK], dtype=tl.float32)
    count = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_rows, BLOCK):
        rows = start + offs
        in_range = rows < n_rows
        total += tl.load(loss_ptr + rows, mask=in_range, other=0.0)
        t = tl.load(targets_ptr + rows, mask=in_range, other=IGNORE)
        count += tl.where(t != IGNORE, 1.0, 0.0)
    tl.store(out_ptr, tl.sum(total, axis=0) / tl.sum(count, axis=0))


def custom_kernel(logits, targets):
    logits = logits.contiguous()
    targets = targets.contiguous()
    n_rows, n_cols = logits.shape
    losses = torch.empty(n_rows, dtype=torch.float32, device=logits.device)
    out = torch.empty((), dtype=torch.float32, device=logits.device)
    chunk = min(KNOBS["CHUNK"], triton.next_power_of_2(n_cols))
    row_loss_kernel[(n_rows,)](losses, logits, targets, logits.stride(0), n_cols,
                               IGNORE=IGNORE_INDEX, CHUNK=chunk, num_warps=KNOBS["ROW_WARPS"])
    mean_kernel[(1,)](out, losses, targets, n_rows, IGNORE=IGNORE_INDEX, BLOCK=1024, num_warps=4)
    return out
