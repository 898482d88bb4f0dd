# expect: ok
"""Correct: one row per program, per-lane online logsumexp, atomics for the mean, ignored rows never read.

A program first loads its target; an ignored row returns at once, so its logits are never read. Otherwise it walks
the row in CHUNK-wide pieces keeping a running max and rescaled sum per lane (one reduction per row instead of one per
chunk), combines the lanes, and adds its loss and a count of 1 to a zeroed float32 pair with atomic adds. A second
one-program kernel divides the pair. The order of the atomic adds varies from run to run, so the last bits of the
result do too.
"""
import torch
import triton
import triton.language as tl


@triton.jit
def row_loss_atomic_kernel(acc_ptr, logits_ptr, targets_ptr, row_stride, n_cols, CHUNK: tl.constexpr):
    row = tl.program_id(0)
    target = tl.load(targets_ptr + row)
    if target != -100:
        row_ptr = logits_ptr + row.to(tl.int64) * row_stride
        offs = tl.arange(0, CHUNK)
        m = tl.full([CHUNK], -float("inf"), tl.float32)
        s = tl.zeros([CHUNK], dtype=tl.float32)
        for start in range(0, n_cols, CHUNK):
            cols = start + offs
            x = tl.load(row_ptr + cols, mask=cols < n_cols, other=-float("inf")).to(tl.float32)
            m_new = tl.maximum(m, x)
            # A lane that has seen only padding keeps m = -inf and s = 0 (exp(-inf - -inf) would be nan).
            seen = m_new > -float("inf")
            s = s * tl.where(seen, tl.exp(m - m_new), 0.0) + tl.where(seen, tl.exp(x - m_new), 0.0)
            m = m_new
        row_max = tl.max(m, axis=0)
        lse = row_max + tl.log(tl.sum(s * tl.exp(m - row_max), axis=0))
        picked = tl.load(row_ptr + target).to(tl.float32)
        tl.atomic_add(acc_ptr, lse - picked)
        tl.atomic_add(acc_ptr + 1, 1.0)


@triton.jit
def divide_kernel(out_ptr, acc_ptr):
    tl.store(out_ptr, tl.load(acc_ptr) / tl.load(acc_ptr + 1))


def custom_kernel(logits, targets):
    logits = logits.contiguous()
    targets = targets.contiguous()
    n_rows, n_cols = logits.shape
    acc = torch.zeros(2, dtype=torch.float32, device=logits.device)  # loss sum, kept-row count
    out = torch.empty((), dtype=torch.float32, device=logits.device)
    chunk = min(2048, triton.next_power_of_2(n_cols))
    row_loss_atomic_kernel[(n_rows,)](acc, logits, targets, logits.stride(0), n_cols, CHUNK=chunk, num_warps=8)
    divide_kernel[(1,)](out, acc, num_warps=1)
    return out
