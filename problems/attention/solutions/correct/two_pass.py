# expect: ok
"""Correct: two passes over the keys instead of one online pass.

Pass 1 computes each row's maximum m and sum l of exp(s - m) (l rescaled when m grows, a scalar per row). Pass 2
recomputes the scores, forms the final probabilities p = exp(s - m) / l, casts them to bfloat16 and accumulates p @ v,
so the accumulator is never rescaled. It does q k^T twice (a third more flops than flash attention), with natural
exp instead of exp2, BLOCK_M 64 and BLOCK_N 32.
"""
import torch
import triton
import triton.language as tl


@triton.jit
def _scores(q, k_ptr, base, start_n, offs_n, offs_d, offs_m, seq_len, scale, CAUSAL: tl.constexpr,
            HEAD_DIM: tl.constexpr):
    cols = start_n + offs_n
    k = tl.load(k_ptr + base + cols[None, :] * HEAD_DIM + offs_d[:, None], mask=cols[None, :] < seq_len, other=0.0)
    s = tl.dot(q, k) * scale
    valid = cols[None, :] < seq_len
    if CAUSAL:
        valid = valid & (cols[None, :] <= offs_m[:, None])
    return tl.where(valid, s, -float("inf"))


@triton.jit
def two_pass_kernel(q_ptr, k_ptr, v_ptr, o_ptr, seq_len, scale,
                    CAUSAL: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    start_m = tl.program_id(0)
    base = tl.program_id(1).to(tl.int64) * seq_len * HEAD_DIM
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    row_mask = offs_m[:, None] < seq_len
    q = tl.load(q_ptr + base + offs_m[:, None] * HEAD_DIM + offs_d[None, :], mask=row_mask, other=0.0)
    hi = tl.minimum((start_m + 1) * BLOCK_M, seq_len) if CAUSAL else seq_len

    m = tl.full([BLOCK_M], -float("inf"), tl.float32)
    l = tl.zeros([BLOCK_M], dtype=tl.float32)
    for start_n in range(0, hi, BLOCK_N):
        s = _scores(q, k_ptr, base, start_n, offs_n, offs_d, offs_m, seq_len, scale, CAUSAL, HEAD_DIM)
        m_new = tl.maximum(m, tl.max(s, axis=1))  # finite from the first block on: key 0 is visible to every row
        l = l * tl.exp(m - m_new) + tl.sum(tl.exp(s - m_new[:, None]), axis=1)
        m = m_new
    inv_l = 1.0 / l

    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    for start_n in range(0, hi, BLOCK_N):
        s = _scores(q, k_ptr, base, start_n, offs_n, offs_d, offs_m, seq_len, scale, CAUSAL, HEAD_DIM)
        p = tl.exp(s - m[:, None]) * inv_l[:, None]
        cols = start_n + offs_n
        v = tl.load(v_ptr + base + cols[:, None] * HEAD_DIM + offs_d[None, :], mask=cols[:, None] < seq_len,
                    other=0.0)
        acc = tl.dot(p.to(v.dtype), v, acc)
    tl.store(o_ptr + base + offs_m[:, None] * HEAD_DIM + offs_d[None, :], acc.to(o_ptr.dtype.element_ty),
             mask=row_mask)


def custom_kernel(q, k, v, causal):
    q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
    B, H, S, D = q.shape
    o = torch.empty_like(q)
    grid = (triton.cdiv(S, 64), B * H)
    two_pass_kernel[grid](q, k, v, o, S, D ** -0.5, CAUSAL=bool(causal), HEAD_DIM=D, BLOCK_M=64, BLOCK_N=32,
                          num_warps=4)
    return o
