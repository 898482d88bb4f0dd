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


def fitness_of(fractions: list[float], weights: list[float] | None = None) -> float:
    """The fitness: the geometric mean of the cases' fractions of their roofline, each case weighted (1 each unless
    the problem says how often a shape runs)."""
    weights = weights or [1.0] * len(fractions)
    return math.exp(sum(w * math.log(max(f, 1e-12)) for f, w in zip(fractions, weights)) / sum(weights))


def best_possible(fractions: list[float], weights: list[float], left: float) -> float:
    """The highest fitness a candidate can still reach with `fractions` timed (their weights): every case not yet
    timed (`left`, their weights summed) at the ceiling."""
    return fitness_of([*fractions, ROOFLINE_CEILING], [*weights, left]) if left > 0 else fitness_of(fractions, weights)


def cheapest_first(cases: list, bounds: dict) -> list:
    """The cases in the order a race times them: the shortest bound first (bounds: label -> seconds)."""
    return sorted(cases, key=lambda case: bounds[case.label])
