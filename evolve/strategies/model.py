"""A model's proposals (proposer.py): full rewrites and SEARCH/REPLACE edits of a parent the population picks, asked
in the background so up to --concurrency model calls run while lanes evaluate. Where several models run, the bandit
(model_bandit.py) picks each proposal's model when it is asked, and hears each verdict."""
from __future__ import annotations

from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

from ..archive import Candidate
from ..knobs import read_knobs
from ..knowledge import Toolbox
from ..model_bandit import ModelBandit, archive_lookup
from ..proposer import Proposal as Answer
from .base import Landing, Proposal, Strategy, View


@dataclass(frozen=True)
class Asked:
    """A proposal asked for and not yet submitted: where it goes, what it builds on, the model's answer to come."""
    island: int
    parent: Candidate | None
    future: Future
    hint_ids: tuple[int, ...] = ()  # the hints its prompt carried


def fields_of(answer: Answer, parent_ids, island, parent, hint_ids=()) -> dict:
    """The archive's fields of a model's answer."""
    source = answer.source
    knobs = read_knobs(source)[0] if source else None
    return {"source": source, "parent_ids": parent_ids, "island": island,
            "generation": (parent.generation + 1) if parent else 0, "proposer": "llm", "model": answer.model,
            "template": answer.template, "prompt": answer.prompt, "reply": answer.reply,
            "tokens_in": answer.tokens_in, "tokens_out": answer.tokens_out, "cost": answer.cost,
            "latency_s": answer.latency_s, "knobs": knobs, "error": answer.error, "hint_ids": hint_ids,
            "tool_log": answer.tool_log}


class ModelProposals(Strategy):
    name = "model"

    def __init__(self, proposer, contexts, rng, diff_share: float, repairs: int, bandit: ModelBandit | None = None):
        self.proposer, self.contexts, self.rng = proposer, contexts, rng
        self.bandit = bandit  # picks each proposal's model; None: the proposer picks by weight
        self.diff_share, self.repairs = diff_share, repairs
        self.concurrency = max(1, getattr(proposer, "concurrency", 1))
        self.pool = ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="evolve-ask")
        self.asked: deque[Asked] = deque()  # oldest first; the proposer's own limit (--concurrency) is the only one

    def start(self, view: View) -> None:
        """A resumed run's bandit takes back the evidence its archived proposals hold."""
        if self.bandit is not None:
            self.bandit.resume(view.archive, view.run_id)

    def model_argument(self) -> dict:
        """propose's keyword naming the model the bandit picks for the next proposal (on the loop's thread, so a
        seeded run picks alike); none where the proposer picks by weight."""
        if self.bandit is None:
            return {}
        return {"model": self.bandit.choose_model(self.proposer.models, agent=self.name == "agent")}

    def ask(self, island: int, view: View) -> None:
        """Start one proposal in the background: parent and template are chosen now, the model answers later."""
        population = view.population
        parent = population.pick_parent(island)
        template = "diff_edit" if parent and self.rng.random() < self.diff_share else "full_rewrite"
        context = self.contexts.context_now(parent, population.inspirations(parent) if parent else (), view.best,
                                            view.run_id)
        index = self.contexts.index
        toolbox = Toolbox(index, self.contexts.parent_reader(parent) if parent else None) if index else None
        model = self.model_argument()

        def answer() -> Answer:  # in the proposal's thread: the parent's digest may still be disassembling
            return self.proposer.propose(template, self.contexts.with_digest(context, parent),
                                         parent.source if parent else None, toolbox, **model)
        self.asked.append(Asked(island, parent, self.pool.submit(answer), tuple(h["id"] for h in context.hints)))

    def propose(self, island: int, view: View) -> Proposal | None:
        """The oldest proposal asked for, keeping up to --concurrency model calls running meanwhile."""
        self.keep_asking(island, view)
        asked = self.asked.popleft()
        return self._proposal(asked, asked.future.result())  # a broken user template raises here, on this thread

    def keep_asking(self, island: int, view: View) -> None:
        """Up to --concurrency proposals asked for, each on the next island."""
        while len(self.asked) < self.concurrency:
            self.ask(island, view)
            island = (island + 1) % len(view.population.islands)

    def _proposal(self, asked: Asked, answer: Answer) -> Proposal:
        parent = asked.parent
        return Proposal(fields_of(answer, (parent.id,) if parent else (), asked.island, parent, asked.hint_ids),
                        self.name, note={"repairs": self.repairs})

    def landed(self, landing: Landing, view: View) -> None:
        """The bandit hears its proposals' verdicts; a possible parent: its SASS digest begins now, off the loop's
        thread."""
        if self.bandit is not None and landing.answers(self.name):
            self.bandit.hear(landing, archive_lookup(view.archive), view.population.members.values())
        if landing.fresh and landing.cand is not None and landing.cand.score is not None \
                and landing.verdict is not None:
            self.contexts.start_digest(landing.cand, landing.verdict.kernels)

    def close(self) -> list[Proposal]:
        """Answers that arrived but were not submitted (paid for: kept as pending, so --resume uses them). Calls still
        running are abandoned (their threads end with their calls; nothing waits for them)."""
        answered = []
        for asked in self.asked:
            if asked.future.done() and asked.future.exception() is None:
                answered.append(self._proposal(asked, asked.future.result()))
            else:
                asked.future.cancel()
        self.asked.clear()
        self.pool.shutdown(wait=False, cancel_futures=True)
        self.contexts.close()
        return answered
