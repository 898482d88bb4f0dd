# expect: correctness: max_rel
"""Wrong: "halves the target traffic" by handing the kernel targets.view(torch.int32), which reinterprets the bytes
instead of converting the values. Element i of that view is the low word of target i // 2 (i even) or its high word
(i odd: 0, or -1 for an ignored target). Row 0 still reads its own target, so M = 1 comes out right; every other row
gets another row's target or column 0 or -1 (the previous row's last logit), and the kept-row count is wrong too."""
import torch
import triton
import triton.language as tl


@triton.jit
def row_loss_kernel(loss_ptr, valid_ptr, logits_ptr, targets_ptr, row_stride, n_cols, CHUNK: tl.constexpr):
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
    tl.store(valid_ptr + row, tl.where(valid, 1.0, 0.0))


@triton.jit
def mean_kernel(out_ptr, loss_ptr, valid_ptr, n_rows, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    total = tl.zeros([BLOCK], dtype=tl.float32)
    count = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_rows, BLOCK):
        rows = start + offs
        in_range = rows < n_rows
        total += tl.load(loss_ptr + rows, mask=in_range, other=0.0)
        count += tl.load(valid_ptr + rows, mask=in_range, other=0.0)
    tl.store(out_ptr, tl.sum(total, axis=0) / tl.sum(count, axis=0))


def custom_kernel(logits, targets):
    logits = logits.contiguous()
    n_rows, n_cols = logits.shape
    targets32 = targets.view(torch.int32)  # a reinterpretation, not a conversion
    losses = torch.empty(n_rows, dtype=torch.float32, device=logits.device)
    valid = torch.empty(n_rows, dtype=torch.float32, device=logits.device)
    out = torch.empty((), dtype=torch.float32, device=logits.device)
    chunk = min(4096, triton.next_power_of_2(n_cols))
    row_loss_kernel[(n_rows,)](losses, valid, logits, targets32, logits.stride(0), n_cols, CHUNK=chunk, num_warps=8)
    mean_kernel[(1,)](out, losses, valid, n_rows, BLOCK=1024)
    return out
