"""Seed: flash-attention forward in Triton, split at the diagonal, with K/V pipelined through TMA descriptors.

The algorithm is flash_forward.py's: one program per (query block, batch * head) holds a BLOCK_M x D block of
queries and walks the keys in blocks of BLOCK_N, with scores q k^T from tl.dot (bfloat16 inputs, float32
accumulation), an online softmax in float32 (running row max m and sum l, rescaled by exp2(m_old - m_new)), exp2 with
log2(e) folded into the D**-0.5 scale, and acc += p v with p cast to bfloat16. What it does on top:
- Two loop phases, as flash attention 2 implementations do. Key blocks wholly inside the sequence and, when causal,
  wholly before the query block's first row run with no mask at all: no index arithmetic, no compare, no select.
  Only the blocks that cross the diagonal (BLOCK_M / BLOCK_N of them) or hold the ragged end of the sequence build
  the element mask, in a second loop. Blocks above the diagonal are never visited. BLOCK_N divides BLOCK_M, so the
  diagonal starts on a key-block boundary.
- Causal query blocks are launched longest first (the block index is reversed), so the short ones fill the tail of
  the grid.
- q, k, v and o go through tensor descriptors (tl.make_tensor_descriptor, built in the kernel: TMA on Hopper, with a
  global scratch allocator set by triton.set_allocator before each launch). Each tensor is described as
  (B * H, S, D), so keys and rows past S load as zeros and stores past S are dropped by the copy engine: no load or
  store carries a mask. With the TMA knob False, or a Triton without descriptors, the same loops use pointer loads,
  masked in the second phase only. Triton's interpreter runs descriptors too, so the CPU check covers both paths.
- Both loops are software-pipelined with tl.range(..., num_stages=STAGES): up to STAGES - 1 K/V blocks are in
  flight while the tensor cores work on the current one, and the diagonal's blocks are asked for before the first
  is used.
- KNOBS per head dim (block sizes, warps, stages), so D = 64 and D = 128 can take different tiles. The host keeps
  every setting valid: blocks shrink to short sequences, BLOCK_N to at most BLOCK_M, stages to what fits in shared
  memory.
No warp specialization, no ping-pong of softmax and matmul between warp groups, no persistent grid: those are the
steps left towards the library's kernels (notes.md).
"""
import torch
import triton
import triton.language as tl

# Knobs a tuner may adjust; the wrapper reads them at every call.
KNOBS = {
    "BLOCK_M_D64": 128,  # query rows per program, D = 64
    "BLOCK_N_D64": 64,  # keys per inner-loop step, D = 64
    "WARPS_D64": 4,
    "STAGES_D64": 3,  # pipeline depth of the key loops (K/V blocks in shared memory)
    "BLOCK_M_D128": 128,
    "BLOCK_N_D128": 64,
    "WARPS_D128": 8,
    "STAGES_D128": 3,
    "TMA": True,  # tensor descriptors (TMA on Hopper); False: pointer loads
}
KNOB_SPACE = {
    "BLOCK_M_D64": [64, 128], "BLOCK_N_D64": [32, 64, 128], "WARPS_D64": [4, 8], "STAGES_D64": [1, 2, 3, 4],
    "BLOCK_M_D128": [64, 128], "BLOCK_N_D128": [32, 64, 128], "WARPS_D128": [4, 8], "STAGES_D128": [1, 2, 3, 4],
    "TMA": [True, False],
}

LOG2E = 1.4426950408889634
SMEM_BUDGET = 200 * 1024  # bytes of K/V stages and the q block per program, under Hopper's 227 KB


