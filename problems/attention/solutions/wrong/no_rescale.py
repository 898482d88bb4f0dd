# expect: correctness: max_rel
"""Wrong: online softmax that tracks the running maximum but never rescales what it has accumulated when the maximum
grows: acc and l keep terms weighted by exp(s - m_old) next to new ones weighted by exp(s - m_new). Only rows whose
maximum sits in the first key block (of 16) come out right; every shape with S > 16 has rows that do not.
"""
import torch
import triton
import triton.language as tl

LOG2E = 1.4426950408889634


@triton.jit
def attn_kernel(q_ptr, k_ptr, v_ptr, o_ptr, seq_len, qk_scale,
                CAUSAL: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    start_m = tl.program_id(0)
    base = tl.program_id(1).to(tl.int64) * seq_len * HEAD_DIM
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + base + offs_m[:, None] * HEAD_DIM + offs_d[None, :], mask=offs_m[:, None] < seq_len,
                other=0.0)
    m_i = tl.full([BLOCK_M], -float("inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    hi = tl.minimum((start_m + 1) * BLOCK_M, seq_len) if CAUSAL else seq_len
    for start_n in range(0, hi, BLOCK_N):
        cols = start_n + offs_n
        k = tl.load(k_ptr + base + cols[None, :] * HEAD_DIM + offs_d[:, None], mask=cols[None, :] < seq_len,
                    other=0.0)
        s = tl.dot(q, k) * qk_scale
        s = tl.where(cols[None, :] < seq_len, s, -float("inf"))
        if CAUSAL:
            s = tl.where(cols[None, :] <= offs_m[:, None], s, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        p = tl.exp2(s - m_new[:, None])
        l_i = l_i + tl.sum(p, axis=1)  # bug: l and acc are not multiplied by exp(m_old - m_new)
        v = tl.load(v_ptr + base + cols[:, None] * HEAD_DIM + offs_d[None, :], mask=cols[:, None] < seq_len,
                    other=0.0)
        acc = tl.dot(p.to(v.dtype), v, acc)
        m_i = m_new
    o = acc / l_i[:, None]
    tl.store(o_ptr + base + offs_m[:, None] * HEAD_DIM + offs_d[None, :], o.to(o_ptr.dtype.element_ty),
             mask=offs_m[:, None] < seq_len)


def custom_kernel(q, k, v, causal):
    q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
    B, H, S, D = q.shape
    o = torch.empty_like(q)
    attn_kernel[(triton.cdiv(S, 32), B * H)](q, k, v, o, S, D ** -0.5 * LOG2E, CAUSAL=bool(causal), HEAD_DIM=D,
                                            BLOCK_M=32, BLOCK_N=16)
    return o
