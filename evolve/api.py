"""evolve as a library: the calls a notebook or another tool wants, with typed results. The CLI, `evolve bench` and
the MCP server are built on these; every default lives once, in config.py's dataclasses.

    import evolve
    verdict = evolve.evaluate("kernel.py", "problems/softmax", device="cpu")   # harness.Verdict
    summary = evolve.run("problems/softmax", db="runs/evolve.db", max_candidates=3, device="cpu")   # summary.Summary
    best = evolve.best("problems/softmax", db="runs/evolve.db")   # api.Best (as archived; `evolve best` re-verifies)
    table = evolve.board(["runs/evolve.db"])   # leaderboard.Board: the leaderboard

A request that cannot run as asked raises SetupError, whose message says what to do.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, replace
from pathlib import Path

from .archive import Candidate
from .config import CPU_BUDGET_S, LLMConfig, ProfileConfig, RunConfig, SearchConfig, format_duration
from .harness import EvalOptions, Problem, Verdict

DEFAULT_DB = RunConfig.db  # the archive every command and call uses unless told otherwise
LARGE_INPUT_BYTES = 1 << 30
LARGE_INPUT_TIMEOUT_S = 900.0  # KernelBench softmax and RMSNorm at today's sizes: 315 s and 458 s alone on an H100


class SetupError(ValueError):
    """A run, an evaluation or a lookup that cannot go ahead as asked; the message says what to do."""


@dataclass(frozen=True)
class Plan:
    """What a run was set up as: its config, the problem as loaded, and what was decided for the user."""
    config: RunConfig
    problem: Problem
    on_cpu: bool  # no GPU: candidates run under the CPU interpreter
    limits: tuple[str, ...]  # when the run stops, in words
    notes: tuple[str, ...] = ()  # defaults chosen for this problem (a longer timeout for large inputs, fewer lanes)


@dataclass(frozen=True)
class Best:
    """A problem's best kernel as archived (standing.py), not re-verified: `evolve best` re-verifies before export."""
    candidate: Candidate
    near_tie: Candidate | None = None  # the highest score, where the run held `candidate` over it within the noise
    verdict: Verdict | None = None  # as archived


def load(problem) -> Problem:
    """A problem folder (or a KernelBench .py file) read and checked, or SetupError."""
    from .harness import ProblemError, load_problem
    from .problems import toml_key_faults

    try:
        loaded = load_problem(problem)
    except ProblemError as exc:
        raise SetupError(str(exc)) from None
    faults = toml_key_faults(problem)  # a misspelt `call =` under [forbid] would forbid nothing
    if faults:
        raise SetupError("\n".join(faults))
    return loaded


def check_language(language: str | None, problem=None) -> None:
    """`language` is one evolve has, the problem accepts and this machine has installed; without one, the
    problem's first language must be installed."""
    from .lang import UnknownLanguage, get, missing

    if language is not None:
        try:
            get(language)
        except UnknownLanguage as exc:
            raise SetupError(f"--language: {exc}") from None
        if problem is not None and language not in problem.languages:
            raise SetupError(f"--language {language}: {problem.name} accepts candidates in "
                             f"{', '.join(problem.languages)} (languages in its problem.toml)")
    name = language or (problem.languages[0] if problem is not None else None)
    absent = missing(get(name)) if name is not None else None
    if absent:
        raise SetupError(absent)


def timeout_for(problem, timeout_s: float | None) -> tuple[float, str | None]:
    """(an evaluation's time limit, a note where a default was raised): a given limit is kept; the default is raised
    for a problem whose inputs take a gigabyte or more a call, where drawing and checking them takes minutes."""
    from .harness.parent.problem_facts import input_bytes

    default = EvalOptions().timeout_s
    size = input_bytes(problem)
    if timeout_s is not None or size < LARGE_INPUT_BYTES:
        return (timeout_s if timeout_s is not None else default), None
    limit = max(default, LARGE_INPUT_TIMEOUT_S)
    return limit, (f"{problem.name}: its inputs take {size / 2**30:.1f} GB a call, and drawing and checking them "
                   f"takes minutes: each evaluation may take {limit:g} s (--timeout changes it)")


