"""The strategies a search asks, in the order it asks them each turn. Adding one is a file beside this one and an
entry here (docs/search.md shows how)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .agent import AgentSessions
from .base import Services, Strategy
from .composing import Composing
from .material import Material
from .model import ModelProposals
from .repair import Repairs
from .tuning import Tuning


@dataclass(frozen=True)
class Entry:
    name: str
    make: Callable[[Services], Strategy | None]  # None: not part of this run (a model's strategies without a model)
    share: Callable | None = None  # config.SearchConfig -> the chance it is asked in a turn with a model; None: always
    follow_up: bool = False  # asked before the turn's own step, without using up an island's turn (repairs)


def _tuner_trials(services: Services) -> int:
    trials = services.config.search.tuner_trials
    if trials is None:  # without a model the tuner is the whole search: let it cover a small space
        trials = 6 if services.proposer is not None else 64
    return trials


REGISTERED: list[Entry] = [
    Entry("repair", lambda s: Repairs(s.proposer, s.contexts) if s.proposer is not None else None, follow_up=True),
    Entry("material", lambda s: Material(s.language, s.keep_verdicts)),
    Entry("composer", lambda s: Composing(s.problem, s.figures, s.emit), share=lambda search: search.compose_share),
    Entry("tuner", lambda s: Tuning(s.config.seed, _tuner_trials(s)), share=lambda search: search.tune_share),
    Entry("model", lambda s: ModelProposals(s.proposer, s.contexts, s.rng, s.config.search.diff_share,
                                            s.config.search.repairs)
          if s.proposer is not None and not s.config.search.agent else None),
    Entry("agent", lambda s: AgentSessions(s.proposer, s.contexts, s.rng, s.evaluate, s.config)
          if s.proposer is not None and s.config.search.agent else None),
]


def register(entry: Entry, before: str | None = None) -> None:
    """Add a strategy to every search made after this call: before the named one, or last."""
    names = [e.name for e in REGISTERED]
    if entry.name in names:
        raise ValueError(f"a strategy named {entry.name!r} is registered already")
    REGISTERED.insert(names.index(before) if before is not None else len(REGISTERED), entry)


def build(services: Services) -> dict[str, Strategy]:
    """The strategies of one run, by name, in the registry's order."""
    made = {entry.name: entry.make(services) for entry in REGISTERED}
    return {name: strategy for name, strategy in made.items() if strategy is not None}
