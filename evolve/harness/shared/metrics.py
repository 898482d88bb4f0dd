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
_narrow = torch.narrow
_add = torch.add
_float64 = torch.float64
_float32 = torch.float32
_zeros = torch.zeros
_stack = torch.stack
_tolist = torch.Tensor.tolist

CHUNK = 1 << 25  # elements a pass of the whole-output figures takes: 256 MB of float64 an operand, whatever the size


def _chunks(out, ref, dtype, chunk: int):
    """(start, a chunk of out, the same chunk of ref on out's device), both flattened and in dtype, `chunk` elements
    at a time: the whole-output figures never hold a full-size copy of either."""
    o_all, r_all = _reshape(out, (-1,)), _reshape(ref, (-1,))
    n = o_all.numel()
    for start in range(0, n, chunk):
        size = min(chunk, n - start)
        o = _to(_narrow(o_all, 0, start, size), dtype=dtype)
        yield start, o, _to(_narrow(r_all, 0, start, size), device=o.device, dtype=dtype)


def _scalar(t) -> float:
    return float(_item(t))


def all_finite(t) -> bool:
    return bool(_item(_all(_isfinite(t))))


def error_metrics(out, ref, floor: float, rtol: float, chunk: int = CHUNK) -> dict:
    """Max abs/rel error, MSE, RMSE, PSNR, cosine similarity, the whole output's relative L2 error and norm ratio
    (whole()) and the share of elements off, all in float64, summed `chunk` elements at a time (a 6.4 GB output
    would otherwise take several float64 copies of itself at once).

    rel error of an element = |out - ref| / max(|ref|, floor); an element is off when that exceeds rtol.
    """
    n = out.numel()
    rows = []  # per chunk: max rel, its index, max abs, dd, dot, oo, rr, peak, elements off
    for start, o, r in _chunks(out, ref, _float64, chunk):
        diff = _abs(_sub(o, r))
        rel = _div(diff, _clamp_min(_abs(r), floor))
        at = _argmax(rel)
        rows.append(_stack([rel[at], _add(_to(at, dtype=_float64), start), _max(diff), _sum(_mul(diff, diff)),
                            _sum(_mul(o, r)), _sum(_mul(o, o)), _sum(_mul(r, r)), _max(_abs(r)),
                            _to(_count_nonzero(_gt(rel, rtol)), dtype=_float64), o[at], r[at]]))
    if rows:
        table = _stack(rows)
        pick = int(_item(_argmax(table[:, 0])))  # the first chunk holding the largest (or a NaN) error
        worst_rel, worst, max_abs = _scalar(table[pick, 0]), int(_item(table[pick, 1])), _scalar(_max(table[:, 2]))
        dd, dot, oo, rr, bad = _tolist(_sum(table[:, [3, 4, 5, 6, 8]], 0))
        peak, bad = _scalar(_max(table[:, 7])), int(bad)
        worst_out, worst_ref = _scalar(table[pick, 9]), _scalar(table[pick, 10])
    else:
        worst_rel = worst = max_abs = dd = dot = oo = rr = peak = bad = worst_out = worst_ref = 0
    mse = dd / max(n, 1)
    norms = math.sqrt(oo * rr)
    rel_l2, norm_ratio = whole(dd, oo, rr, n, floor)
    return {
        "max_abs": max_abs,
        "max_rel": worst_rel,
        "mse": mse,
        "rmse": math.sqrt(mse),
        "psnr": psnr(mse, peak),
        # a reference entirely below the floor is judged element by element, absolutely: its direction is noise (a
        # GPU's flush-to-zero returns 0 there), and an all-zero side has none
        "cosine": 1.0 if (peak < floor or norms == 0) and not bad else dot / norms if norms > 0 else 0.0,
        "rel_l2": rel_l2,
        "norm_ratio": norm_ratio,
        "frac_off": bad / max(n, 1),
        "n_off": bad,
        "worst_index": unravel(worst, tuple(ref.shape)) if n else [],
        "worst_out": worst_out,  # the output and the reference at worst_index
        "worst_ref": worst_ref,
        "floor": floor,
    }


def whole(dd: float, oo: float, rr: float, n: int, floor: float) -> tuple[float, float]:
    """(rel_l2, norm_ratio) from the sums of (out - ref)^2, out^2 and ref^2 over n elements.

    rel_l2 = rms(out - ref) / max(rms(ref), floor): the element rule's relative error, for the whole output, so it
    sees direction and scale together; where the reference is below the floor the error is absolute, as an element's.
    norm_ratio = ||out|| / ||ref|| (0 for an all-zero output, inf for a non-zero one of an all-zero reference).
    """
    n = max(n, 1)
    rel_l2 = math.sqrt(dd / n) / max(math.sqrt(rr / n), floor)
    norm_ratio = math.sqrt(oo / rr) if rr > 0 else 1.0 if oo == 0 else math.inf
    return rel_l2, norm_ratio


