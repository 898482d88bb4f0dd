"""The roofline of one benchmark case, and the race it sets a candidate: one definition for the measurer, which stops
timing a candidate that can no longer reach the run's best, and the parent, which computes the fitness."""
from __future__ import annotations

import math

ROOFLINE_CEILING = 1.05  # a fraction above this is a measurement error or a cheat, never a record


def bound_seconds(nbytes: float, flops: float, dtype: str, peaks: dict) -> float:
    """The least time the case can take on the card: its bytes at the bandwidth, or its flops at the dtype's rate
    (a dtype with no measured rate, fp8, takes the fastest measured one: the bound is then never too long)."""
    flops_peak = peaks["flops"].get(dtype, max(peaks["flops"].values()))
    return max(nbytes / peaks["bandwidth"], flops / flops_peak)


def best_possible(fractions: list[float], cases: int) -> float:
    """The highest fitness (geometric mean over `cases`) a candidate can still reach with `fractions` timed: every
    case not yet timed at the ceiling."""
    left = cases - len(fractions)
    logs = [math.log(max(f, 1e-12)) for f in fractions] + [math.log(ROOFLINE_CEILING)] * left
    return math.exp(sum(logs) / cases)


def cheapest_first(cases: list, bounds: dict) -> list:
    """The cases in the order a race times them: the shortest bound first (bounds: label -> seconds)."""
    return sorted(cases, key=lambda case: bounds[case.label])
