"""The least time a unit could take on the card (the larger of its bytes over the card's measured bandwidth and its
flops over its measured matmul rate, the same peaks evolve's roofline uses), and the end-to-end gain that would bring
(Amdahl). A fused chain's bytes are its outside inputs and its results only (the last node's, and each intermediate's
that is also read outside the chain): that is what fusing saves."""
from __future__ import annotations

import math

from .graph import op_name, tensor_meta

# floating point operations per output element of each row-kernel op (rough: they set compute bounds that memory
# bounds exceed by far for these ops)
FLOPS_PER_ELEMENT = {"layer_norm": 8, "rms_norm": 4, "softmax": 5, "gelu": 8, "silu": 4, "sigmoid": 4, "tanh": 4}
ITEM_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2, "float64": 8}


def _tensor_bytes(node) -> int:
    meta = tensor_meta(node) if hasattr(node, "meta") else None
    if meta is None:
        return 0
    return math.prod(meta[0]) * ITEM_BYTES.get(str(meta[1]).removeprefix("torch."), 4)


def unit_bytes(unit) -> int:
    """Every outside input read once and every result written once."""
    return sum(_tensor_bytes(node) for node in unit.inputs) + sum(_tensor_bytes(node) for node in unit.outputs)


def unit_flops(unit) -> int:
    total = 0
    for node in unit.nodes:
        name, out = op_name(node), tensor_meta(node)
        elements = math.prod(out[0]) if out else 0
        if name in ("linear", "matmul", "bmm", "mm") and node.args and tensor_meta(node.args[0]) is not None:
            total += 2 * elements * tensor_meta(node.args[0])[0][-1]  # 2 * M * N * K
        else:
            total += FLOPS_PER_ELEMENT.get(name, 1) * elements
    return total


def bound_ms(unit, peaks: dict) -> float:
    flops_peak = peaks["flops"].get(unit.dtype, max(peaks["flops"].values()))
    return 1e3 * max(unit_bytes(unit) / peaks["bandwidth"], unit_flops(unit) / flops_peak)


def amdahl(total_ms: float, part_ms: float, part_bound_ms: float) -> float:
    """The end-to-end speed-up if `part_ms` of `total_ms` took `part_bound_ms` instead."""
    return total_ms / max(total_ms - part_ms + part_bound_ms, 1e-12)


def card_peaks() -> tuple[dict | None, str]:
    """This card's peaks as evolve measured and kept them, or None and what to do to have them."""
    import json

    from ..harness.measurer.calibration import device_key
    from ..harness.parent.ladder import default_cache_dir

    key = device_key(True)
    try:
        kept = json.loads((default_cache_dir() / "peaks.json").read_text()).get(key)
    except (OSError, ValueError):
        kept = None
    if kept and kept.get("bandwidth") and kept.get("flops"):
        return kept, f"peaks of {key.split('|')[0]} as evolve measured them"
    return None, (f"no measured peaks for {key.split('|')[0]} in {default_cache_dir() / 'peaks.json'}: run one "
                  "`evolve eval` of any kernel on this card (it measures and keeps them), then profile again")
