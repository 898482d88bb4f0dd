# expect: ok
"""Correct: flash attention that reads any strides and splits the causal loop at the diagonal.

Key blocks wholly at or below every row of the query block need no mask and run in a first loop; only the blocks
that cross the diagonal (and the ragged end of the sequence) are masked, in a second loop. The running sum l adds
the bfloat16-rounded p that the p @ v product uses, so numerator and denominator carry the same weights. q, k, v and
o are addressed through their own strides, so transposed or sliced views work without a copy.
"""
import torch
import triton
import triton.language as tl

LOG2E = 1.4426950408889634


@triton.jit
def _block(acc, l_i, m_i, q, k_ptrs, v_ptrs, start_n, offs_m, offs_n, seq_len, qk_scale, sk, sv,
           MASKED: tl.constexpr, CAUSAL: tl.constexpr):
    cols = start_n + offs_n
    if MASKED:
        k = tl.load(k_ptrs + start_n * sk, mask=cols[None, :] < seq_len, other=0.0)
        v = tl.load(v_ptrs + start_n * sv, mask=cols[:, None] < seq_len, other=0.0)
    else:
        k = tl.load(k_ptrs + start_n * sk)
        v = tl.load(v_ptrs + start_n * sv)
    s = tl.dot(q, k) * qk_scale
    if MASKED:
        valid = cols[None, :] < seq_len
        if CAUSAL:
            valid = valid & (cols[None, :] <= offs_m[:, None])
        s = tl.where(valid, s, -float("inf"))
    m_new = tl.maximum(m_i, tl.max(s, axis=1))
    # A row that has seen only masked keys so far (m_new = -inf) must not compute -inf - -inf.
    m_safe = tl.where(m_new == -float("inf"), 0.0, m_new)
    alpha = tl.exp2(m_i - m_safe)
    p = tl.exp2(s - m_safe[:, None]).to(v.dtype)
    l_i = l_i * alpha + tl.sum(p.to(tl.float32), axis=1)
    acc = tl.dot(p, v, acc * alpha[:, None])
    return acc, l_i, m_new


@triton.jit
def strided_kernel(q_ptr, k_ptr, v_ptr, o_ptr, seq_len, n_heads, qk_scale,
                   sqb, sqh, sqs, sqd, skb, skh, sks, skd, svb, svh, svs, svd, sob, soh, sos, sod,
                   CAUSAL: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    start_m = tl.program_id(0)
    bh = tl.program_id(1)
    b = bh // n_heads
    h = bh % n_heads
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q_base = q_ptr + b.to(tl.int64) * sqb + h.to(tl.int64) * sqh
    k_ptrs = k_ptr + b.to(tl.int64) * skb + h.to(tl.int64) * skh + offs_n[None, :] * sks + offs_d[:, None] * skd
    v_ptrs = v_ptr + b.to(tl.int64) * svb + h.to(tl.int64) * svh + offs_n[:, None] * svs + offs_d[None, :] * svd
    row_mask = offs_m[:, None] < seq_len
    q = tl.load(q_base + offs_m[:, None] * sqs + offs_d[None, :] * sqd, mask=row_mask, other=0.0)

    m_i = tl.full([BLOCK_M], -float("inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    # Unmasked blocks: wholly inside the sequence and, when causal, wholly at or before the block's first row.
    lo = start_m * BLOCK_M if CAUSAL else seq_len
    lo = tl.minimum(lo, seq_len) // BLOCK_N * BLOCK_N
    for start_n in range(0, lo, BLOCK_N):
        acc, l_i, m_i = _block(acc, l_i, m_i, q, k_ptrs, v_ptrs, start_n, offs_m, offs_n, seq_len, qk_scale,
                               sks, svs, False, CAUSAL)
    hi = tl.minimum((start_m + 1) * BLOCK_M, seq_len) if CAUSAL else seq_len
    for start_n in range(lo, hi, BLOCK_N):
        acc, l_i, m_i = _block(acc, l_i, m_i, q, k_ptrs, v_ptrs, start_n, offs_m, offs_n, seq_len, qk_scale,
                               sks, svs, True, CAUSAL)

    l_i = tl.where(l_i == 0.0, 1.0, l_i)  # rows past the end only
    o = acc / l_i[:, None]
    o_base = o_ptr + b.to(tl.int64) * sob + h.to(tl.int64) * soh
    tl.store(o_base + offs_m[:, None] * sos + offs_d[None, :] * sod, o.to(o_ptr.dtype.element_ty), mask=row_mask)


def custom_kernel(q, k, v, causal):
    B, H, S, D = q.shape
    o = torch.empty((B, H, S, D), dtype=q.dtype, device=q.device)
    block_m, block_n = 64, 32
    grid = (triton.cdiv(S, block_m), B * H)
    strided_kernel[grid](q, k, v, o, S, H, D ** -0.5 * LOG2E, *q.stride(), *k.stride(), *v.stride(), *o.stride(),
                         CAUSAL=bool(causal), HEAD_DIM=D, BLOCK_M=block_m, BLOCK_N=block_n, num_warps=4,
                         num_stages=2)
    return o
