"""Seed: tiled matrix multiply in Triton, one program per BLOCK_M x BLOCK_N tile of c.

Each program walks K in steps of BLOCK_K: it loads a BLOCK_M x BLOCK_K tile of a and a BLOCK_K x BLOCK_N tile of b
(bfloat16, masked past the edges with zeros so a K tail adds nothing), multiplies them with tl.dot into a float32
accumulator, and after the loop casts the accumulator to the output dtype once and stores the tile, masked at the M
and N edges. Programs are laid out row-major over the tile grid; block sizes, warps and pipeline stages are fixed
(KNOBS), with no grouped ordering, split-K or autotuning.
"""
import torch
import triton
import triton.language as tl

# Knobs a tuner may adjust; the wrapper reads them at every call. tl.dot needs every block dimension >= 16.
KNOBS = {
    "BLOCK_M": 128,
    "BLOCK_N": 128,
    "BLOCK_K": 64,
    "num_warps": 4,
    "num_stages": 4,  # software-pipelined K loop: tiles in flight per operand
}
KNOB_SPACE = {
    "BLOCK_M": [16, 32, 64, 128, 256],
    "BLOCK_N": [32, 64, 128, 256],
    "BLOCK_K": [32, 64, 128],
    "num_warps": [4, 8],
    "num_stages": [2, 3, 4, 5],
}


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                  stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    # Which tile of c this program owns: tiles numbered row by row.
    pid = tl.program_id(0)
    n_tiles_n = tl.cdiv(N, BLOCK_N)
    pid_m = pid // n_tiles_n
    pid_n = pid % n_tiles_n

    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    ks = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + rows[:, None] * stride_am + ks[None, :] * stride_ak
    b_ptrs = b_ptr + ks[:, None] * stride_bk + cols[None, :] * stride_bn

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        # Out-of-range rows, columns and K positions load 0, so the last (partial) K block adds only real terms.
        k_ok = ks < K - k0
        a = tl.load(a_ptrs, mask=(rows[:, None] < M) & k_ok[None, :], other=0.0)
        b = tl.load(b_ptrs, mask=k_ok[:, None] & (cols[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)  # bf16 x bf16 products, float32 sums
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk

    c_ptrs = c_ptr + rows[:, None] * stride_cm + cols[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(rows[:, None] < M) & (cols[None, :] < N))


def custom_kernel(a, b):
    M, K = a.shape
    _, N = b.shape
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)
    bm, bn = KNOBS["BLOCK_M"], KNOBS["BLOCK_N"]
    grid = (triton.cdiv(M, bm) * triton.cdiv(N, bn),)
    matmul_kernel[grid](
        a, b, c, M, N, K,
        a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
        BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=KNOBS["BLOCK_K"],
        num_warps=KNOBS["num_warps"], num_stages=KNOBS["num_stages"],
    )
    return c
