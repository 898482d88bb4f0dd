"""Racing the benchmark rung: with the run's bar (the best's figure less its noise, EvalOptions.race_below), the
cases are timed shortest bound first, and timing stops once the candidate's best possible fitness (every case not yet
timed at the roofline's ceiling) is below the bar. It is then a correct kernel with a partial figure, which the
parent gives no fitness: it can never rank above the best it could not reach."""
from __future__ import annotations

from ..shared.roofline import best_possible, bound_seconds, cheapest_first


class Race:
    def __init__(self, below: float, peaks: dict, profiles: dict, cases: list):
        """profiles: each case's bytes, flops and dtype by label, as the reference gives them."""
        self.below, self.peaks = float(below), peaks
        self.cases = len(cases)
        self.weights = {case.label: case.weight for case in cases}
        self.bounds = {}
        for case in cases:
            profile = profiles[case.label]
            self.bounds[case.label] = bound_seconds(profile["bytes"], profile["flops"], case.dtype or profile["dtype"],
                                                    peaks)
        self.fractions: list[float] = []
        self.timed: list[str] = []

    def order(self, cases: list) -> list:
        return cheapest_first(cases, self.bounds)

    def lost(self, label: str, ms: float) -> bool:
        """A case's figure is in: whether the candidate can no longer reach the bar."""
        self.fractions.append(self.bounds[label] / (ms * 1e-3) if ms > 0 else 0.0)
        self.timed.append(label)
        return len(self.fractions) < self.cases and self.best_possible() < self.below

    def best_possible(self) -> float:
        left = sum(w for label, w in self.weights.items() if label not in self.timed)
        return best_possible(self.fractions, [self.weights[label] for label in self.timed], left)

    def record(self) -> dict:
        """What the benchmark rung says of a race it stopped."""
        return {"below": round(self.below, 6), "best_possible": round(self.best_possible(), 6),
                "timed": len(self.fractions), "cases": self.cases}
