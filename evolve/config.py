"""Run configuration: one frozen root, built once at the CLI edge and passed down explicitly."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from . import defaults as D
from .harness import EvalOptions
from .proposer import ModelSpec

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|h|d)?\s*$")
_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400, None: 1}
CPU_BUDGET_S = 300.0  # without a GPU and without a stop condition of the user's, a run stops after this long


def format_duration(seconds: float | None, compact: bool = False) -> str:
    """300 -> '5 min', 5400 -> '1.5 h', 45 -> '45 s', None -> '-'; compact (a narrow column): '5m', '1.5h', '45s'."""
    if seconds is None:
        return "-"
    space, minutes = ("", "m") if compact else (" ", "min")
    if seconds >= 3600:
        return f"{seconds / 3600:.3g}{space}h"
    if seconds >= 60:
        return f"{seconds / 60:.3g}{space}{minutes}"
    return f"{seconds:.0f}{space}s"


def parse_duration(text: str) -> float:
    """'90m', '8h', '45s', '1.5h', '600' (seconds) -> seconds."""
    match = _DURATION.match(str(text))
    if not match:
        raise ValueError(f"cannot read duration {text!r}: use a number with s, m, h or d, e.g. 90m or 8h")
    seconds = float(match.group(1)) * _UNIT[match.group(2)]
    if seconds <= 0:
        raise ValueError(f"duration {text!r} is not positive: e.g. 90m or 8h")
    return seconds


@dataclass(frozen=True)
class SearchConfig:
    islands: int = D.ISLANDS
    migrate_every: int = 10  # candidates between migrations of each island's best to the next island
    exploit: float = 0.7  # chance of picking a parent from the island's top (else any correct member)
    diversity: float = D.DIVERSITY  # chance of drawing a parent across the island's cells first (diversity.py)
    inspirations: int = 2
    diff_share: float = 0.5  # share of LLM proposals asked as SEARCH/REPLACE edits (the rest: full rewrites)
    tune_share: float = D.TUNE_SHARE  # share of steps given to the knob tuner when a model is configured
    # with a model, share of steps that look for a shape-dispatch composite worth trying
    compose_share: float = D.COMPOSE_SHARE
    repairs: int = D.REPAIRS  # load/compile failures sent back to the model before a candidate counts as dead
    tuner_trials: int | None = None  # knob settings tried per structure; None: 6 with a model, 64 without one
    stagnation: int = D.STAGNATION  # stop after this many evaluated candidates without an improvement
    agent: bool = False  # every model is an agent (--agent): each proposal a bounded tool session (strategies/agent.py)
    agent_rounds: int = D.AGENT_ROUNDS  # model calls that may ask for tools in one session
    agent_seconds: float = D.AGENT_SECONDS  # wall time one session may take in all (model calls and tools)
    agent_tokens: int = D.AGENT_TOKENS  # tokens one session may use (prompt and reply, every round)
    agent_dollars: float = D.AGENT_DOLLARS  # dollars one session may cost
    # with several models, how each proposal's model is chosen: "bandit" (by gain per dollar, model_bandit.py) or
    # "weights" (at random by weight)
    model_choice: str = D.MODEL_CHOICE
    unusable: int = 20  # stop after this many proposals in a row gave nothing to evaluate (invalid or duplicates)
    lessons: bool = True  # prompts carry lessons of earlier runs (evolve/lessons.py; never in a bench cell)


@dataclass(frozen=True)
class LLMConfig:
    timeout_s: float = D.LLM_TIMEOUT_S  # one reply
    retries: int = D.LLM_RETRIES  # on rate limits, 5xx errors and timeouts, with exponential backoff
    concurrency: int = D.CONCURRENCY  # calls in flight at once
    tools: str = D.TOOLS  # the context tools: "auto" (models litellm says call functions), "on" or "off"
    tool_rounds: int = D.TOOL_ROUNDS  # model calls that may ask for tools, per proposal


@dataclass(frozen=True)
class ProfileConfig:
    # the best this many correct candidates not yet profiled, after every `every` evaluations; 0: off
    top: int = D.PROFILE_TOP
    every: int = D.PROFILE_EVERY
    as_root: bool = False  # profile even as root (the profiler's child may write under /proc)
    timeout_s: float = 180.0


@dataclass(frozen=True)
class RunConfig:
    problem_dir: str
    db: str = D.DB
    models: tuple[ModelSpec, ...] = ()
    api_base: str | None = None
    max_candidates: int | None = None
    budget_s: float | None = None
    max_cost: float | None = None
    target: float = D.TARGET
    resume: bool = False
    seed: int = D.SEED
    search: SearchConfig = field(default_factory=SearchConfig)
    eval: EvalOptions = field(default_factory=EvalOptions)
    default_budget: bool = False  # budget_s is evolve's default without a GPU, not the user's --budget
    llm: LLMConfig = field(default_factory=LLMConfig)
    # A cell of `evolve bench`: its run sees only its own candidates (the archive's other runs are neither material
    # nor duplicates), so every model starts from the same seeds; `bench` is recorded in the run's options.
    isolated: bool = False
    bench: dict | None = None
    run_id: int | None = None  # with resume: this run rather than the problem's last one
    artifacts: bool = True  # keep each candidate's TTIR/TTGIR/LLIR/PTX/cubin/SASS in the archive
    profile: ProfileConfig = field(default_factory=lambda: ProfileConfig())
    retime_top: int = D.RETIME_TOP  # on a GPU, at the end: the best this many re-timed against each other (0 or 1: not)
    retime_rounds: int = D.RETIME_ROUNDS
    context_dirs: tuple[str, ...] = ()  # --context DIR: folders added to the searchable context
    gpus: tuple[str, ...] | None = None  # --gpus: the cards with an evaluation lane each; None: every visible one
    # a win over a best timed longer ago or on another card is confirmed by re-timing
    fair_window_s: float = D.FAIR_WINDOW_S
    cluster: str | None = None  # --cluster: a Ray cluster's address ("auto": the one this machine is in)
    cluster_lanes: int | None = None  # lanes (actors) on the cluster; None: one per GPU (1 without a GPU)
    race: bool = True  # stop timing a candidate that can no longer reach the best (harness/measurer/race.py)

    def model_choice(self) -> str | None:
        """How the run chooses each proposal's model: "bandit" or "weights" with several models with a positive weight
        (--model-choice), None with one model or none."""
        if sum(m.weight > 0 for m in self.models) < 2:
            return None
        return self.search.model_choice

    def __post_init__(self):
        if self.eval.last_rung != "benchmark" or self.eval.bench_cases:  # a verdict a run keeps is timed whole
            raise ValueError("a run evaluates every rung and times every benchmark case: EvalOptions.last_rung and "
                             "bench_cases are for one evaluation (evolve eval --stop-after, --case)")

    def public(self) -> dict:
        """What the archive records about the run (no secrets live here: keys stay in the environment)."""
        return {
            "models": [{"name": m.name, "weight": m.weight, "agent": m.agent or self.search.agent}
                       for m in self.models],
            "model_choice": self.model_choice(),
            "api_base": self.api_base,
            "max_candidates": self.max_candidates, "budget_s": self.budget_s, "default_budget": self.default_budget,
            "max_cost": self.max_cost,
            "target": self.target, "seed": self.seed, "search": self.search.__dict__, "llm": self.llm.__dict__,
            "profile": self.profile.__dict__, "context_dirs": list(self.context_dirs),
            "retime": {"top": self.retime_top, "rounds": self.retime_rounds},
            "gpus": list(self.gpus) if self.gpus else None,
            "cluster": self.cluster, "cluster_lanes": self.cluster_lanes, "fair_window_s": self.fair_window_s,
            "race": self.race, "eval": {k: v for k, v in self.eval.__dict__.items() if k != "cache_dir"},
            **({"bench": self.bench, "isolated": True} if self.bench else {"isolated": True} if self.isolated else {}),
        }
