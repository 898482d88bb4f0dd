"""Honest: the shape of an attention library's row kernels. @triton.jit helpers called from the kernel, exp2 with
a log2(e) scale, pointers built from strides, host checks on strides and devices (device.index), the current
stream looked up, and a typed wrapper returning a tuple unpacked by the caller."""
import math
from typing import Tuple

import torch
import triton
import triton.language as tl

LOG2E = 1.4426950408889634


@triton.jit
def _row_max(x):
    return tl.max(x, axis=0)


@triton.jit
def _exp_scaled(x, m, SCALE: tl.constexpr):
    return tl.math.exp2((x - m) * SCALE)


@triton.jit
def _fwd_kernel(X, Out, stride_xm, stride_xn, stride_om, stride_on, N, BLOCK_N: tl.constexpr,
                SCALE: tl.constexpr):
    start_m = tl.program_id(0)
    offs_n = tl.arange(0, BLOCK_N)
    x_ptrs = X + start_m * stride_xm + offs_n * stride_xn
    x = tl.load(x_ptrs, mask=offs_n < N, other=float("-inf")).to(tl.float32)
    m_i = _row_max(x)
    p = _exp_scaled(x, m_i, SCALE)
    l_i = tl.sum(p, axis=0)
    o_ptrs = Out + start_m * stride_om + offs_n * stride_on
    tl.store(o_ptrs, (p / l_i).to(Out.dtype.element_ty), mask=offs_n < N)


def _launch(x: torch.Tensor) -> Tuple[torch.Tensor, int]:
    assert x.stride(-1) == 1, "the last dimension must be contiguous"
    device_index = x.device.index if x.device.type == "cuda" else None
    if device_index is not None:
        _ = torch.cuda.current_stream(device_index)
    M, N = x.shape
    BLOCK_N = max(16, triton.next_power_of_2(N))
    out = torch.empty((M, N), device=x.device, dtype=x.dtype)
    num_warps = 4 if BLOCK_N <= 4096 else 16
    _fwd_kernel[(M,)](x, out, x.stride(0), x.stride(1), out.stride(0), out.stride(1), N, BLOCK_N=BLOCK_N,
                      SCALE=LOG2E, num_warps=num_warps)
    return out, num_warps


@triton.jit
def _fwd_kernel_long(X, Out, N, BLOCK_N: tl.constexpr, SCALE: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK_N)
    m_i = tl.full([BLOCK_N], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_N], tl.float32)
    for start in range(0, N, BLOCK_N):
        x = tl.load(X + row * N + start + offs, mask=start + offs < N, other=float("-inf")).to(tl.float32)
        m_new = tl.maximum(m_i, x)
        alpha = tl.where(m_new == float("-inf"), 0.0, tl.math.exp2((m_i - m_new) * SCALE))
        l_i = l_i * alpha + tl.where(m_new == float("-inf"), 0.0, tl.math.exp2((x - m_new) * SCALE))
        m_i = m_new
    m = tl.max(m_i, axis=0)
    denom = tl.sum(l_i * tl.math.exp2((m_i - m) * SCALE), axis=0)
    for start in range(0, N, BLOCK_N):
        x = tl.load(X + row * N + start + offs, mask=start + offs < N, other=float("-inf")).to(tl.float32)
        tl.store(Out + row * N + start + offs, (tl.math.exp2((x - m) * SCALE) / denom).to(Out.dtype.element_ty),
                 mask=start + offs < N)


def custom_kernel(x):
    x = x.contiguous()
    if x.shape[1] > 32768:
        out = torch.empty_like(x)
        _fwd_kernel_long[(x.shape[0],)](x, out, x.shape[1], BLOCK_N=4096, SCALE=LOG2E, num_warps=8)
        return out
    out, _ = _launch(x)
    assert math.isfinite(LOG2E)
    return out
