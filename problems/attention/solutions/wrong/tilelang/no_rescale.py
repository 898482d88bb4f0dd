# expect: correctness: max_rel
"""Flash attention in TileLang (the seed's kernel) whose online softmax never rescales the output accumulator: when a
later key block raises a row's running maximum, the sum l is rescaled by exp2(m_old - m_new) but acc keeps the earlier
blocks' terms weighted for the old maximum, too large by exp(m_new - m_old). Rows whose maximum sits in their first
key block come out right; the S = 200 tests (two key blocks of 128) and any longer sequence have rows that do not."""
import torch
import tilelang
import tilelang.language as T

KNOBS = {
    "BLOCK_M_D64": 128, "BLOCK_N_D64": 128, "THREADS_D64": 256, "STAGES_D64": 2,
    "BLOCK_M_D128": 128, "BLOCK_N_D128": 128, "THREADS_D128": 256, "STAGES_D128": 2,
}
KNOB_SPACE = {
    "BLOCK_M_D64": [64, 128], "BLOCK_N_D64": [64, 128, 256], "THREADS_D64": [128, 256], "STAGES_D64": [1, 2, 3, 4],
    "BLOCK_M_D128": [64, 128], "BLOCK_N_D128": [64, 128], "THREADS_D128": [128, 256], "STAGES_D128": [1, 2, 3],
}

LOG2E = 1.4426950408889634
SMEM_BUDGET = 220 * 1024  # bytes of the q block and the K/V stages per CTA, under Hopper's 227 KB
_cache = {}


def _flash(B: int, H: int, S: int, D: int, causal: bool, dtype: str, BLOCK_M: int, BLOCK_N: int, THREADS: int,
           STAGES: int):
    scale = D ** -0.5 * LOG2E  # scores in log2 units: exp2(s * scale - m * scale) = exp((s - m) * D**-0.5)
    q_blocks = (S + BLOCK_M - 1) // BLOCK_M
    k_blocks = (S + BLOCK_N - 1) // BLOCK_N
    accum = "float32"

    @T.prim_func
    def flash_fwd(Q: T.Tensor((B, H, S, D), dtype), K: T.Tensor((B, H, S, D), dtype),
                  V: T.Tensor((B, H, S, D), dtype), Out: T.Tensor((B, H, S, D), dtype)):
        with T.Kernel(q_blocks, H, B, threads=THREADS) as (bx, head, batch):
            q_tile = T.alloc_shared((BLOCK_M, D), dtype)
            k_tile = T.alloc_shared((BLOCK_N, D), dtype)
            v_tile = T.alloc_shared((BLOCK_N, D), dtype)
            o_tile = T.alloc_shared((BLOCK_M, D), dtype)
            s = T.alloc_fragment((BLOCK_M, BLOCK_N), accum)
            p = T.alloc_fragment((BLOCK_M, BLOCK_N), dtype)
            acc = T.alloc_fragment((BLOCK_M, D), accum)
            m = T.alloc_fragment((BLOCK_M,), accum)
            m_prev = T.alloc_fragment((BLOCK_M,), accum)
            alpha = T.alloc_fragment((BLOCK_M,), accum)
            row_sum = T.alloc_fragment((BLOCK_M,), accum)
            denom = T.alloc_fragment((BLOCK_M,), accum)

            qb = q_blocks - 1 - bx if causal else bx  # causal: the longest query blocks first
            q_start = qb * BLOCK_M
            T.copy(Q[batch, head, q_start:q_start + BLOCK_M, :], q_tile)
            T.fill(acc, 0)
            T.fill(denom, 0)
            T.fill(m, -T.infinity(accum))

            if causal:
                # key blocks up to the one holding the block's last row; none above the diagonal
                steps = T.min(k_blocks, T.ceildiv(q_start + BLOCK_M, BLOCK_N))
                masked_from = q_start // BLOCK_N  # the first block with a key past the block's first row
            else:
                steps = k_blocks
                masked_from = S // BLOCK_N  # the partial block at the end, if any
            for kb in T.Pipelined(steps, num_stages=STAGES):
                T.copy(K[batch, head, kb * BLOCK_N:(kb + 1) * BLOCK_N, :], k_tile)
                if kb >= masked_from:
                    for i, j in T.Parallel(BLOCK_M, BLOCK_N):
                        if causal:
                            s[i, j] = T.if_then_else(kb * BLOCK_N + j <= q_start + i, 0, -T.infinity(accum))
                        else:
                            s[i, j] = T.if_then_else(kb * BLOCK_N + j < S, 0, -T.infinity(accum))
                else:
                    T.clear(s)
                T.gemm(q_tile, k_tile, s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)

                T.copy(m, m_prev)
                T.reduce_max(s, m, dim=1, clear=False)  # max of the row's scores and its running max
                for i in T.Parallel(BLOCK_M):
                    alpha[i] = T.exp2(m_prev[i] * scale - m[i] * scale)  # 0 on the first block (m_prev = -inf)
                for i, j in T.Parallel(BLOCK_M, BLOCK_N):
                    s[i, j] = T.exp2(s[i, j] * scale - m[i] * scale)  # hidden keys: exp2(-inf) = 0
                T.reduce_sum(s, row_sum, dim=1)
                for i in T.Parallel(BLOCK_M):
                    denom[i] = denom[i] * alpha[i] + row_sum[i]
                T.copy(s, p)  # p in bfloat16 for the tensor cores; bug: acc is not multiplied by alpha
                T.copy(V[batch, head, kb * BLOCK_N:(kb + 1) * BLOCK_N, :], v_tile)
                T.gemm(p, v_tile, acc, policy=T.GemmWarpPolicy.FullRow)

            for i, j in T.Parallel(BLOCK_M, D):
                acc[i, j] /= denom[i]
            T.copy(acc, o_tile)
            T.copy(o_tile, Out[batch, head, q_start:q_start + BLOCK_M, :])

    return flash_fwd


def _compiled(B: int, H: int, S: int, D: int, causal: bool, dtype: str):
    d = "D64" if D <= 64 else "D128"
    block_m, block_n = KNOBS["BLOCK_M_" + d], KNOBS["BLOCK_N_" + d]
    threads, stages = KNOBS["THREADS_" + d], KNOBS["STAGES_" + d]
    # Short sequences take smaller blocks, never below the 64 rows a warp group's MMA covers.
    while block_m > 64 and block_m // 2 >= S:
        block_m //= 2
    while block_n > 64 and block_n // 2 >= S:
        block_n //= 2
    threads = min(threads, block_m // 64 * 128)  # a consumer warp group per 64 query rows at most
    # Each stage holds a K and a V block; the q block (whose memory the output block reuses) stays for the loop.
    stages = max(1, min(stages, (SMEM_BUDGET - block_m * D * 2) // (2 * block_n * D * 2)))
    key = (B, H, S, D, causal, dtype, block_m, block_n, threads, stages)
    if key not in _cache:
        _cache[key] = tilelang.compile(_flash(B, H, S, D, causal, dtype, block_m, block_n, threads, stages))
    return _cache[key]


def custom_kernel(q, k, v, causal):
    q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
    B, H, S, D = q.shape
    o = torch.empty_like(q)
    if q.numel() == 0:
        return o
    _compiled(B, H, S, D, bool(causal), str(q.dtype).removeprefix("torch."))(q, k, v, o)  # "bfloat16"
    return o
