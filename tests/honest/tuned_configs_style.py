"""Honest: the shape of tuned kernels in model-serving code. Configs kept in a NamedTuple table, an autotuner with a
config-pruning function and a lambda heuristic, tl.static_assert in the kernel, the device capability read on the
host (and a default without a GPU), __all__ naming the entry point."""
from typing import NamedTuple

import torch
import triton
import triton.language as tl

__all__ = ["custom_kernel"]


class RowConfig(NamedTuple):
    max_cols: int
    block: int
    warps: int


TABLE = (RowConfig(1024, 1024, 4), RowConfig(8192, 8192, 8), RowConfig(32768, 32768, 16))


def prune(configs, named_args, **kwargs):
    n = named_args["n_cols"]
    kept = [c for c in configs if c.kwargs["CHUNK"] <= max(1024, triton.next_power_of_2(n))]
    return kept or configs[:1]


@triton.autotune(configs=[triton.Config({"CHUNK": c}, num_warps=w) for c, w in ((1024, 4), (2048, 8), (4096, 8))],
                 key=["n_cols"], prune_configs_by={"early_config_prune": prune})
@triton.heuristics({"EVEN": lambda args: args["n_cols"] % args["CHUNK"] == 0})
@triton.jit
def chunked_kernel(out_ptr, x_ptr, n_cols, CHUNK: tl.constexpr, EVEN: tl.constexpr):
    tl.static_assert(CHUNK >= 16, "chunks of at least 16 elements")
    row = tl.program_id(0)
    offs = tl.arange(0, CHUNK)
    m = tl.full([CHUNK], -float("inf"), tl.float32)
    s = tl.zeros([CHUNK], tl.float32)
    for start in range(0, n_cols, CHUNK):
        if EVEN:
            x = tl.load(x_ptr + row * n_cols + start + offs).to(tl.float32)
        else:
            x = tl.load(x_ptr + row * n_cols + start + offs, mask=start + offs < n_cols,
                        other=-float("inf")).to(tl.float32)
        m_new = tl.maximum(m, x)
        s = s * tl.where(m_new == -float("inf"), 0.0, tl.exp(m - m_new)) + tl.where(
            m_new == -float("inf"), 0.0, tl.exp(x - m_new))
        m = m_new
    mx = tl.max(m, axis=0)
    total = tl.sum(s * tl.exp(m - mx), axis=0)
    for start in range(0, n_cols, CHUNK):
        x = tl.load(x_ptr + row * n_cols + start + offs, mask=start + offs < n_cols, other=-float("inf"))
        y = tl.exp(x.to(tl.float32) - mx) / total
        tl.store(out_ptr + row * n_cols + start + offs, y.to(out_ptr.dtype.element_ty), mask=start + offs < n_cols)


@triton.jit
def one_block_kernel(out_ptr, x_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n_cols + offs, mask=offs < n_cols, other=-float("inf")).to(tl.float32)
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * n_cols + offs, (e / tl.sum(e, axis=0)).to(out_ptr.dtype.element_ty), mask=offs < n_cols)


def capability(device: torch.device):
    return torch.cuda.get_device_capability(device) if device.type == "cuda" else (9, 0)


def custom_kernel(x):
    x = x.contiguous()
    n_rows, n_cols = x.shape
    out = torch.empty_like(x)
    major, _ = capability(x.device)
    for cfg in TABLE:
        if n_cols <= cfg.max_cols and major >= 8:
            one_block_kernel[(n_rows,)](out, x, n_cols, BLOCK=max(16, triton.next_power_of_2(n_cols)),
                                        num_warps=cfg.warps)
            return out
    chunked_kernel[(n_rows,)](out, x, n_cols)
    return out
