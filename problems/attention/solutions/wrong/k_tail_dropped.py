# expect: correctness: max_rel
"""Wrong: the key loop runs over whole blocks only (S // BLOCK_N of them, loaded unmasked), as a kernel written for S
divisible by BLOCK_N does, so the last S % BLOCK_N keys are never seen. With BLOCK_N = 16: at S = 1 no key is seen at
all and the output is 0 (an empty sum is guarded, so it stays finite and the ladder stops at correctness, not at
run); at S = 17 and 65 one key is lost, at S = 200 eight. Non-causal rows lose those keys' weight; causal rows in the
last partial block lose their own key and the ones before it in that block. Only S that are multiples of 16 come out
right.
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
    hi = hi // BLOCK_N * BLOCK_N  # bug: the partial block at the end (keys hi .. seq_len - 1) is never visited
    for start_n in range(0, hi, BLOCK_N):
        cols = start_n + offs_n
        k = tl.load(k_ptr + base + cols[None, :] * HEAD_DIM + offs_d[:, None])  # whole blocks: no mask needed
        s = tl.dot(q, k) * qk_scale
        if CAUSAL:
            s = tl.where(cols[None, :] <= offs_m[:, None], s, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        v = tl.load(v_ptr + base + cols[:, None] * HEAD_DIM + offs_d[None, :])
        acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None])
        m_i = m_new
    l_i = tl.where(l_i == 0.0, 1.0, l_i)  # rows that saw no key (S < BLOCK_N) give 0 rather than 0 / 0
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
