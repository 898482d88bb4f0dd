# Solves KernelBench level1/1_Square_matrix_multiplication_.py: C = A @ B for float32 (N, N) matrices.
"""Tiled tl.dot with a float32 accumulator: one program per BLOCK_M x BLOCK_N tile of C, tiles visited in groups of
GROUP_M rows so that programs running together share rows of A and columns of B in L2, every load and the store
masked so any N works. The float32 operands go through tl.dot as "tf32x3": each is split into a high and a low TF32
part and three tensor-core products recover about float32's accuracy. Plain "tf32" (one product) is faster and passes
KernelBench's 1e-2 tolerance, but it rounds the inputs to 10 mantissa bits, which is not a float32 matmul."""
import torch
import triton
import triton.language as tl

KNOBS = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32, "GROUP_M": 8, "WARPS": 8, "STAGES": 3,
         "PRECISION": "tf32x3"}
KNOB_SPACE = {"BLOCK_M": [64, 128], "BLOCK_N": [64, 128, 256], "BLOCK_K": [16, 32, 64], "GROUP_M": [1, 4, 8, 16],
              "WARPS": [4, 8], "STAGES": [2, 3, 4], "PRECISION": ["tf32x3", "ieee"]}


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                  PRECISION: tl.constexpr):
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    per_group = GROUP_M * tiles_n
    first_m = (pid // per_group) * GROUP_M
    group_rows = tl.minimum(tiles_m - first_m, GROUP_M)
    pid_m = first_m + (pid % per_group) % group_rows
    pid_n = (pid % per_group) // group_rows

    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + rm[:, None] * stride_am + rk[None, :] * stride_ak
    b_ptrs = b_ptr + rk[:, None] * stride_bk + rn[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k_left = K - k0
        a = tl.load(a_ptrs, mask=(rm[:, None] < M) & (rk[None, :] < k_left), other=0.0)
        b = tl.load(b_ptrs, mask=(rk[:, None] < k_left) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc, input_precision=PRECISION)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c_ptrs = c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(rm[:, None] < M) & (rn[None, :] < N))


def custom_kernel(a, b):
    m, k = a.shape
    n = b.shape[1]
    c = torch.empty((m, n), dtype=a.dtype, device=a.device)
    bm, bn = KNOBS["BLOCK_M"], KNOBS["BLOCK_N"]
    grid = (triton.cdiv(m, bm) * triton.cdiv(n, bn),)
    matmul_kernel[grid](a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0),
                        c.stride(1), BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=KNOBS["BLOCK_K"], GROUP_M=KNOBS["GROUP_M"],
                        PRECISION=KNOBS["PRECISION"], num_warps=KNOBS["WARPS"], num_stages=KNOBS["STAGES"])
    return c
