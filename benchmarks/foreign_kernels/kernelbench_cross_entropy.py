# Solves KernelBench level1/95_CrossEntropyLoss.py: mean F.cross_entropy of float32 (batch, classes) logits.
"""Two launches. Kernel 1, one program per row: logsumexp of the row minus the target's logit, written to a float32
buffer of per-row losses (0 for a row whose target is F.cross_entropy's default ignore index, -100). A row of up to
CHUNK classes (KernelBench's 4096) is loaded once and reduced in registers; a longer one is walked in chunks with a
per-lane running maximum and rescaled sum. Kernel 2, a single program, adds the losses and counts the kept rows in a
fixed order (so the result is deterministic) and writes their mean as a 0-d float32 tensor."""
import torch
import triton
import triton.language as tl

IGNORE_INDEX = -100
KNOBS = {"CHUNK": 4096, "WARPS": 8}
KNOB_SPACE = {"CHUNK": [1024, 2048, 4096, 8192], "WARPS": [4, 8, 16]}


@triton.jit
def row_loss_kernel(logits_ptr, targets_ptr, loss_ptr, n_cols, row_stride, IGNORE: tl.constexpr,
                    CHUNK: tl.constexpr, ONE_CHUNK: tl.constexpr):
    row = tl.program_id(0)
    row_ptr = logits_ptr + row.to(tl.int64) * row_stride
    offs = tl.arange(0, CHUNK)
    if ONE_CHUNK:
        x = tl.load(row_ptr + offs, mask=offs < n_cols, other=-float("inf")).to(tl.float32)
        row_max = tl.max(x, axis=0)
        lse = row_max + tl.log(tl.sum(tl.exp(x - row_max), axis=0))
    else:
        m = tl.full([CHUNK], -float("inf"), dtype=tl.float32)
        s = tl.zeros([CHUNK], dtype=tl.float32)
        for start in range(0, n_cols, CHUNK):
            cols = start + offs
            x = tl.load(row_ptr + cols, mask=cols < n_cols, other=-float("inf")).to(tl.float32)
            m_new = tl.maximum(m, x)
            # A lane that has seen only padding keeps m = -inf; keep its sum 0 rather than exp(nan).
            scale = tl.where(m_new == -float("inf"), 1.0, tl.exp(m - m_new))
            s = s * scale + tl.where(m_new == -float("inf"), 0.0, tl.exp(x - m_new))
            m = m_new
        row_max = tl.max(m, axis=0)
        lse = row_max + tl.log(tl.sum(tl.where(m == -float("inf"), 0.0, s * tl.exp(m - row_max)), axis=0))
    target = tl.load(targets_ptr + row)
    kept = target != IGNORE
    picked = tl.load(row_ptr + tl.where(kept, target, 0)).to(tl.float32)
    tl.store(loss_ptr + row, tl.where(kept, lse - picked, 0.0))


@triton.jit
def mean_kernel(loss_ptr, targets_ptr, out_ptr, n_rows, IGNORE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    total = tl.zeros([BLOCK], dtype=tl.float32)
    count = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_rows, BLOCK):
        rows = start + offs
        ok = rows < n_rows
        total += tl.load(loss_ptr + rows, mask=ok, other=0.0)
        count += tl.where(tl.load(targets_ptr + rows, mask=ok, other=IGNORE) != IGNORE, 1.0, 0.0)
    tl.store(out_ptr, tl.sum(total, axis=0) / tl.sum(count, axis=0))


def custom_kernel(logits, targets):
    n_rows, n_cols = logits.shape
    losses = torch.empty(n_rows, dtype=torch.float32, device=logits.device)
    out = torch.empty((), dtype=torch.float32, device=logits.device)
    chunk = min(KNOBS["CHUNK"], triton.next_power_of_2(n_cols))
    row_loss_kernel[(n_rows,)](logits, targets, losses, n_cols, logits.stride(0), IGNORE=IGNORE_INDEX, CHUNK=chunk,
                               ONE_CHUNK=chunk >= n_cols, num_warps=KNOBS["WARPS"])
    mean_kernel[(1,)](losses, targets, out, n_rows, IGNORE=IGNORE_INDEX, BLOCK=1024, num_warps=4)
    return out