def evaluate(kernel, problem, *, device: str = "auto", timeout_s: float | None = None, language: str | None = None,
             on_rung=None, **options):
    """One kernel file up the whole ladder against one problem: the harness's Verdict. Other keyword arguments are
    EvalOptions fields (max_rss_gb, dump_dir, cache_dir, ...)."""
    from .harness import evaluate as harness_evaluate

    loaded = load(problem)
    check_language(language, loaded)
    limit, _ = timeout_for(loaded, timeout_s)
    opts = EvalOptions(device=device, timeout_s=limit, language=language, **options)
    return harness_evaluate(Path(kernel), problem, opts, on_rung=on_rung)


def plan_run(problem, *, models=(), agent_models=(), api_base: str | None = None, db: str = DEFAULT_DB,
             device: str = "auto", max_candidates: int | None = None, budget_s: float | None = None,
             max_cost: float | None = None, timeout_s: float | None = None, per_gpu="auto",
             gpus: tuple[str, ...] | None = None, cluster: str | None = None, language: str | None = None,
             cache_dir: str | None = None, **fields) -> Plan:
    """A run's config as `evolve run` would make it, every default decided here: the budget without a GPU, lanes per
    card for the problem's inputs, the time limit for large inputs, the device policy. `models` are ModelSpecs (an
    agent's marked `agent=True`); `agent_models` are made agents (`evolve run --agent-model`); search=SearchConfig(
    agent=True) makes every model one (`--agent`). Other keyword arguments are RunConfig fields (target, resume, seed,
    search, llm, profile, artifacts, retime_top, fair_window_s, ...)."""
    from .harness.parent.ladder import gpu_available
    from .lang import get as get_language
    from .pipeline import lanes_per_card

    loaded = load(problem)
    check_language(language, loaded)
    on_cpu = device == "cpu" or (device == "auto" and not gpu_available() and not cluster)
    run_language = language or loaded.languages[0]
    if on_cpu and get_language(run_language).without_gpu != "interpret":
        raise SetupError(f"{run_language} has no CPU interpreter, so without a GPU no kernel of it can be checked or "
                         f"timed and a search has nothing to rank: run this on a machine with one (evolve eval FILE "
                         f"{problem} --language {run_language} compiles a kernel here)")
    if on_cpu:
        from .harness.parent.problem_facts import cannot_run_here

        elsewhere = cannot_run_here(loaded)
        if elsewhere:
            raise SetupError(elsewhere)
    default_budget = on_cpu and budget_s is None and max_candidates is None and max_cost is None
    budget_s = CPU_BUDGET_S if default_budget else budget_s
    from .harness.parent.problem_facts import input_bytes

    auto_lanes = per_gpu == "auto" and not on_cpu and not cluster
    size = input_bytes(loaded)
    lanes = lanes_per_card(per_gpu, not on_cpu and not cluster, gpus, size)
    limit, raised = timeout_for(loaded, timeout_s)
    notes: tuple[str, ...] = (raised,) if raised else ()
    if auto_lanes and size >= LARGE_INPUT_BYTES:
        notes += (f"{loaded.name}: {lanes} evaluation{'s' if lanes > 1 else ''} per card at most, as its memory "
                  f"holds them with these inputs (--per-gpu changes it)",)
    models = tuple(models) + tuple(replace(m, agent=True) for m in agent_models)
    config = RunConfig(problem_dir=str(problem), db=str(db), models=models, api_base=api_base,
                       max_candidates=max_candidates, budget_s=budget_s, max_cost=max_cost, gpus=gpus,
                       cluster=cluster, default_budget=default_budget,
                       eval=EvalOptions(device=device, timeout_s=limit, prewarm=True, per_gpu=lanes,
                                        language=language, cache_dir=cache_dir or EvalOptions().cache_dir),
                       **fields)
    return Plan(config, loaded, on_cpu, _limits(config, on_cpu), notes)


