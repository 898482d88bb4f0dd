"""Knob settings from the optuna tuner (knobs.py): the leaders' structures first, each setting a candidate of its own.

A tuned setting's time limit is a few times its parent's evaluation: its parent compiled and ran the same code, and a
setting that takes far longer (2 warps on softmax's 131072-wide rows held whole compiled for over 180 s on an H100)
is no contender, while its evaluation holds a card other runs wait for."""
from __future__ import annotations

from .. import compose
from ..archive import Candidate
from ..knobs import LAUNCH_KNOBS, Tuner, structure_key
from .base import Landing, Proposal, Strategy, View

TUNED_TIMES = 3.0  # a tuned setting's limit: this many times its parent's evaluation ...
TUNED_MIN_S = 60.0  # ... and at least this (never above --timeout)


def tuned_limit(parent_seconds: float | None) -> float | None:
    """The time limit of a setting tuned from a parent whose evaluation here, compiling included, took
    parent_seconds (None: no such time of the parent's, and no limit below --timeout)."""
    return None if parent_seconds is None else max(TUNED_MIN_S, TUNED_TIMES * parent_seconds)


class Tuning(Strategy):
    name = "tuner"

    def __init__(self, seed: int, trials: int):
        self.tuner = Tuner(seed=seed, trials=trials)
        self._structures: dict[int, str] = {}  # candidate id -> its structure key (parsing a source takes a while)

    def start(self, view: View) -> None:
        # the interpreter ignores launch options: its tuner leaves them as written, from the first setting it records
        self.tuner.ignored = LAUNCH_KNOBS if view.device.startswith("cpu") else frozenset()

    def propose(self, island: int, view: View) -> Proposal | None:
        """One setting for a structure that still has untried settings; None when none has. The leaders go first, the
        one tried least of them next, then the rest by rank. Before any verdict is in, the problem's own kernels still
        in the pipeline are tuned ahead of their verdicts: lanes that would wait for them idle (a TileLang seed's first
        evaluation takes minutes) try their settings meanwhile."""
        population = view.population
        in_flight = [cand for cand in view.in_flight if cand.proposer in ("seed", "solution")]
        ranked = population.ranked()
        # sorted() keeps rank order among leaders tried as often
        leaders = sorted(self.leaders(ranked, view), key=lambda c: self.tuner.suggested.get(self._structure(c), 0))
        for base in leaders + population.ranked(population.islands[island]) + ranked + in_flight:
            # None: no knobs, or none the tuner varies (launch options under the interpreter), or all tried
            suggestion = self.tuner.suggest(base.source)
            if suggestion is None:
                continue
            source, values, trial = suggestion
            return Proposal({"source": source, "parent_ids": (base.id,), "island": island,
                             "generation": base.generation + 1, "proposer": "tuner", "knobs": values},
                            self.name, note={"base": base.source, "trial": trial},
                            time_limit_s=tuned_limit(view.lane_seconds.get(base.id)))
        return None

    def landed(self, landing: Landing, view: View) -> None:
        """Its own trials are told their figures; the problem's own kernels and the archive's members with knobs
        are remembered as settings already tried."""
        cand, proposal = landing.cand, landing.proposal
        if proposal is not None and landing.answers(self.name):
            raced = landing.verdict.raced if landing.verdict is not None else None
            if raced:  # cut short by the race: at most its best possible figure, and no whole case table
                self.tuner.tell(proposal.note["base"], proposal.note["trial"], raced.get("best_possible"), None)
            else:
                self.tuner.tell(proposal.note["base"], proposal.note["trial"],
                                cand.score if cand is not None else None, view.figures.values(cand))
        elif cand is not None and cand.knobs and cand.source and \
                (landing.archived or cand.proposer in ("seed", "solution")):
            self.tuner.remember(cand.source, cand.knobs, cand.score, view.figures.values(cand))

    def leaders(self, ranked: list, view: View) -> list:
        """The kernels worth tuning first, best first: the best, and the best of each structure that is best on some
        benchmark case (a setting of it may win that case's regime, and the composer dispatch to it there). Tuning
        only the best spent a 5-minute layernorm run on the 36 settings of its seed, all slower, while the kernel
        that led one case was never tuned."""
        lead: dict[str, tuple[float, Candidate]] = {}
        for cand in ranked:
            if cand.proposer == compose.COMPOSER or not cand.source:
                continue  # a composite leads with its parts' figures: the parts are what is tuned
            for label, value in view.figures.values(cand).items():
                if label not in lead or value > lead[label][0]:
                    lead[label] = (value, cand)
        chosen = {c.id for _, c in lead.values()} | ({ranked[0].id} if ranked else set())
        out, structures = [], set()
        for cand in ranked:  # one per structure: its best-ranked leader
            key = self._structure(cand) if cand.id in chosen else None
            if key is not None and key not in structures:
                structures.add(key)
                out.append(cand)
        return out

    def _structure(self, cand: Candidate) -> str:
        if cand.id not in self._structures:
            self._structures[cand.id] = structure_key(cand.source or "")
        return self._structures[cand.id]
