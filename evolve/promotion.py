"""Fair promotion: on a GPU a win over the run's best counts only against a figure of the best from the same card,
close in time (--fair-window); otherwise the best is timed again beside its challenger (a duel) before the
challenger may take its place."""
from __future__ import annotations

from .archive import Candidate
from .harness import Verdict
from .pipeline import Retiming
from .population import NOISE_FLOOR
from .scoring import noise_of, score_of


class Duels:
    """The duels of one search (search.py): started from a verdict that came in, settled when the re-timing does."""

    def __init__(self, search):
        self.search = search
        self.measured: dict[int, tuple] = {}  # candidate id -> (clock, card UUID) of its evaluation in this process
        self.open: dict[Retiming, tuple] = {}  # Retiming("duel", challenger id) -> (challenger, incumbent, noise)

    def measured_now(self, cand: Candidate, verdict: Verdict) -> None:
        self.measured[cand.id] = (self.search.clock(), verdict.gpu)

    def unfair_win(self, cand: Candidate, verdict: Verdict) -> Candidate | None:
        """The incumbent a GPU candidate beats by more than the noise when the two were not timed on the same card
        close in time (within --fair-window): that win counts only once the incumbent is timed again beside it."""
        search = self.search
        incumbent = search.best
        window = search.config.fair_window_s
        if not window or verdict.mode != "gpu" or cand.score is None or incumbent is None \
                or incumbent.score is None or not search.population.better(cand, incumbent):
            return None
        seen = self.measured.get(incumbent.id)
        if seen is not None and seen[1] == verdict.gpu and search.clock() - seen[0] <= window:
            return None
        return incumbent

    def start(self, cand: Candidate, incumbent: Candidate, verdict: Verdict, lane: str) -> None:
        """Time the incumbent again on the lane that just measured the challenger, next on that card; the
        challenger joins the population when the figure is in (settle)."""
        search = self.search
        key = Retiming("duel", cand.id)
        path = search.work / f"duel_{cand.id}_{incumbent.id}.py"
        path.write_text(incumbent.source)
        self.open[key] = (cand, incumbent, noise_of(verdict))
        search.emit({"kind": "duel", "candidate": cand, "incumbent": incumbent, "lane": lane})
        try:
            search.pipeline.submit(key, path, lane=lane, beyond_depth=True)
        except RuntimeError:  # no lane left: the win stands unconfirmed, as a member only
            self.open.pop(key)
            search.population.admit(cand, noise_of(verdict), contend=False)
            return
        search.waiting[key] = (None, None)

    def settle(self, done) -> None:
        """The incumbent's new figure is in: the challenger's win holds if it beats that figure by more than the
        noise, and then it contends for best; otherwise it joins as a member only. A re-timing that failed (the
        incumbent's rung, a lane's fault, another evaluation taking the card) is no figure and decides nothing: a
        challenger's neighbour could make it fail."""
        search = self.search
        search.waiting.pop(done.cand_id, None)
        cand, incumbent, noise = self.open.pop(done.cand_id)
        verdict = done.verdict
        figure = score_of(verdict) if verdict is not None and verdict.ok else None
        (search.work / f"duel_{cand.id}_{incumbent.id}.py").unlink(missing_ok=True)
        if verdict is not None:
            search.archive.retimes.store(search.run_id, incumbent.id, 0, verdict, figure)  # round 0: an in-run duel
        # the challenger's figure is one evaluation old, from this card: the win holds against the incumbent's new one
        judged = max(noise, search.population.noise.get(incumbent.id, NOISE_FLOOR))
        holds = figure is not None and cand.score > figure * (1 + judged)
        if holds:
            search.admit(cand, noise)
        else:
            search.population.admit(cand, noise, contend=False)
        search.emit({"kind": "duel_result", "candidate": cand, "incumbent": incumbent, "figure": figure,
                     "holds": holds, "best": search.best})
