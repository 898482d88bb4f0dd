"""The strategies a search asks, in the order it asks them each turn. Adding one is a file beside this one and an
entry here (docs/search.md shows how)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..model_bandit import arm_key
from ..proposer import LLMProposer
from .agent import AgentSessions
from .base import Services, Strategy
from .composing import Composing
from .lessons import LessonKeeper
from .material import Material
from .model import ModelProposals
from .repair import Repairs
from .tuning import Tuning


@dataclass(frozen=True)
class Entry:
    name: str
    make: Callable[[Services], Strategy | None]  # None: not part of this run (a model's strategies without a model)
    # Services -> the chance it is asked in a turn with a model, or None for every turn; no share: every turn
    share: Callable[[Services], float | None] | None = None
    follow_up: bool = False  # asked before the turn's own step, without using up an island's turn (repairs)


def _tuner_trials(services: Services) -> int:
    trials = services.config.search.tuner_trials
    if trials is None:  # without a model the tuner is the whole search: let it cover a small space
        trials = 6 if services.proposer is not None else 64
    return trials


def proposer_of(services: Services, agent: bool):
    """The run's proposer over its agent models (agent=True) or its one-shot ones; None where it has none. --agent
    (search.agent) makes every model an agent; a stand-in proposer (not an LLMProposer: tests, benchmarks) has
    one-shot models only."""
    proposer = services.proposer
    if proposer is None or services.config.search.agent:
        return proposer if agent else None
    if not isinstance(proposer, LLMProposer):
        return None if agent else proposer
    return proposer.only(agent)


def one_shot_share(services: Services) -> float | None:
    """Where one-shot and agent models both run, the chance a turn asks a one-shot model (a turn that does not goes
    on to the agent sessions, next in order): with the bandit, 1 or 0 as the model it would ask among them all is
    one-shot or an agent; else their part of the models' weight. None (every turn) where only one kind runs."""
    one_shot, agents = proposer_of(services, agent=False), proposer_of(services, agent=True)
    if one_shot is None or agents is None:
        return None
    bandit = services.model_choice
    if bandit is not None:
        agent_arms = {arm_key(m.name, True) for m in agents.models}
        arms = [arm_key(m.name, False) for m in one_shot.models if m.weight > 0] + sorted(agent_arms)
        return 0.0 if bandit.choose(arms) in agent_arms else 1.0
    return one_shot.weight / (one_shot.weight + agents.weight)


def _model_proposals(s: Services) -> ModelProposals | None:
    proposer = proposer_of(s, agent=False)
    return ModelProposals(proposer, s.contexts, s.rng, s.config.search.diff_share, s.config.search.repairs,
                          s.model_choice) if proposer is not None else None


def _agent_sessions(s: Services) -> AgentSessions | None:
    proposer = proposer_of(s, agent=True)
    return AgentSessions(proposer, s.contexts, s.rng, s.evaluate, s.config, s.model_choice) \
        if proposer is not None else None


def _repairs(s: Services) -> Repairs | None:
    proposer = proposer_of(s, agent=False)  # an agent's submission is not repaired: its session had the compiler
    return Repairs(proposer, s.contexts, s.model_choice) if proposer is not None else None


REGISTERED: list[Entry] = [
    Entry("repair", _repairs, follow_up=True),
    Entry("material", lambda s: Material(s.language, s.keep_verdicts)),
    Entry("composer", lambda s: Composing(s.problem, s.figures, s.emit),
          share=lambda s: s.config.search.compose_share),
    Entry("tuner", lambda s: Tuning(s.config.seed, _tuner_trials(s)), share=lambda s: s.config.search.tune_share),
    Entry("model", _model_proposals, share=one_shot_share),
    Entry("agent", _agent_sessions),
    Entry("lessons", lambda s: LessonKeeper(s.language)),  # proposes nothing: keeps what worked for later runs
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
