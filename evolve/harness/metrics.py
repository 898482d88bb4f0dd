"""Error metrics of an output against its reference, and the per-dtype policy that turns them into a verdict.

Every torch function used here is bound when this module is imported, which the sandbox does before it imports a
candidate: a candidate that later replaces torch.abs or Tensor.max does not change what this module computes.
"""
from __future__ import annotations

import math

import torch

from .problem import SHORT_DTYPE

_abs = torch.abs
_sub = torch.sub
_div = torch.div
_mul = torch.mul
_sum = torch.sum
_max = torch.max
_argmax = torch.argmax
_clamp_min = torch.clamp_min
_gt = torch.gt
_count_nonzero = torch.count_nonzero
_isfinite = torch.isfinite
_all = torch.all
_to = torch.Tensor.to
_item = torch.Tensor.item
_reshape = torch.reshape
_float64 = torch.float64
_float32 = torch.float32
_zeros = torch.zeros


def _scalar(t) -> float:
    return float(_item(t))


def all_finite(t) -> bool:
    return bool(_item(_all(_isfinite(t))))


def error_metrics(out, ref, floor: float, rtol: float) -> dict:
    """Max abs/rel error, MSE, RMSE, PSNR, cosine similarity and the share of elements off, all in float64.

    rel error of an element = |out - ref| / max(|ref|, floor); an element is off when that exceeds rtol.
    """
    o = _reshape(_to(out, dtype=_float64), (-1,))
    r = _reshape(_to(ref, dtype=_float64), (-1,))
    n = o.numel()
    diff = _abs(_sub(o, r))
    rel = _div(diff, _clamp_min(_abs(r), floor))
    worst = int(_item(_argmax(rel)))
    mse = _scalar(_sum(_mul(diff, diff))) / max(n, 1)
    peak = _scalar(_max(_abs(r))) if n else 0.0
    dot = _scalar(_sum(_mul(o, r)))
    norms = math.sqrt(_scalar(_sum(_mul(o, o))) * _scalar(_sum(_mul(r, r))))
    bad = int(_item(_count_nonzero(_gt(rel, rtol))))
    return {
        "max_abs": _scalar(_max(diff)) if n else 0.0,
        "max_rel": _scalar(rel[worst]) if n else 0.0,
        "mse": mse,
        "rmse": math.sqrt(mse),
        "psnr": psnr(mse, peak),
        # a reference entirely below the floor is judged element by element, absolutely: its direction is noise (a
        # GPU's flush-to-zero returns 0 there), and an all-zero side has none
        "cosine": 1.0 if (peak < floor or norms == 0) and not bad else dot / norms if norms > 0 else 0.0,
        "frac_off": bad / max(n, 1),
        "n_off": bad,
        "worst_index": unravel(worst, tuple(ref.shape)) if n else [],
    }


def max_rel(out, ref, floor: float) -> float:
    """The worst |out - ref| / max(|ref|, floor) in float32 on the tensors' own device (NaN if out has NaN)."""
    return _scalar(max_rel_tensor(out, ref, floor))


def max_rel_tensor(out, ref, floor: float):
    """max_rel as a 0-d tensor on the tensors' device, without waiting for it (NaN if out has NaN)."""
    o = _to(out, dtype=_float32)
    r = _to(ref, dtype=_float32)
    if not o.numel():
        return _zeros((), dtype=_float32, device=o.device)
    return _max(_div(_abs(_sub(o, r)), _clamp_min(_abs(r), floor)))


def unravel(flat: int, shape: tuple) -> list[int]:
    index = []
    for size in reversed(shape):
        flat, i = divmod(flat, size)
        index.append(i)
    return index[::-1]


def psnr(mse: float, peak: float) -> float:
    """Peak signal-to-noise ratio in dB against the reference's largest magnitude; inf for an exact match."""
    if mse == 0:
        return math.inf
    if peak == 0:
        return -math.inf
    return 10.0 * math.log10(peak * peak / mse)


def judge(metrics: dict, rtol: float, min_cosine: float) -> str | None:
    """None when the output passes the policy, else a one-line reason (without the case label)."""
    if metrics["n_off"]:
        where = ", ".join(str(i) for i in metrics["worst_index"])
        pct = 100.0 * metrics["frac_off"]
        share = f"{pct:.2g}% of elements off" if pct >= 0.01 else f"{metrics['n_off']} element(s) off"
        return f"max_rel={metrics['max_rel']:.3g} at ({where}) > rtol {rtol:g}; {share}"
    if metrics["cosine"] < min_cosine:
        return f"cosine={metrics['cosine']:.8f} < {min_cosine}"
    return None


def summarize(per_dtype: dict) -> str:
    """`fp32 max_abs=.. max_rel=.. rmse=.. psnr=.. dB | bf16 ...` from the worst metrics seen per dtype."""
    parts = []
    for dtype, m in per_dtype.items():
        psnr_text = "inf" if math.isinf(m["psnr"]) else f"{m['psnr']:.0f}"
        parts.append(
            f"{SHORT_DTYPE.get(dtype, dtype)} max_abs={m['max_abs']:.2g} max_rel={m['max_rel']:.2g} "
            f"rmse={m['rmse']:.2g} psnr={psnr_text} dB cos={m['cosine']:.6f}"
        )
    return "worst: " + " | ".join(parts)


def worst_of(a: dict | None, b: dict) -> dict:
    """Combine two metric dicts keeping the worse figure of each."""
    if a is None:
        return dict(b)
    keep_max = ("max_abs", "max_rel", "mse", "rmse", "frac_off", "n_off")
    out = {k: max(a[k], b[k]) for k in keep_max}
    out["psnr"] = min(a["psnr"], b["psnr"])
    out["cosine"] = min(a["cosine"], b["cosine"])
    out["worst_index"] = a["worst_index"] if a["max_rel"] >= b["max_rel"] else b["worst_index"]
    return out
