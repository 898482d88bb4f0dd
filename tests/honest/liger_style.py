"""Honest: the shape of an LLM-kernel library's softmax. An autograd.Function with @staticmethod forward/backward,
settings computed by a helper that warns and raises with f-strings, attributes kept on ctx, an N-D input flattened
to rows with view/view_as."""
import warnings

import torch
import triton
import triton.language as tl

MAX_FUSED_SIZE = 65536


def calculate_settings(n: int):
    block = triton.next_power_of_2(n)
    if block > MAX_FUSED_SIZE:
        raise RuntimeError(f"Cannot launch Triton kernel since n = {n} exceeds the maximum fused size {MAX_FUSED_SIZE}")
    num_warps = 4
    if block >= 32768:
        num_warps = 32 if block >= 65536 else 16
    elif block >= 8192:
        num_warps = 16
    elif block >= 2048:
        num_warps = 8
    return block, num_warps


@triton.jit
def _softmax_single_block_forward_kernel(y_ptr, y_stride, x_ptr, x_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row_id = tl.program_id(0)
    offs = tl.arange(0, BLOCK_SIZE)
    mask = offs < n_cols
    x = tl.load(x_ptr + row_id * x_stride + offs, mask=mask, other=-float("inf")).to(tl.float32)
    m = tl.max(x, axis=0)
    e = tl.exp(x - m)
    d = tl.sum(e, axis=0)
    tl.store(y_ptr + row_id * y_stride + offs, (e / d).to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _softmax_multi_block_forward_kernel(y_ptr, y_stride, x_ptr, x_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row_id = tl.program_id(0)
    offs = tl.arange(0, BLOCK_SIZE)
    m = tl.full([BLOCK_SIZE], -float("inf"), tl.float32)
    d = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        idx = start + offs
        x = tl.load(x_ptr + row_id * x_stride + idx, mask=idx < n_cols, other=-float("inf")).to(tl.float32)
        m_new = tl.maximum(m, x)
        scale = tl.where(m_new == -float("inf"), 0.0, tl.exp(m - m_new))
        d = d * scale + tl.where(m_new == -float("inf"), 0.0, tl.exp(x - m_new))
        m = m_new
    row_max = tl.max(m, axis=0)
    total = tl.sum(d * tl.exp(m - row_max), axis=0)
    for start in range(0, n_cols, BLOCK_SIZE):
        idx = start + offs
        mask = idx < n_cols
        x = tl.load(x_ptr + row_id * x_stride + idx, mask=mask, other=-float("inf")).to(tl.float32)
        tl.store(y_ptr + row_id * y_stride + idx, (tl.exp(x - row_max) / total).to(y_ptr.dtype.element_ty), mask=mask)


def _softmax_forward(x: torch.Tensor):
    *batch, n_cols = x.shape
    x2d = x.contiguous().view(-1, n_cols)
    n_rows = x2d.shape[0]
    block, num_warps = calculate_settings(min(n_cols, 8192))
    y2d = torch.empty_like(x2d)
    if n_cols <= block:
        _softmax_single_block_forward_kernel[(n_rows,)](y2d, y2d.stride(0), x2d, x2d.stride(0), n_cols,
                                                        BLOCK_SIZE=block, num_warps=num_warps)
    else:
        if n_cols > 4 * MAX_FUSED_SIZE:
            warnings.warn(f"softmax over {n_cols} columns uses the looped kernel")
        _softmax_multi_block_forward_kernel[(n_rows,)](y2d, y2d.stride(0), x2d, x2d.stride(0), n_cols,
                                                       BLOCK_SIZE=block, num_warps=num_warps)
    return y2d.view_as(x), block, num_warps


class LigerSoftmaxFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input_: torch.Tensor):
        y, block, num_warps = _softmax_forward(input_)
        ctx.save_for_backward(y)
        ctx.BLOCK_SIZE = block
        ctx.num_warps = num_warps
        ctx.log = False
        return y

    @staticmethod
    def backward(ctx, grad_output):
        raise NotImplementedError("the backward pass is not part of this kernel")


def custom_kernel(x):
    return LigerSoftmaxFunction.apply(x)
