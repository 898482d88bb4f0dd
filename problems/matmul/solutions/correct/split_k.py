# expect: ok
"""Correct: split-K. Programs form a grid of (output tiles) x SPLIT_K; each sums its own contiguous range of K blocks
in float32 and adds its partial tile into a float32 workspace with tl.atomic_add; a second kernel rounds the workspace
to the output dtype. When M is small there are few output tiles, so splitting K puts more programs in flight to read
b. The order of the atomic adds varies from run to run, so the last bits of the float32 sums do too (far below bf16).
"""
import torch
import triton
import triton.language as tl


@triton.jit
def partial_kernel(a_ptr, b_ptr, w_ptr, M, N, K, k_per_split,
                   stride_am, stride_ak, stride_bk, stride_bn,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid = tl.program_id(0)
    split = tl.program_id(1)
    tiles_n = tl.cdiv(N, BLOCK_N)
    pid_m = pid // tiles_n
    pid_n = pid % tiles_n
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    k_start = split * k_per_split  # a multiple of BLOCK_K
    k_end = min(k_start + k_per_split, K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(k_start, k_end, BLOCK_K):
        ks = k0 + offs_k
        a = tl.load(a_ptr + offs_m[:, None] * stride_am + ks[None, :] * stride_ak,
                    mask=(offs_m[:, None] < M) & (ks[None, :] < k_end), other=0.0)
        b = tl.load(b_ptr + ks[:, None] * stride_bk + offs_n[None, :] * stride_bn,
                    mask=(ks[:, None] < k_end) & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.atomic_add(w_ptr + offs_m[:, None] * N + offs_n[None, :], acc, mask=mask)


@triton.jit
def round_kernel(c_ptr, w_ptr, n_elements, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    tl.store(c_ptr + offs, tl.load(w_ptr + offs, mask=mask).to(c_ptr.dtype.element_ty), mask=mask)


def custom_kernel(a, b):
    M, K = a.shape
    _, N = b.shape
    block_m = 16 if M <= 16 else (32 if M <= 32 else 64)
    block_n, block_k = 64, 64
    k_blocks = triton.cdiv(K, block_k)
    split_k = min(8, k_blocks)
    k_per_split = triton.cdiv(k_blocks, split_k) * block_k
    split_k = triton.cdiv(K, k_per_split)  # no split left without work
    work = torch.zeros((M, N), dtype=torch.float32, device=a.device)
    grid = (triton.cdiv(M, block_m) * triton.cdiv(N, block_n), split_k)
    partial_kernel[grid](a, b, work, M, N, K, k_per_split, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                         BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k, num_warps=4, num_stages=3)
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)
    round_kernel[(triton.cdiv(M * N, 1024),)](c, work, M * N, BLOCK=1024)
    return c
