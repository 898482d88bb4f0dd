"""Which model a proposal asks, where several run (`--model-choice bandit`, the default): a bandit over the models that
gives the budget to those whose proposals gain the most fitness per dollar, while it keeps trying the others.

Each model is an arm (a model named both as a one-shot model and as an agent is two, as the leaderboard names them).
What an arm has cost: its proposals' dollars and seconds (the model's call or tool session, then the evaluation). What
it brought: each proposal's gain, the log of its score over its parent's (the nearest scored ancestor: a repair's
parent failed; without one, the best score its run held before it), less the timing noise floor, and 0 for a proposal
that failed, was invalid or a duplicate; a correct kernel with nothing scored before it gains FIRST_GAIN. The score is
the fitness on a GPU and the interpreter's ranking score on the CPU, and a ratio of scores means the same on both.

A pick is Thompson sampling: each arm's gain per proposal is drawn from a Gamma posterior counted in GAIN_QUANTUM
units, divided by its cost per proposal, and the highest draw asks. The cost is dollars where every arm tried so far
has a price, else seconds (a local model's dollars are 0). The user's weights are the prior: before any evidence an
arm is expected to gain GAIN_QUANTUM per proposal times its weight over the mean weight, as much evidence as
PRIOR_PROPOSALS proposals; a model of weight 0 is never asked. One pick in EXPLORE_EVERY is by the weights alone, so
every model with a positive weight keeps being tried. Picks are made on the loop's thread (when a proposal is asked)
from a generator seeded by the run's seed, and verdicts are heard on the same thread, so a seeded run picks alike.

Everything an arm holds is in the archive (each candidate's model, template, cost, latency, evaluation seconds, score
and parents): a resumed run takes its evidence back (`resume`), and `evolve status` and the leaderboard read the split
from there (model_split.py).
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Callable, Iterable, Optional, Tuple

from .archive import Archive, ArchiveError
from .population import NOISE_FLOOR
from .proposer import LLMProposer, ModelSpec

GAIN_QUANTUM = 0.05  # a gain of this much (about 5% faster than the parent) is one unit of the posterior's evidence
PRIOR_PROPOSALS = 2.0  # the weights' prior is worth this many proposals of evidence
EXPLORE_EVERY = 10  # one pick in this many is by the user's weights alone
FIRST_GAIN = math.log(2.0)  # a correct kernel with nothing scored before it counts as a doubling
_NOISE_GAIN = math.log1p(NOISE_FLOOR)  # a score within the noise floor of its parent's gains nothing
_ANCESTRY = 4  # generations searched for a scored ancestor

# a candidate id -> (its score, its parents' ids), or None where it is unknown
Lookup = Callable[[int], Optional[Tuple[Optional[float], Tuple[int, ...]]]]


def arm_key(name: str, agent: bool) -> str:
    """An arm's name: the model's, with " (agent)" where its proposals are tool sessions (as the leaderboard's)."""
    return ModelSpec(name, agent=agent).label


def reference_score(parent_ids: Iterable[int], lookup: Lookup) -> float | None:
    """The best score among the parents, else among their parents, for a few generations; None where none has one."""
    frontier = list(parent_ids)
    for _ in range(_ANCESTRY):
        found = [known for known in map(lookup, frontier) if known is not None]
        scores = [score for score, _ in found if score is not None and score > 0]
        if scores:
            return max(scores)
        frontier = [parent for _, parents in found for parent in parents]
        if not frontier:
            break
    return None


def gain_of(score: float | None, parent_ids: Iterable[int], lookup: Lookup, earlier: float | None = None) -> float:
    """What a proposal brought: the log of its score over its reference (reference_score; without a scored ancestor,
    the best score its run held before it, `earlier`), less the noise floor."""
    if score is None or score <= 0:
        return 0.0
    reference = reference_score(parent_ids, lookup) or earlier
    if reference is None:
        return FIRST_GAIN
    return max(0.0, math.log(score / reference) - _NOISE_GAIN)


def archive_lookup(archive: Archive, rows: Iterable[dict] = ()) -> Lookup:
    """A Lookup of an archive's candidates, starting from timeline rows already read."""
    known = {row["id"]: (row["score"], tuple(row["parent_ids"])) for row in rows}

    def lookup(cand_id: int):
        if cand_id not in known:
            try:
                cand = archive.get(cand_id)
            except ArchiveError:
                return None
            known[cand_id] = (cand.score, cand.parent_ids)
        return known[cand_id]
    return lookup


@dataclass
class Arm:
    key: str  # arm_key
    weight: float  # the user's: the prior
    proposals: int = 0
    dollars: float = 0.0
    seconds: float = 0.0
    gain: float = 0.0

    def cost(self, unit: str) -> float:
        return self.dollars if unit == "dollars" else self.seconds


class ModelBandit:
    """The arms of one run and the picks among them."""

    def __init__(self, weights: dict[str, float], seed: int = 0):
        self.arms = {key: Arm(key, weight) for key, weight in weights.items()}
        self.rng = random.Random(f"model-choice-{seed}")  # its own stream: the population's choices stay as they were

    @classmethod
    def of_models(cls, models: Iterable[ModelSpec], every_agent: bool = False, seed: int = 0) -> ModelBandit:
        weights: dict[str, float] = {}
        for m in models:  # a model named twice alike is one arm with both weights
            key = arm_key(m.name, m.agent or every_agent)
            weights[key] = weights.get(key, 0.0) + m.weight
        return cls(weights, seed)

    # -- evidence ---------------------------------------------------------------------------------------------------
    def record(self, key: str, dollars: float, seconds: float, gain: float) -> None:
        """One proposal's cost and gain; a model the run was not given (an older run's) is an arm of weight 0."""
        arm = self.arms.setdefault(key, Arm(key, 0.0))
        arm.proposals += 1
        arm.dollars += max(0.0, dollars)
        arm.seconds += max(0.0, seconds)
        arm.gain += gain

    def hear(self, landing, lookup: Lookup, members=()) -> None:
        """A model's proposal landed (strategies' Landing): its cost from the proposal, its gain from the verdict.
        members: the population's candidates, for the best its run held before a proposal with no scored parent."""
        fields, cand, verdict = landing.proposal.fields, landing.cand, landing.verdict
        seconds = float(fields.get("latency_s") or 0.0) + (sum(r.seconds for r in verdict.rungs) if verdict else 0.0)
        score = cand.score if cand is not None and cand.status == "evaluated" else None
        earlier = max((m.score for m in members if cand is not None and m.run_id == cand.run_id and m.id < cand.id
                       and m.score), default=None)
        self.record(arm_key(fields.get("model") or "", fields.get("template") == "agent"),
                    float(fields.get("cost") or 0.0), seconds,
                    gain_of(score, cand.parent_ids if cand else (), lookup, earlier))

    def resume(self, archive: Archive, run_id: int) -> None:
        """The evidence of a run's landed model proposals as archived, replacing what was heard."""
        rows = archive.timeline(run_id)
        self.replay(rows, archive_lookup(archive, rows))

    def replay(self, rows: list[dict], lookup: Lookup) -> None:
        """The evidence of landed model proposals (Archive.timeline rows), replacing what was heard."""
        for arm in self.arms.values():
            arm.proposals, arm.dollars, arm.seconds, arm.gain = 0, 0.0, 0.0, 0.0
        earlier = None  # the best score of the run's candidates so far (by id)
        for row in sorted(rows, key=lambda r: r["id"]):
            if row["proposer"] == "llm" and row["status"] in ("evaluated", "invalid"):  # a pending one has not landed
                self.record(arm_key(row["model"] or "", row["template"] == "agent"), float(row["cost"] or 0.0),
                            float(row["latency_s"] or 0.0) + float(row.get("eval_seconds") or 0.0),
                            gain_of(row["score"], row["parent_ids"], lookup, earlier))
            if row["score"]:
                earlier = max(earlier or 0.0, row["score"])

    # -- estimates --------------------------------------------------------------------------------------------------
    def unit(self, keys: Iterable[str] | None = None) -> str:
        """"dollars" where every arm tried so far has a price, else "seconds"."""
        tried = [a for a in self._arms(keys) if a.proposals]
        return "dollars" if tried and all(a.dollars > 0 for a in tried) else "seconds"

    def _arms(self, keys: Iterable[str] | None) -> list[Arm]:
        return [self.arms[k] for k in keys] if keys is not None else list(self.arms.values())

    def _prior_gain(self, arm: Arm, arms: list[Arm]) -> float:
        """Gain per proposal expected before evidence: GAIN_QUANTUM times its weight over the mean positive weight."""
        weights = [a.weight for a in arms if a.weight > 0]
        return GAIN_QUANTUM * arm.weight / (sum(weights) / len(weights)) if weights else 0.0

    def _cost_per_proposal(self, arm: Arm, arms: list[Arm], unit: str) -> float:
        """Its cost per proposal, drawn toward the arms' pooled one by the prior's proposals (an untried arm's)."""
        proposals = sum(a.proposals for a in arms)
        pooled = sum(a.cost(unit) for a in arms) / proposals if proposals else 1.0
        return max(1e-12, (pooled * PRIOR_PROPOSALS + arm.cost(unit)) / (PRIOR_PROPOSALS + arm.proposals))

    def _posterior(self, arm: Arm, arms: list[Arm]) -> tuple[float, float]:
        """(shape, rate) of the Gamma posterior of its gain per proposal, counted in GAIN_QUANTUM units."""
        shape = PRIOR_PROPOSALS * self._prior_gain(arm, arms) / GAIN_QUANTUM + arm.gain / GAIN_QUANTUM
        return shape, PRIOR_PROPOSALS + arm.proposals

    def estimate(self, key: str, keys: Iterable[str] | None = None) -> float:
        """The posterior mean of its gain per unit of cost (per dollar, or per second: `unit`)."""
        arms = self._arms(keys)
        arm, unit = self.arms[key], self.unit(keys)
        shape, rate = self._posterior(arm, arms)
        return GAIN_QUANTUM * shape / rate / self._cost_per_proposal(arm, arms, unit)

    # -- the pick ---------------------------------------------------------------------------------------------------
    def choose(self, keys: list[str]) -> str:
        """The arm the next proposal asks, among these (a strategy's models); weight 0 never."""
        arms = [self.arms[k] for k in keys if self.arms[k].weight > 0]
        if not arms:
            raise ValueError(f"no model among {', '.join(keys)} has a positive weight")
        if len(arms) == 1:
            return arms[0].key
        if self.rng.random() < 1.0 / EXPLORE_EVERY:  # exploring: by the weights alone
            return self.rng.choices(arms, weights=[a.weight for a in arms])[0].key
        unit = self.unit([a.key for a in arms])
        draws = []
        for arm in arms:
            shape, rate = self._posterior(arm, arms)
            gain = GAIN_QUANTUM * self.rng.gammavariate(shape, 1.0 / rate)
            draws.append((gain / self._cost_per_proposal(arm, arms, unit), arm.key))
        return max(draws)[1]

    def choose_model(self, models: list[ModelSpec], agent: bool) -> str:
        """The name of the model a strategy's next proposal asks, among its models (agent: every one is an agent)."""
        keys = {arm_key(m.name, m.agent or agent): m.name for m in models}
        for key in keys:
            self.arms.setdefault(key, Arm(key, 0.0))
        return keys[self.choose(list(keys))]


def for_run(config, proposer) -> ModelBandit | None:
    """The run's bandit: where --model-choice is bandit and its proposer has two models or more with a positive
    weight; None: each proposal's model is picked by weight, as one model's always is."""
    if config.search.model_choice != "bandit" or not isinstance(proposer, LLMProposer):
        return None
    if sum(m.weight > 0 for m in proposer.models) < 2:
        return None
    return ModelBandit.of_models(proposer.models, config.search.agent, config.seed)
