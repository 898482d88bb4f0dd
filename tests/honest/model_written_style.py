"""Honest: the shape of a kernel a language model writes: long docstrings, type hints, defensive checks with
%-formatting and f-strings, N-d inputs flattened with reshape, a contextlib helper for optional profiling ranges,
and a try/except that re-raises with context."""
import contextlib
import math

import torch
import triton
import triton.language as tl


@contextlib.contextmanager
def maybe_range(name: str, enabled: bool = False):
    """A no-op unless profiling is asked for; kept for the shape of real code."""
    yield name if enabled else None


@triton.jit
def fused_softmax_kernel(
    input_ptr,
    output_ptr,
    n_cols,
    input_row_stride,
    output_row_stride,
    BLOCK_SIZE: tl.constexpr,
):
    """Numerically stable softmax of one row per program."""
    row_idx = tl.program_id(0)
    col_offsets = tl.arange(0, BLOCK_SIZE)
    mask = col_offsets < n_cols
    row = tl.load(input_ptr + row_idx * input_row_stride + col_offsets, mask=mask, other=-float("inf"))
    row = row.to(tl.float32)
    row_max = tl.max(row, axis=0)
    numerator = tl.exp(row - row_max)
    denominator = tl.sum(numerator, axis=0)
    result = numerator / denominator
    tl.store(output_ptr + row_idx * output_row_stride + col_offsets, result.to(output_ptr.dtype.element_ty),
             mask=mask)


@triton.jit
def chunked_softmax_kernel(input_ptr, output_ptr, n_cols, CHUNK: tl.constexpr):
    """Two passes over a long row: an online max and sum, then the normalised store."""
    row_idx = tl.program_id(0)
    offs = tl.arange(0, CHUNK)
    running_max = tl.full([CHUNK], -float("inf"), tl.float32)
    running_sum = tl.zeros([CHUNK], tl.float32)
    for start in range(0, n_cols, CHUNK):
        vals = tl.load(input_ptr + row_idx * n_cols + start + offs, mask=start + offs < n_cols, other=-float("inf"))
        vals = vals.to(tl.float32)
        new_max = tl.maximum(running_max, vals)
        running_sum = running_sum * tl.where(new_max == -float("inf"), 0.0, tl.exp(running_max - new_max)) + \
            tl.where(new_max == -float("inf"), 0.0, tl.exp(vals - new_max))
        running_max = new_max
    global_max = tl.max(running_max, axis=0)
    total = tl.sum(running_sum * tl.exp(running_max - global_max), axis=0)
    for start in range(0, n_cols, CHUNK):
        vals = tl.load(input_ptr + row_idx * n_cols + start + offs, mask=start + offs < n_cols, other=-float("inf"))
        tl.store(output_ptr + row_idx * n_cols + start + offs,
                 (tl.exp(vals.to(tl.float32) - global_max) / total).to(output_ptr.dtype.element_ty),
                 mask=start + offs < n_cols)


def custom_kernel(input_tensor: torch.Tensor) -> torch.Tensor:
    """Softmax over the last dimension.

    Args:
        input_tensor: a float32, bfloat16 or float16 tensor of any rank.

    Returns:
        A tensor of the same shape and dtype.
    """
    if input_tensor.dim() < 1:
        raise ValueError("expected at least 1 dimension, got %d" % input_tensor.dim())
    original_shape = input_tensor.shape
    x = input_tensor.reshape(-1, original_shape[-1]).contiguous()
    n_rows, n_cols = x.shape
    output = torch.empty_like(x)
    block_size = triton.next_power_of_2(n_cols)
    num_warps = next(w for w, limit in zip((4, 8, 16), (2048, 8192, math.inf)) if block_size <= limit)
    assert math.log2(block_size).is_integer()
    try:
        with maybe_range(f"softmax {n_rows}x{n_cols}"):
            if block_size <= 32768:
                fused_softmax_kernel[(n_rows,)](x, output, n_cols, x.stride(0), output.stride(0),
                                                BLOCK_SIZE=block_size, num_warps=num_warps)
            else:
                chunked_softmax_kernel[(n_rows,)](x, output, n_cols, CHUNK=4096, num_warps=8)
    except RuntimeError as exc:
        raise RuntimeError(f"softmax kernel failed for shape {tuple(original_shape)}: {exc}") from exc
    return output.reshape(original_shape)
