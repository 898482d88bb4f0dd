"""Timed outputs against their references on the device, in one pass each.

The benchmark rung checks every output of every timed call, and it does so on the card while the card is leased, so
the comparison's cost is the lease's. In torch it takes seven passes over the data (conversions, difference,
magnitudes, floor, quotient, maximum), about 60 bytes of traffic per float32 element; this kernel reads the output and
its reference once (a float64 reference: 12 bytes) and keeps the largest relative error of all outputs judged by one
tolerance in a single float on the device, read once per window.

Same figure as metrics.max_rel_tensor: both operands in float32, |out - ref| / max(|ref|, floor), a NaN anywhere (a
NaN output, or an infinity where the reference has one) counted as an infinite error. The kernel is the measurer's own
code, compiled into the measurer's Triton cache (never a runner's).
"""
from __future__ import annotations

import torch

BLOCK = 4096

_kernel = None


def _build():
    import triton
    import triton.language as tl

    @triton.jit
    def worst_relative_error(out_ptr, ref_ptr, worst_ptr, n, floor, BLOCK: tl.constexpr):
        start = tl.program_id(0).to(tl.int64) * BLOCK
        offsets = start + tl.arange(0, BLOCK)
        inside = offsets < n
        o = tl.load(out_ptr + offsets, mask=inside, other=0).to(tl.float32)
        r = tl.load(ref_ptr + offsets, mask=inside, other=0).to(tl.float32)
        error = tl.math.div_rn(tl.abs(o - r), tl.maximum(tl.abs(r), floor))  # rounded as torch divides
        error = tl.where(error == error, error, float("inf"))  # NaN: never within any tolerance
        error = tl.where(inside, error, 0.0)
        tl.atomic_max(worst_ptr, tl.max(error, axis=0))

    return worst_relative_error


def fits(out: torch.Tensor, ref: torch.Tensor) -> bool:
    """Whether the kernel can judge this pair: float tensors of one shape on the GPU, each in one dense block."""
    return (out.is_cuda and ref.device == out.device and out.is_floating_point() and ref.is_floating_point()
            and out.shape == ref.shape and out.is_contiguous() and ref.is_contiguous() and out.numel() > 0)


def worst_into(worst: torch.Tensor, out: torch.Tensor, ref: torch.Tensor, floor: float) -> None:
    """Raise worst (a one-element float32 tensor on out's device, never negative) to the largest relative error of out
    against ref, without waiting for the device."""
    global _kernel
    if _kernel is None:
        _kernel = _build()
    n = out.numel()
    _kernel[((n + BLOCK - 1) // BLOCK,)](out, ref, worst, n, float(floor), BLOCK=BLOCK, num_warps=8)
