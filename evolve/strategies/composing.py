"""Shape-dispatch composites (compose.py): one file that dispatches per shape regime between verified kernels,
proposed when a plan from the verdicts in so far beats the best by more than the noise."""
from __future__ import annotations

from .. import compose
from ..archive import source_hash
from ..population import NOISE_FLOOR
from .base import Proposal, Strategy, View


class Composing(Strategy):
    name = "composer"

    def __init__(self, problem, figures, emit):
        self.planner = compose.Planner(problem, figures)
        self.emit = emit

    def start(self, view: View) -> None:
        """Composites archived in the run's scope are not proposed again."""
        for cand in view.archive.candidates(**view.scope):
            if cand.proposer == compose.COMPOSER:
                self.planner.composed.add(cand.hash)

    def plan(self, view: View) -> compose.Plan | None:
        """The composite worth evaluating now, or None (compose.Planner says when one is)."""
        population = view.population
        return self.planner.next(view.best, population.ranked(),
                                 lambda i: population.noise.get(i, NOISE_FLOOR), source_hash)

    def propose(self, island: int, view: View) -> Proposal | None:
        """Planned from the verdicts in so far, one composite in the pipeline at a time: with every lane kept busy by
        tuner trials the pipeline is never empty, and a plan that a later verdict betters is planned again then
        (another source, another composite)."""
        if any(cand.proposer == compose.COMPOSER for cand in view.in_flight):
            return None
        found = self.plan(view)
        if found is None:
            return None
        self.planner.composed.add(source_hash(found.source))
        parents = [view.archive.get(pid) for pid in found.parts]
        self.emit({"kind": "compose", "plan": found, "incumbent": view.best})
        return Proposal({"source": found.source, "parent_ids": found.parts, "island": island,
                         "generation": max(p.generation for p in parents) + 1, "proposer": compose.COMPOSER,
                         "template": "shape-dispatch"}, self.name)
