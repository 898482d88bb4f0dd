# expect: correctness: max_rel
"""Wrong: split-K whose K slices are cdiv(K, SPLIT_K) long, not a whole number of BLOCK_K blocks, and whose loads are
masked at K rather than at the slice's end. Each slice's last block reaches into the next slice, so the terms there
are added twice: with K = 3000 and 4 slices of 750, blocks of 64 run to 767 and 18 terms at each of three borders count
twice; with K = 17 (slices of 5) every slice reads to the end of K. Only K = 1 (a single slice) comes out right."""
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
    rows = (pid // tiles_n) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = (pid % tiles_n) * BLOCK_N + tl.arange(0, BLOCK_N)
    ks = tl.arange(0, BLOCK_K)
    k_start = split * k_per_split
    k_end = min(k_start + k_per_split, K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(k_start, k_end, BLOCK_K):
        k = k0 + ks
        a = tl.load(a_ptr + rows[:, None] * stride_am + k[None, :] * stride_ak,
                    mask=(rows[:, None] < M) & (k[None, :] < K), other=0.0)  # should stop at k_end
        b = tl.load(b_ptr + k[:, None] * stride_bk + cols[None, :] * stride_bn,
                    mask=(k[:, None] < K) & (cols[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    tl.store(w_ptr + split * M * N + rows[:, None] * N + cols[None, :], acc, mask=mask)


@triton.jit
def sum_kernel(w_ptr, c_ptr, n_elements, n_splits, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for split in range(0, n_splits):
        acc += tl.load(w_ptr + split * n_elements + offs, mask=mask, other=0.0)
    tl.store(c_ptr + offs, acc.to(c_ptr.dtype.element_ty), mask=mask)


def custom_kernel(a, b):
    M, K = a.shape
    _, N = b.shape
    block_m, block_n, block_k = 64, 64, 64
    split = min(4, K)
    k_per_split = triton.cdiv(K, split)  # not rounded up to a multiple of block_k
    w = torch.empty((split, M, N), dtype=torch.float32, device=a.device)
    grid = (triton.cdiv(M, block_m) * triton.cdiv(N, block_n), split)
    partial_kernel[grid](a, b, w, M, N, K, k_per_split, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                         BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k)
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)
    sum_kernel[(triton.cdiv(M * N, 1024),)](w, c, M * N, split, BLOCK=1024)
    return c
