"""What a verdict is worth to the search: its score, how far its timing noise lets another beat it, and whether its
time is a guide to its settings'."""
from __future__ import annotations

import math

from .harness import Verdict
from .population import NOISE_CEILING, NOISE_FLOOR


def score_of(verdict: Verdict) -> float | None:
    """Fitness on a GPU; under the CPU interpreter the geomean of 1 / (interpreter ms) over the CPU shapes, which
    only ranks kernels by how much work the interpreter does for them and says nothing about GPU speed."""
    if not verdict.ok:
        return None
    if verdict.fitness is not None:
        return float(verdict.fitness)
    if verdict.mode == "gpu":  # timed on some cases only (a race lost): a partial figure never ranks
        return None
    times = [s["ms"] for s in verdict.shapes if s.get("ms")]
    return math.exp(-sum(math.log(t) for t in times) / len(times)) if times else None


def noise_of(verdict: Verdict) -> float:
    """Relative noise of a verdict's times: the median spread of its timing windows per shape (interquartile range
    over median), between NOISE_FLOOR and NOISE_CEILING. Interpreter times carry no spread: the floor. The ceiling
    keeps a kernel whose own times scatter (by accident or on purpose) from holding off a clearly faster challenger."""
    spreads = sorted(float(s["spread"]) for s in verdict.shapes if s.get("spread") is not None)
    return min(NOISE_CEILING, max(NOISE_FLOOR, spreads[len(spreads) // 2] if spreads else 0.0))


def compiled_anew(verdict: Verdict) -> bool:
    """Whether the evaluation compiled its kernels (every evaluation does; an archived verdict may record a compile
    restored from an earlier evaluation of the same source): only then does its time say how long a setting of it,
    compiled from scratch, should take."""
    return not any(step.get("compiled_restored") for step in verdict.setup)
