"""Agent sessions (`evolve run --agent`): each proposal is a bounded tool session in which the model compiles and
checks versions through the sealed harness (agent_tools.py), reads the notes, and submits one program, which is then
evaluated as any candidate. Every call and result is archived with the candidate (its tool log)."""
from __future__ import annotations

from ..agent_tools import AgentToolbox
from .base import Proposal, Strategy, View
from .model import fields_of


class AgentSessions(Strategy):
    name = "agent"

    def __init__(self, proposer, contexts, evaluate, rounds: int, seconds: float):
        self.proposer, self.contexts, self.evaluate = proposer, contexts, evaluate
        self.rounds, self.seconds = rounds, seconds

    def propose(self, island: int, view: View) -> Proposal:
        """One session on a parent the population picks; its submission (or, without one, what it answered last)."""
        population = view.population
        parent = population.pick_parent(island)
        context = self.contexts.context(parent, population.inspirations(parent) if parent else (), view.best,
                                        view.run_id)
        options = view.config.eval
        toolbox = AgentToolbox(self.contexts.index, self.contexts.parent_reader(parent) if parent else None,
                               view.problem.path, options, self.evaluate, self.rounds, self.seconds)
        answer = self.proposer.propose("agent", context, parent.source if parent else None, toolbox)
        hint_ids = tuple(h["id"] for h in context.hints)
        return Proposal(fields_of(answer, (parent.id,) if parent else (), island, parent, hint_ids), self.name,
                        note={"repairs": 0})
