"""Fair promotion: on a GPU a win over the run's best counts only against a figure of the best from the same card,
close in time (--fair-window); otherwise the best is timed again beside its challenger (a duel) before the
challenger may take its place."""
from __future__ import annotations

from .archive import Archive, Candidate
from .harness import Verdict
from .pipeline import Retiming
from .population import NOISE_FLOOR, Population
from .scoring import noise_of, score_of


class Duels:
    """The duels of one run: started from a verdict that landed (ledger.py), settled when the re-timing is in.
    retime(key, incumbent, lane) hands the incumbent to a lane to be timed again; False when no lane is left."""

    def __init__(self, population: Population, archive: Archive, emit, clock, window_s: float, retime):
        self.population, self.archive, self.emit, self.clock = population, archive, emit, clock
        self.window_s, self.retime = window_s, retime
        self.measured: dict[int, tuple] = {}  # candidate id -> (clock, card UUID) of its evaluation in this process
        self.open: dict[Retiming, tuple] = {}  # Retiming("duel", challenger id) -> (challenger, incumbent, noise)

    def measured_now(self, cand: Candidate, verdict: Verdict) -> None:
        self.measured[cand.id] = (self.clock(), verdict.gpu)

    def unfair_win(self, cand: Candidate, verdict: Verdict) -> Candidate | None:
        """The incumbent a GPU candidate beats by more than the noise when the two were not timed on the same card
        close in time (within --fair-window): that win counts only once the incumbent is timed again beside it."""
        incumbent = self.population.best
        if not self.window_s or verdict.mode != "gpu" or cand.score is None or incumbent is None \
                or incumbent.score is None or not self.population.better(cand, incumbent):
            return None
        seen = self.measured.get(incumbent.id)
        if seen is not None and seen[1] == verdict.gpu and self.clock() - seen[0] <= self.window_s:
            return None
        return incumbent

    def start(self, cand: Candidate, incumbent: Candidate, verdict: Verdict, lane: str | None) -> bool:
        """Time the incumbent again on the lane that just measured the challenger, next on that card; False when no
        lane is left (the win stands unconfirmed: the challenger is a member only)."""
        key = Retiming("duel", cand.id)
        self.open[key] = (cand, incumbent, noise_of(verdict))
        self.emit({"kind": "duel", "candidate": cand, "incumbent": incumbent, "lane": lane})
        if not self.retime(key, incumbent, lane):
            self.open.pop(key)
            return False
        return True

    def settle(self, done, run_id: int) -> tuple[Candidate, Candidate, float, float | None, bool]:
        """The incumbent's new figure is in: (challenger, incumbent, the challenger's noise, the incumbent's new
        figure, whether the win holds). It holds if it beats that figure by more than the noise; otherwise the
        challenger is a member only. A re-timing that failed (the
        incumbent's rung, a lane's fault, another evaluation taking the card) is no figure and decides nothing: a
        challenger's neighbour could make it fail."""
        cand, incumbent, noise = self.open.pop(done.cand_id)
        verdict = done.verdict
        figure = score_of(verdict) if verdict is not None and verdict.ok else None
        if verdict is not None:
            self.archive.retimes.store(run_id, incumbent.id, 0, verdict, figure)  # round 0: an in-run duel
        # the challenger's figure is one evaluation old, from this card: the win holds against the incumbent's new one
        judged = max(noise, self.population.noise.get(incumbent.id, NOISE_FLOOR))
        return cand, incumbent, noise, figure, figure is not None and cand.score > figure * (1 + judged)
