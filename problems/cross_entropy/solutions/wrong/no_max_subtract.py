# expect: run: not finite
"""Wrong: computes logsumexp as log(sum(exp(x))) without subtracting the row max. exp overflows float32 above 88.7,
and every input holds a kept row with a logit of 90 or more, so that row's loss is inf and so is the mean."""
import torch
import triton
import triton.language as tl


@triton.jit
def row_loss_kernel(loss_ptr, logits_ptr, targets_ptr, row_stride, n_cols, CHUNK: tl.constexpr):
    row = tl.program_id(0)
    row_ptr = logits_ptr + row.to(tl.int64) * row_stride
    offs = tl.arange(0, CHUNK)
    s = 0.0
    for start in range(0, n_cols, CHUNK):
        cols = start + offs
        x = tl.load(row_ptr + cols, mask=cols < n_cols, other=-float("inf")).to(tl.float32)
        s += tl.sum(tl.exp(x), axis=0)
    target = tl.load(targets_ptr + row)
    valid = target != -100
    picked = tl.load(row_ptr + tl.where(valid, target, 0)).to(tl.float32)
    tl.store(loss_ptr + row, tl.where(valid, tl.log(s) - picked, 0.0))


@triton.jit
def mean_kernel(out_ptr, loss_ptr, targets_ptr, n_rows, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    total = tl.zeros([BLOCK], dtype=tl.float32)
    count = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_rows, BLOCK):
        rows = start + offs
        in_range = rows < n_rows
        total += tl.load(loss_ptr + rows, mask=in_range, other=0.0)
        count += tl.where(tl.load(targets_ptr + rows, mask=in_range, other=-100) != -100, 1.0, 0.0)
    tl.store(out_ptr, tl.sum(total, axis=0) / tl.sum(count, axis=0))


def custom_kernel(logits, targets):
    logits = logits.contiguous()
    n_rows, n_cols = logits.shape
    losses = torch.empty(n_rows, dtype=torch.float32, device=logits.device)
    out = torch.empty((), dtype=torch.float32, device=logits.device)
    chunk = min(4096, triton.next_power_of_2(n_cols))
    row_loss_kernel[(n_rows,)](losses, logits, targets, logits.stride(0), n_cols, CHUNK=chunk, num_warps=8)
    mean_kernel[(1,)](out, losses, targets, n_rows, BLOCK=1024)
    return out
