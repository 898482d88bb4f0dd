# expect: correctness: max_rel
"""Wrong: returns the sum of the kept rows' losses (reduction='sum') instead of their mean. Right only when exactly
one row is kept (the M = 1 and M = 2 tests); off by the kept-row count everywhere else."""
import torch
import triton
import triton.language as tl


@triton.jit
def row_loss_kernel(loss_ptr, logits_ptr, targets_ptr, row_stride, n_cols, CHUNK: tl.constexpr):
    row = tl.program_id(0)
    row_ptr = logits_ptr + row.to(tl.int64) * row_stride
    offs = tl.arange(0, CHUNK)
    x = tl.load(row_ptr + offs, mask=offs < n_cols, other=-float("inf")).to(tl.float32)
    m = tl.max(x, axis=0)
    s = tl.sum(tl.exp(x - m), axis=0)
    for start in range(CHUNK, n_cols, CHUNK):
        cols = start + offs
        x = tl.load(row_ptr + cols, mask=cols < n_cols, other=-float("inf")).to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, axis=0))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
    target = tl.load(targets_ptr + row)
    valid = target != -100
    picked = tl.load(row_ptr + tl.where(valid, target, 0)).to(tl.float32)
    tl.store(loss_ptr + row, tl.where(valid, m + tl.log(s) - picked, 0.0))


@triton.jit
def sum_kernel(out_ptr, loss_ptr, n_rows, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    total = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_rows, BLOCK):
        rows = start + offs
        total += tl.load(loss_ptr + rows, mask=rows < n_rows, other=0.0)
    tl.store(out_ptr, tl.sum(total, axis=0))


def custom_kernel(logits, targets):
    logits = logits.contiguous()
    n_rows, n_cols = logits.shape
    losses = torch.empty(n_rows, dtype=torch.float32, device=logits.device)
    out = torch.empty((), dtype=torch.float32, device=logits.device)
    chunk = min(4096, triton.next_power_of_2(n_cols))
    row_loss_kernel[(n_rows,)](losses, logits, targets, logits.stride(0), n_cols, CHUNK=chunk, num_warps=8)
    sum_kernel[(1,)](out, losses, n_rows, BLOCK=1024)
    return out
