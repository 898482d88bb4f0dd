"""Agent sessions (`evolve run --agent`): each proposal is a bounded tool session in which the model compiles, checks,
times, reads and profiles versions through the sealed harness (agent_tools.py) and submits one program, which is then
evaluated as any candidate. Sessions run in the background, up to --concurrency at once, while the lanes evaluate;
every call and result is archived with the candidate (its tool log)."""
from __future__ import annotations

import threading
from concurrent.futures import FIRST_COMPLETED, wait
from dataclasses import replace

from ..agent_tools import AgentToolbox, Bounds
from ..proposer import Proposal as Answer
from .base import Proposal, View
from .model import Asked, ModelProposals


SESSION_WAIT_S = 1.0  # how long a turn waits for a session to end before the run goes on with its lanes


class AgentSessions(ModelProposals):
    name = "agent"

    def __init__(self, proposer, contexts, rng, evaluate, config, bandit=None):
        super().__init__(proposer, contexts, rng, diff_share=0.0, repairs=config.search.repairs, bandit=bandit)
        search = config.search
        self.evaluate, self.config = evaluate, config
        self.bounds = Bounds(rounds=search.agent_rounds, tokens=search.agent_tokens, dollars=search.agent_dollars,
                             seconds=search.agent_seconds)
        self.profiler = None  # made on the first session that may profile (a GPU run)
        self.stopped = threading.Event()  # the run ended: sessions still going end at their next round

    def ask(self, island: int, view: View) -> None:
        """Start one session in the background on a parent the population picks."""
        population = view.population
        parent = population.pick_parent(island)
        context = self.contexts.context_now(parent, population.inspirations(parent) if parent else (), view.best,
                                            view.run_id)
        toolbox = AgentToolbox(self.contexts.index, self.contexts.parent_reader(parent) if parent else None,
                               view.problem, replace(view.config.eval, gpu=view.gpu), self.evaluate, self.bounds,
                               self._profiler(view), self.stopped)
        model = self.model_argument()

        def answer() -> Answer:  # in the session's thread
            return self.proposer.propose("agent", self.contexts.with_digest(context, parent),
                                         parent.source if parent else None, toolbox, **model)
        self.asked.append(Asked(island, parent, self.pool.submit(answer), tuple(h["id"] for h in context.hints)))

    def propose(self, island: int, view: View) -> Proposal | None:
        """The first session that has ended (in the order asked), keeping up to --concurrency at work; None while
        every one is still at work, so the run goes on with the lanes meanwhile."""
        self.keep_asking(island, view)
        wait([asked.future for asked in self.asked], timeout=SESSION_WAIT_S, return_when=FIRST_COMPLETED)
        done = next((asked for asked in self.asked if asked.future.done()), None)
        if done is None:
            return None
        self.asked.remove(done)
        return self._proposal(done, done.future.result())

    def busy(self) -> bool:
        return bool(self.asked)

    def close(self) -> list[Proposal]:
        """Sessions still at work end at their next round (no more model calls or tool calls are paid for)."""
        self.stopped.set()
        return super().close()

    def _profiler(self, view: View):
        if self.profiler is None and view.device and not view.device.startswith("cpu"):
            from ..profiling import Profiler

            profile = self.config.profile
            self.profiler = Profiler(allow_root=profile.as_root, timeout_s=profile.timeout_s)
        return self.profiler