@triton.jit
def _load_kv(k_src, v_src, bh, start_n, offs_n, seq_len,
             BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr, USE_TMA: tl.constexpr, MASKED: tl.constexpr):
    """One [BLOCK_N, HEAD_DIM] block of k and of v from key start_n: through descriptors (rows past S come back as
    zeros), or through pointers (k_src, v_src point at row 0 of the head), masked only when the block may end past
    S."""
    if USE_TMA:
        k = k_src.load([bh, start_n, 0]).reshape(BLOCK_N, HEAD_DIM)
        v = v_src.load([bh, start_n, 0]).reshape(BLOCK_N, HEAD_DIM)
    else:
        offs_d = tl.arange(0, HEAD_DIM)
        rows = start_n + offs_n
        offs = rows[:, None] * HEAD_DIM + offs_d[None, :]
        if MASKED:
            k = tl.load(k_src + offs, mask=rows[:, None] < seq_len, other=0.0)
            v = tl.load(v_src + offs, mask=rows[:, None] < seq_len, other=0.0)
        else:
            k = tl.load(k_src + offs)
            v = tl.load(v_src + offs)
    return k, v


@triton.jit
def _attn_blocks(acc, l_i, m_i, q, k_src, v_src, bh, lo, hi, offs_m, seq_len, qk_scale,
                 MASKED: tl.constexpr, CAUSAL: tl.constexpr, USE_TMA: tl.constexpr, STAGES: tl.constexpr,
                 BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr):
    """Key blocks lo, lo + BLOCK_N, ... below hi, folded into the online softmax state (acc, l_i, m_i)."""
    offs_n = tl.arange(0, BLOCK_N)
    for start_n in tl.range(lo, hi, BLOCK_N, num_stages=STAGES):
        k, v = _load_kv(k_src, v_src, bh, start_n, offs_n, seq_len, BLOCK_N, HEAD_DIM, USE_TMA, MASKED)
        s = tl.dot(q, tl.trans(k))  # float32 raw scores
        if MASKED:
            cols = start_n + offs_n
            valid = cols[None, :] < seq_len
            if CAUSAL:
                valid = valid & (cols[None, :] <= offs_m[:, None])
            s = tl.where(valid, s * qk_scale, -float("inf"))  # log2 units; masked keys give p = 0
            m_new = tl.maximum(m_i, tl.max(s, axis=1))
            p = tl.exp2(s - m_new[:, None])
        else:
            # the scale is positive, so it commutes with the max; the subtraction folds into one multiply-add
            m_new = tl.maximum(m_i, tl.max(s, axis=1) * qk_scale)
            p = tl.exp2(s * qk_scale - m_new[:, None])
        # m_new is finite from the first block on: every row's first block holds key 0, which it may see.
        alpha = tl.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None])
        m_i = m_new
    return acc, l_i, m_i


