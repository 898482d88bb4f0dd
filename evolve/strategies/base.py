"""What every strategy shares: the proposal it returns, the read-only view it reads, and the interface it keeps.

A strategy never holds the search. Each turn the search hands it a `View` (the population, the archive, the run's
facts, the candidates in the pipeline) and takes back a `Proposal` or None; every verdict that lands (ledger.py) is
shown to every strategy as a `Landing`, which names the proposal it answers.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from ..archive import Archive, Candidate
from ..harness import Verdict
from ..population import Population


@dataclass
class Proposal:
    """A candidate to archive and evaluate, and who asked for it."""
    fields: dict  # the archive's fields: source, proposer, parent_ids, island, generation, knobs, model, ...
    strategy: str  # the name of the strategy that made it: the verdict goes back to it (Strategy.landed)
    note: dict = field(default_factory=dict)  # what the strategy wants back with the verdict (a trial, repairs left)
    time_limit_s: float | None = None  # its evaluation's limit, where below --timeout
    kept: Any = None  # known.Kept: a verdict this machine kept for the same kernel, taken instead of an evaluation


@dataclass(frozen=True)
class Landing:
    """A candidate that landed in the ledger, and what it answers."""
    cand: Candidate | None  # the evaluated or invalid candidate; None: a duplicate of an archived kernel
    verdict: Verdict | None = None  # where it was evaluated (or its kept verdict taken)
    proposal: Proposal | None = None  # None: archived before this session, or left pending by a crash
    fresh: bool = False  # evaluated by a lane of this run (not a kept verdict, not archived before)
    archived: bool = False  # in the archive when the run started: it joins the population as it stands

    def answers(self, strategy: str) -> bool:
        return self.proposal is not None and self.proposal.strategy == strategy


@dataclass(frozen=True)
class Services:
    """What a strategy may be built from (registry.py): the run's fixed parts, never the search itself."""
    config: Any  # config.RunConfig
    problem: Any
    archive: Archive
    figures: Any  # case_figures.CaseFigures
    emit: Callable[[dict], None]  # a run event (events.py)
    rng: Any  # random.Random: the run's seeded choices
    language: str  # the run's candidate language
    proposer: Any = None  # proposer.Proposer: None in the embedded search (no model)
    contexts: Any = None  # prompt_context.Contexts: what prompts are told
    keep_verdicts: bool = False  # recall and keep the problem's own kernels' verdicts (evolve/known.py)
    evaluate: Any = None  # the run's evaluator (the harness's evaluate): what an agent session's tools call
    model_choice: Any = None  # model_bandit.ModelBandit: which model each proposal asks; None: the proposer's pick


@dataclass(frozen=True)
class View:
    """What a strategy may read of the run this turn. It reads; it does not change what it is handed."""
    config: Any  # config.RunConfig
    problem: Any  # harness Problem
    archive: Archive
    population: Population
    figures: Any  # case_figures.CaseFigures: each kernel's per-case figures
    run_id: int
    scope: Mapping  # archive.candidates(**scope): the kernels the run builds on (this problem and device, or run)
    device: str
    versions: dict  # the packages' versions, as the run records them
    in_flight: tuple[Candidate, ...]  # candidates handed to the pipeline whose verdicts are not in
    lane_seconds: Mapping[int, float]  # candidate id -> its evaluation's seconds, where it compiled anew here
    problem_fault: str | None  # the problem's own code failed in an evaluation: nothing is the model's to repair
    gpu: str | None = None  # the first lane's card, as CUDA_VISIBLE_DEVICES names it (None: the first visible)

    @property
    def best(self) -> Candidate | None:
        return self.population.best


class Strategy:
    """A source of proposals. `propose` returns the next one for an island, or None when it has none now."""
    name = ""
    again_after_duplicate = False  # a duplicate of an archived kernel: ask again in the same turn

    def start(self, view: View) -> None:
        """The run's row and the archive's members are in place."""

    def propose(self, island: int, view: View) -> Proposal | None:
        raise NotImplementedError

    def landed(self, landing: Landing, view: View) -> None:
        """A candidate landed (every strategy sees every landing; `landing.answers(self.name)` says whose)."""

    def close(self) -> list[Proposal]:
        """The run ends: proposals answered but never submitted (kept as pending), and threads let go."""
        return []

    def busy(self) -> bool:
        """Whether proposals it started are still being worked on (the run waits for them rather than stop)."""
        return False
