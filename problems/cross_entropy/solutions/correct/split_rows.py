# expect: ok
"""Correct: each row split across several programs, partial logsumexps combined by a second kernel.

For few rows and a long vocabulary, one program per row leaves SMs idle. Kernel 1 runs on a grid (M, SPLITS); each
program covers SPLIT_COLS columns of one row and writes that slice's max and sum of exp(x - max). Every slice holds at
least one column, so every partial max is finite. Kernel 2, one program, walks the rows in blocks of ROWS, combines
the SPLITS partials of each row (lse = M + log(sum_j s_j * exp(m_j - M))), subtracts the target logit, and sums the
losses and kept-row counts in fixed order, so the result is deterministic.
"""
import torch
import triton
import triton.language as tl


@triton.jit
def partial_lse_kernel(pmax_ptr, psum_ptr, logits_ptr, row_stride, n_cols, n_splits,
                       SPLIT_COLS: tl.constexpr, CHUNK: tl.constexpr):
    row = tl.program_id(0)
    split = tl.program_id(1)
    row_ptr = logits_ptr + row.to(tl.int64) * row_stride
    first = split * SPLIT_COLS
    end = tl.minimum(first + SPLIT_COLS, n_cols)
    offs = tl.arange(0, CHUNK)
    # The first chunk holds the slice's first column, so m is finite from the start.
    x = tl.load(row_ptr + first + offs, mask=first + offs < end, other=-float("inf")).to(tl.float32)
    m = tl.max(x, axis=0)
    s = tl.sum(tl.exp(x - m), axis=0)
    for start in range(first + CHUNK, end, CHUNK):
        cols = start + offs
        x = tl.load(row_ptr + cols, mask=cols < end, other=-float("inf")).to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, axis=0))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
    tl.store(pmax_ptr + row * n_splits + split, m)
    tl.store(psum_ptr + row * n_splits + split, s)


@triton.jit
def combine_mean_kernel(out_ptr, pmax_ptr, psum_ptr, logits_ptr, targets_ptr, row_stride, n_rows, n_splits,
                        ROWS: tl.constexpr, SPLITS_BLOCK: tl.constexpr):
    r = tl.arange(0, ROWS)
    j = tl.arange(0, SPLITS_BLOCK)
    total = tl.zeros([ROWS], dtype=tl.float32)
    count = tl.zeros([ROWS], dtype=tl.float32)
    for start in range(0, n_rows, ROWS):
        rows = start + r
        in_range = rows < n_rows
        mask = in_range[:, None] & (j[None, :] < n_splits)
        idx = rows[:, None] * n_splits + j[None, :]
        pm = tl.load(pmax_ptr + idx, mask=mask, other=-float("inf"))
        ps = tl.load(psum_ptr + idx, mask=mask, other=0.0)
        # Rows past the end have only -inf partials: give them max 0 so exp(-inf - 0) = 0, never nan.
        row_max = tl.where(in_range, tl.max(pm, axis=1), 0.0)
        lse = row_max + tl.log(tl.sum(ps * tl.exp(pm - row_max[:, None]), axis=1))
        t = tl.load(targets_ptr + rows, mask=in_range, other=-100)
        valid = t != -100
        picked = tl.load(logits_ptr + rows.to(tl.int64) * row_stride + tl.where(valid, t, 0),
                         mask=valid, other=0.0).to(tl.float32)
        total += tl.where(valid, lse - picked, 0.0)
        count += tl.where(valid, 1.0, 0.0)
    tl.store(out_ptr, tl.sum(total, axis=0) / tl.sum(count, axis=0))


def custom_kernel(logits, targets):
    logits = logits.contiguous()
    targets = targets.contiguous()
    n_rows, n_cols = logits.shape
    split_cols = min(8192, triton.next_power_of_2(n_cols))
    n_splits = triton.cdiv(n_cols, split_cols)
    chunk = min(2048, split_cols)
    pmax = torch.empty((n_rows, n_splits), dtype=torch.float32, device=logits.device)
    psum = torch.empty((n_rows, n_splits), dtype=torch.float32, device=logits.device)
    out = torch.empty((), dtype=torch.float32, device=logits.device)
    partial_lse_kernel[(n_rows, n_splits)](pmax, psum, logits, logits.stride(0), n_cols, n_splits,
                                           SPLIT_COLS=split_cols, CHUNK=chunk, num_warps=4)
    combine_mean_kernel[(1,)](out, pmax, psum, logits, targets, logits.stride(0), n_rows, n_splits,
                              ROWS=64, SPLITS_BLOCK=triton.next_power_of_2(n_splits), num_warps=4)
    return out