def l2_bound(min_cosine: float) -> float:
    """The largest rel_l2 allowed: that of an output of the reference's norm at the cosine bound, sqrt(2(1 - cos)).

    So for an output of the right scale the two checks agree, and the scale itself may be off by at most this
    fraction: 0.45% at cosine 0.99999, 4.5% at 0.999 (rounding to bf16 costs an element at most 0.39%, to fp16
    0.05%, and round-to-nearest leaves the norm all but unchanged)."""
    return math.sqrt(2.0 * max(0.0, 1.0 - min_cosine))


def scale_reason(out, ref, floor: float, min_cosine: float, chunk: int = CHUNK) -> str | None:
    """The whole-output check of judge(), on the tensors themselves (on out's device, in float64, one wait): for the
    formats whose own check is not scale-aware, applied to every checked and timed output. Summed a chunk at a time:
    a 6.4 GB float32 output would otherwise take four 12.9 GB float64 temporaries on the card."""
    n = out.numel()
    parts = []
    for _, o, r in _chunks(out, ref, _float64, chunk):
        d = _sub(o, r)
        parts.append(_stack([_sum(_mul(d, d)), _sum(_mul(o, o)), _sum(_mul(r, r))]))
    dd, oo, rr = _tolist(_sum(_stack(parts), 0)) if parts else (0.0, 0.0, 0.0)
    n = max(n, 1)
    return whole_reason(*whole(dd, oo, rr, n, floor), math.sqrt(dd / n), l2_bound(min_cosine))


def whole_reason(rel_l2: float, norm_ratio: float, rmse: float, bound: float) -> str | None:
    """None when rel_l2 is within bound, else a reason that says how far the output's scale is off."""
    if rel_l2 <= bound:  # False for NaN
        return None
    if math.isinf(norm_ratio):
        return f"the reference is all zero but the output is not (rms {rmse:.3g}; relative L2 error {rel_l2:.3g})"
    if norm_ratio == 0:
        what = "the output is all zeros"
    elif abs(norm_ratio - 1) > bound:  # the scale alone is off by more than the bound
        what = f"the output's scale is off: its norm is {norm_ratio:.4g}x the reference's"
    else:
        what = f"its norm is {norm_ratio:.4g}x the reference's: the values are off, not the scale"
    return f"relative L2 error ||out - ref|| / ||ref|| = {rel_l2:.3g} > {bound:.3g}; {what}"


def max_rel(out, ref, floor: float) -> float:
    """The worst |out - ref| / max(|ref|, floor) in float32 on the tensors' own device (NaN if out has NaN)."""
    return _scalar(max_rel_tensor(out, ref, floor))


def max_rel_tensor(out, ref, floor: float, chunk: int = CHUNK):
    """max_rel as a 0-d tensor on out's device, without waiting for it (NaN if out has NaN), a chunk at a time (ref
    may lie on the host: each chunk goes to out's device)."""
    if not out.numel():
        return _zeros((), dtype=_float32, device=out.device)
    parts = []
    for _, o, r in _chunks(out, ref, _float32, chunk):
        parts.append(_max(_div(_abs(_sub(o, r)), _clamp_min(_abs(r), floor))))
    return _max(_stack(parts))


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
    if math.isnan(mse):
        return math.nan
    if peak == 0 or math.isinf(mse):
        return -math.inf
    return 10.0 * math.log10(peak * peak / mse)


def judge(metrics: dict, rtol: float, min_cosine: float) -> str | None:
    """None when the output passes the policy, else a one-line reason (without the case label)."""
    if metrics["n_off"]:
        where = ", ".join(str(i) for i in metrics["worst_index"])
        pct = 100.0 * metrics["frac_off"]
        share = f"{pct:.2g}% of elements off" if pct >= 0.01 else f"{metrics['n_off']} element(s) off"
        return (f"max_rel={metrics['max_rel']:.3g} at ({where}) > rtol {rtol:g}{_there(metrics)}; {share}")
    if metrics["cosine"] < min_cosine:
        return f"cosine={metrics['cosine']:.8f} < {min_cosine}"
    # the cosine is blind to scale (zeros and 2x the reference score 1); the relative L2 error is not
    return whole_reason(metrics["rel_l2"], metrics["norm_ratio"], metrics["rmse"], l2_bound(min_cosine))


def _there(metrics: dict) -> str:
    """The worst element's output and reference: where |ref| is below the floor the error counts against the floor
    (an output near zero by cancellation, a GELU of a large negative x, wants a floor near the inputs' scale)."""
    if "worst_out" not in metrics:
        return ""
    out, ref, floor = metrics["worst_out"], metrics["worst_ref"], metrics.get("floor", 0.0)
    below = f", below the floor {floor:g}: judged as |out - ref| / floor" if abs(ref) < floor else ""
    return f" (out {out:.7g}, ref {ref:.7g}{below})"


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
    worse = a if a["max_rel"] >= b["max_rel"] else b
    for key in ("worst_index", "worst_out", "worst_ref", "floor"):
        if key in worse:
            out[key] = worse[key]
    whole_of = a if a["rel_l2"] >= b["rel_l2"] else b
    out["rel_l2"], out["norm_ratio"] = whole_of["rel_l2"], whole_of["norm_ratio"]
    return out
