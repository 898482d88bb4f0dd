"""Honest: the shape of an operator library's softmax. A module logger, @triton.heuristics computing constexprs
from the arguments, @triton.autotune keyed on the row length, a dataclass for launch settings, an Enum naming the
strategy, a device guard around the launch, and error messages that format numbers."""
import contextlib
import logging
from dataclasses import dataclass
from enum import Enum

import torch
import triton
import triton.language as tl

logger = logging.getLogger(__name__)


class Strategy(Enum):
    ONE_PASS = 1
    LOOPED = 2


@dataclass(frozen=True)
class LaunchSettings:
    strategy: Strategy
    block: int


def _settings(n_cols: int) -> LaunchSettings:
    block = triton.next_power_of_2(n_cols)
    if block <= 16384:
        return LaunchSettings(Strategy.ONE_PASS, block)
    return LaunchSettings(Strategy.LOOPED, 4096)


@triton.autotune(configs=[triton.Config({}, num_warps=4), triton.Config({}, num_warps=8)], key=["N"])
@triton.heuristics({"ONE_ROW_TILE": lambda args: args["N"] <= args["TILE"]})
@triton.jit
def softmax_kernel_inner(out_ptr, in_ptr, M, N, TILE: tl.constexpr, ONE_ROW_TILE: tl.constexpr):
    pid = tl.program_id(0)
    n_offsets = tl.arange(0, TILE)
    if ONE_ROW_TILE:
        mask = n_offsets < N
        inp = tl.load(in_ptr + pid * N + n_offsets, mask=mask, other=-float("inf")).to(tl.float32)
        e = tl.exp(inp - tl.max(inp, 0))
        tl.store(out_ptr + pid * N + n_offsets, (e / tl.sum(e, 0)).to(out_ptr.dtype.element_ty), mask=mask)
    else:
        m = tl.full([TILE], -float("inf"), tl.float32)
        z = tl.zeros([TILE], tl.float32)
        for start_n in range(0, N, TILE):
            offs = start_n + n_offsets
            inp = tl.load(in_ptr + pid * N + offs, mask=offs < N, other=-float("inf")).to(tl.float32)
            m_new = tl.maximum(m, inp)
            alpha = tl.where(m_new == -float("inf"), 0.0, tl.exp(m - m_new))
            z = z * alpha + tl.where(m_new == -float("inf"), 0.0, tl.exp(inp - m_new))
            m = m_new
        m_reduced = tl.max(m, 0)
        z_reduced = tl.sum(z * tl.exp(m - m_reduced), 0)
        for start_n in range(0, N, TILE):
            offs = start_n + n_offsets
            inp = tl.load(in_ptr + pid * N + offs, mask=offs < N, other=-float("inf")).to(tl.float32)
            tl.store(out_ptr + pid * N + offs, (tl.exp(inp - m_reduced) / z_reduced).to(out_ptr.dtype.element_ty),
                     mask=offs < N)


def _device_guard(t: torch.Tensor):
    return torch.cuda.device(t.device) if t.is_cuda else contextlib.nullcontext()


def softmax(inp: torch.Tensor, dim: int = -1) -> torch.Tensor:
    logger.debug("GEMS SOFTMAX")
    if dim not in (-1, inp.ndim - 1):
        raise ValueError(f"softmax over dim {dim} of a {inp.ndim}-d tensor is not supported")
    M, N = inp.shape
    settings = _settings(N)
    out = torch.empty_like(inp)
    with _device_guard(inp):
        softmax_kernel_inner[(M,)](out, inp.contiguous(), M, N, TILE=settings.block)
    return out


def custom_kernel(x):
    return softmax(x, dim=-1)