@triton.jit
def attn_fwd_kernel(q_ptr, k_ptr, v_ptr, o_ptr, seq_len, n_bh, qk_scale,
                    CAUSAL: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                    STAGES: tl.constexpr, USE_TMA: tl.constexpr):
    # Causal: the last query block has the most keys to visit; launch it first.
    start_m = tl.num_programs(0) - 1 - tl.program_id(0) if CAUSAL else tl.program_id(0)
    bh = tl.program_id(1)
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    if USE_TMA:
        # (B * H, S, D) views: a block never reaches into the next head, rows past S read as 0 and are not written.
        head_stride = seq_len * HEAD_DIM
        q_desc = tl.make_tensor_descriptor(q_ptr, [n_bh, seq_len, HEAD_DIM], [head_stride, HEAD_DIM, 1],
                                           [1, BLOCK_M, HEAD_DIM])
        k_src = tl.make_tensor_descriptor(k_ptr, [n_bh, seq_len, HEAD_DIM], [head_stride, HEAD_DIM, 1],
                                          [1, BLOCK_N, HEAD_DIM])
        v_src = tl.make_tensor_descriptor(v_ptr, [n_bh, seq_len, HEAD_DIM], [head_stride, HEAD_DIM, 1],
                                          [1, BLOCK_N, HEAD_DIM])
        o_desc = tl.make_tensor_descriptor(o_ptr, [n_bh, seq_len, HEAD_DIM], [head_stride, HEAD_DIM, 1],
                                           [1, BLOCK_M, HEAD_DIM])
        q = q_desc.load([bh, start_m * BLOCK_M, 0]).reshape(BLOCK_M, HEAD_DIM)
    else:
        base = bh.to(tl.int64) * seq_len * HEAD_DIM  # q, k, v, o are contiguous (B, H, S, D)
        k_src = k_ptr + base
        v_src = v_ptr + base
        offs_d = tl.arange(0, HEAD_DIM)
        q = tl.load(q_ptr + base + offs_m[:, None] * HEAD_DIM + offs_d[None, :], mask=offs_m[:, None] < seq_len,
                    other=0.0)

    m_i = tl.full([BLOCK_M], -float("inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    if CAUSAL:
        # Phase 1: keys before the block's first row, seen by every row. Phase 2: the diagonal blocks.
        lo = start_m * BLOCK_M
        hi = tl.minimum(lo + BLOCK_M, seq_len)
    else:
        # Phase 1: every whole key block. Phase 2: the partial block at the end, if S is not a multiple of BLOCK_N.
        lo = seq_len // BLOCK_N * BLOCK_N
        hi = seq_len
    acc, l_i, m_i = _attn_blocks(acc, l_i, m_i, q, k_src, v_src, bh, 0, lo, offs_m, seq_len, qk_scale,
                                 False, CAUSAL, USE_TMA, STAGES, BLOCK_N, HEAD_DIM)
    acc, l_i, m_i = _attn_blocks(acc, l_i, m_i, q, k_src, v_src, bh, lo, hi, offs_m, seq_len, qk_scale,
                                 True, CAUSAL, USE_TMA, STAGES, BLOCK_N, HEAD_DIM)

    o = (acc / l_i[:, None]).to(o_ptr.dtype.element_ty)
    if USE_TMA:
        o_desc.store([bh, start_m * BLOCK_M, 0], o.reshape(1, BLOCK_M, HEAD_DIM))
    else:
        tl.store(o_ptr + base + offs_m[:, None] * HEAD_DIM + offs_d[None, :], o, mask=offs_m[:, None] < seq_len)


def _has_descriptors():
    """Whether this Triton builds tensor descriptors in a kernel (tl.make_tensor_descriptor, Triton 3.4 and later)."""
    try:
        tl.make_tensor_descriptor
    except AttributeError:
        return False
    return True


def _scratch(size, alignment, stream):
    """Global memory for the descriptors the kernel builds (128 bytes each per program)."""
    return torch.empty(size, dtype=torch.int8, device="cuda")


def custom_kernel(q, k, v, causal):
    q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
    B, H, S, D = q.shape
    o = torch.empty_like(q)
    d = "D64" if D <= 64 else "D128"
    # Short sequences take smaller blocks (tl.dot needs 16); BLOCK_N must divide BLOCK_M for the causal split.
    block_m = max(16, min(KNOBS["BLOCK_M_" + d], triton.next_power_of_2(S)))
    block_n = min(KNOBS["BLOCK_N_" + d], block_m)
    # Each stage holds a k and a v block; the q block stays for the whole loop.
    per_stage = 2 * block_n * D * q.element_size()
    stages = max(1, min(KNOBS["STAGES_" + d], (SMEM_BUDGET - block_m * D * q.element_size()) // per_stage))
    use_tma = KNOBS["TMA"] and _has_descriptors()
    if use_tma:
        triton.set_allocator(_scratch)
    grid = (triton.cdiv(S, block_m), B * H)
    attn_fwd_kernel[grid](q, k, v, o, S, B * H, D ** -0.5 * LOG2E, CAUSAL=bool(causal), HEAD_DIM=D,
                          BLOCK_M=block_m, BLOCK_N=block_n, STAGES=stages, USE_TMA=use_tma,
                          num_warps=KNOBS["WARPS_" + d], num_stages=stages)
    return o
