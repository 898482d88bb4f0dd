"""Repairs: a model's candidate that failed to load or compile goes back to the model with the error, up to
--repairs times, as the loop's next step once its verdict is in."""
from __future__ import annotations

from collections import deque

from ..archive import Candidate
from ..harness import Verdict
from ..knowledge import Toolbox
from ..model_bandit import ModelBandit, archive_lookup
from .base import Landing, Proposal, Strategy, View
from .model import fields_of


class Repairs(Strategy):
    name = "repair"

    def __init__(self, proposer, contexts, bandit: ModelBandit | None = None):
        self.proposer, self.contexts = proposer, contexts
        self.bandit = bandit  # picks each repair's model and hears its verdict; None: the proposer picks by weight
        # (failed candidate, its verdict, repairs left)
        self.due: deque[tuple[Candidate, Verdict | None, int]] = deque()

    def landed(self, landing: Landing, view: View) -> None:
        """A model's (or a repair's) candidate that failed at load or compile is due a repair while it has any left;
        the problem's own failure is not the model's to repair."""
        proposal, cand = landing.proposal, landing.cand
        if self.bandit is not None and landing.answers(self.name):
            self.bandit.hear(landing, archive_lookup(view.archive), view.population.members.values())
        if proposal is None or proposal.strategy not in ("model", self.name) or cand is None:
            return
        left = proposal.note.get("repairs", 0)
        if left > 0 and cand.status == "evaluated" and cand.failed_rung in ("load", "compile") \
                and not view.problem_fault:
            self.due.append((cand, landing.verdict, left))

    def propose(self, island: int, view: View) -> Proposal | None:
        """The oldest repair due, on the island of the candidate it repairs (`island` is not used)."""
        if not self.due:
            return None
        cand, verdict, left = self.due.popleft()
        failure = verdict and verdict.failure
        log = failure.metrics.get("log") if failure else None
        parent_context = self.contexts.context_now(cand, view.population.inspirations(cand), view.best, view.run_id,
                                                   log or cand.reason or "")
        context = self.contexts.with_digest(parent_context, cand)
        index = self.contexts.index
        toolbox = Toolbox(index, self.contexts.parent_reader(cand)) if index else None
        model = {"model": self.bandit.choose_model(self.proposer.models, agent=False)} if self.bandit else {}
        answer = self.proposer.propose("repair", context, cand.source, toolbox, **model)
        return Proposal(fields_of(answer, (cand.id,), cand.island, cand, tuple(h["id"] for h in context.hints)),
                        self.name, note={"repairs": left - 1})