def _limits(c: RunConfig, on_cpu: bool) -> tuple[str, ...]:
    out = [f"after {format_duration(c.budget_s)}" + (" (the default without a GPU; --budget changes it)"
                                                    if c.default_budget else "")] if c.budget_s else []
    out += [f"after {c.max_candidates} candidate{'s' if c.max_candidates > 1 else ''}"] if c.max_candidates else []
    out += [f"at ${c.max_cost:g} of LLM spend"] if c.max_cost else []
    out += [f"at fitness {c.target}"] if not on_cpu else []
    return tuple(out + [f"after {c.search.stagnation} candidates without improvement"])


def make_proposer(config: RunConfig, language: str):
    """The models of a run's config, asked as its LLMConfig says, with the prompt templates of its language."""
    from .lang import get as get_language
    from .proposer import LLMProposer, prompt_folders

    return LLMProposer(list(config.models), prompt_folders(get_language(language)), api_base=config.api_base,
                       timeout_s=config.llm.timeout_s, max_retries=config.llm.retries,
                       concurrency=config.llm.concurrency, rng=random.Random(config.seed),
                       tools=config.llm.tools, tool_rounds=config.llm.tool_rounds)


def check_startable(plan: Plan, archive) -> None:
    """Without a model, the embedded default needs something to tune: a seed, a correct solution or an archived
    correct kernel of the problem."""
    c = plan.config
    language = c.eval.language or plan.problem.languages[0]
    if not c.models and not plan.problem.seed_files(language) \
            and not plan.problem.solution_files("correct", language) \
            and archive.best(plan.problem.name, language=language) is None:
        raise SetupError(f"{c.problem_dir} has no seed kernels (seeds/*.py), no correct solutions "
                         f"(solutions/correct/*.py) and the archive no correct kernel for it, so the embedded default "
                         f"has nothing to tune: give a model (--model ...), which writes the first kernels itself, "
                         f"or add a seed")


def start_search(plan: Plan, archive, on_event=None):
    """The Search a plan describes, on an open archive (the caller closes it), ready to `.run()`; on_event gets each
    event of the run (events.py)."""
    from .search import Search

    check_startable(plan, archive)
    c = plan.config
    proposer = make_proposer(c, c.eval.language or plan.problem.languages[0]) if c.models else None
    return Search(c, archive, proposer, on_event=on_event, problem=plan.problem)


def run(problem, *, db: str = DEFAULT_DB, on_event=None, **options):
    """A search on a problem until one of its limits (the same as `evolve run`'s; without a GPU and without a limit,
    the default budget): its summary.Summary. Keyword arguments are plan_run's."""
    from .archive import Archive

    plan = plan_run(problem, db=db, **options)
    archive = Archive(db)
    try:
        return start_search(plan, archive, on_event).run()
    finally:
        archive.close()


def best(problem, *, db: str = DEFAULT_DB) -> Best | None:
    """A problem's best correct kernel in an archive (standing.problem_best), as archived; None when there is none."""
    from .archive import Archive
    from .standing import problem_best

    if not Path(db).exists():
        raise SetupError(f"{db} does not exist: start a run with `evolve run PROBLEM` or pass db=PATH")
    name = load(problem).name
    archive = Archive(db, read_only=True)
    try:
        chosen, top = problem_best(archive, name)
        return Best(chosen, top, archive.verdict(chosen.id)) if chosen is not None else None
    finally:
        archive.close()


def board(dbs, problems=None, devices=None):
    """The leaderboard: models per problem and device over one or more archives, a leaderboard.Board (rows,
    summaries, runs). (Named board: `evolve.leaderboard` is the module that builds it.)"""
    from .leaderboard import board as make_board

    return make_board([Path(db) for db in ([dbs] if isinstance(dbs, (str, Path)) else dbs)], problems, devices)


__all__ = ["Best", "DEFAULT_DB", "LLMConfig", "Plan", "ProfileConfig", "SearchConfig", "SetupError", "best",
           "evaluate", "board", "check_startable", "load", "make_proposer", "plan_run", "run", "start_search",
           "timeout_for"]
