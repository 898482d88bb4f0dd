"""The one intake of a run's verdicts: a fresh one from a lane, a kept one of the problem's own kernels, a duel's
re-timing, the end-of-run re-timing and the archive's members at the start all land here. Landing writes the
archive, applies the timing noise and fair promotion (promotion.py), admits to the population, emits the run's events
and shows the landing to every strategy (strategies/), which is how the tuner hears its trials, repairs are queued
and digests begin."""
from __future__ import annotations

from .archive import Archive, Candidate
from .population import Population
from .promotion import Duels
from .scoring import compiled_anew, noise_of, score_of
from .standing import promote_retimed
from .strategies import Landing, Proposal


class Ledger:
    def __init__(self, archive: Archive, population: Population, duels: Duels, emit, strategies: dict, view):
        self.archive, self.population, self.duels, self.emit = archive, population, duels, emit
        self.strategies, self.view = strategies, view  # view(): the strategies' View of the run as it is now
        self.run_id = 0
        self.evaluated = 0  # candidates with a verdict in this run
        self.since_improvement = 0  # verdicts since the best last changed
        self.problem_fault: str | None = None  # the problem's own code failed in an evaluation: the run stops
        self.unusable, self.last_unusable = 0, ""  # proposals in a row that gave nothing to evaluate, and why
        self.unevaluated_run, self.last_unevaluated = 0, ""  # candidates in a row no lane could evaluate, and why
        self.lane_seconds: dict[int, float] = {}  # candidate id -> its evaluation's seconds, where it compiled anew

    def admit(self, cand: Candidate, noise: float, contend: bool = True) -> None:
        if self.population.admit(cand, noise, contend=contend):
            self.since_improvement = 0

    def land(self, cand: Candidate, verdict, proposal: Proposal | None, *, seconds: float, lane: str | None,
             fresh: bool) -> Candidate:
        """A verdict for an archived candidate: fresh from a lane (seconds: its evaluation's, less its waits for the
        card) or kept by this machine (seconds: its rungs'). Returns the evaluated candidate."""
        if fresh:
            self.unevaluated_run = 0
        self.problem_fault = self.problem_fault or verdict.problem_fault
        evaluated = self.archive.record_verdict(cand.id, verdict, score_of(verdict))
        if compiled_anew(verdict):  # the time limit of settings tuned from it
            self.lane_seconds[evaluated.id] = seconds
        self.evaluated += 1
        self.since_improvement += 1
        incumbent = self.duels.unfair_win(evaluated, verdict)
        if incumbent is None or not self.duels.start(evaluated, incumbent, verdict, lane):
            self.admit(evaluated, noise_of(verdict), contend=incumbent is None)
        if fresh:
            self.duels.measured_now(evaluated, verdict)
        self.emit({"kind": "candidate", "candidate": evaluated, "seconds": seconds if fresh else 0.0,
                   "best": self.population.best, "lane": lane, "known": not fresh})
        self.show(Landing(evaluated, verdict, proposal, fresh=fresh))
        return evaluated

    def settle(self, done) -> None:
        """A duel's re-timing is in: the challenger contends for best where its win holds, else it is a member."""
        cand, incumbent, noise, figure, holds = self.duels.settle(done, self.run_id)
        self.admit(cand, noise, contend=holds)
        self.emit({"kind": "duel_result", "candidate": cand, "incumbent": incumbent, "figure": figure,
                   "holds": holds, "best": self.population.best})

    def retimed(self, ranked: list, results: list) -> None:
        """The end-of-run re-timing is in (its figures archived by retime.py): one that beat the held best in every
        round is the run's best (standing.py)."""
        promote_retimed(self.population, ranked, results)

    def refused(self, cand: Candidate | None, proposal: Proposal) -> None:
        """A proposal with nothing to evaluate: a duplicate of an archived kernel (None) or no usable source."""
        self.unusable += 1
        if cand is None:
            self.last_unusable = "a duplicate of an archived kernel"
            self.emit({"kind": "duplicate"})
        else:
            self.last_unusable = cand.error or "no usable source"
            self.emit({"kind": "invalid", "candidate": cand})
        self.show(Landing(cand, None, proposal))

    def accepted(self) -> None:
        """A proposal was archived and handed to a lane."""
        self.unusable = 0

    def unevaluated(self, cand: Candidate, reason: str | None, lanes_failed: bool = True) -> None:
        """No lane could evaluate it: it stays pending in the archive for --resume. lanes_failed: lanes tried it
        (counted toward the stop), rather than none being left to hand it to."""
        self.emit({"kind": "unevaluated", "candidate": cand, "reason": reason})
        if lanes_failed:
            self.unevaluated_run += 1
            self.last_unevaluated = reason or ""

    def archived(self, cand: Candidate, noise: float) -> None:
        """A correct kernel the archive held when the run started joins the population, with the noise measured
        then, so near-ties are judged as before a crash."""
        self.admit(cand, noise)
        self.show(Landing(cand, None, None, archived=True))

    def show(self, landing: Landing) -> None:
        view = self.view()
        for strategy in self.strategies.values():
            strategy.landed(landing, view)
