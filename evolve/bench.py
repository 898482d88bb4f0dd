"""`evolve bench`: one search per (model, problem) with equal budgets, the same seed and settings, on one device, into
one archive; a model named as an agent (--agent-model, or every one with --agent) is an entry of its own.

Cells run one after another, problem by problem and, within a problem, model by model, so the models of one problem
are measured close together in time and no two cells ever share the device. Each cell is an isolated run (its
population, material and duplicates are its own: no model starts from another's kernels) whose options record
`bench = {"name", "problem", "model", "budget"}` (with `"agent": true` for an agent's cell). Running the same command
again skips finished cells and resumes an unfinished one with what is left of its budget, so a crash or Ctrl-C loses
at most the evaluation in flight.
The material is the same for every cell: a seconds budget leaves out the time until its last verdict, and a
problem's material is evaluated once per machine (evolve/known.py), later cells taking the verdicts and compiler
output kept.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace

from .config import RunConfig, parse_duration


@dataclass(frozen=True)
class Budget:
    """What each cell may spend: one of seconds, evaluated candidates, dollars."""

    text: str
    seconds: float | None = None
    candidates: int | None = None
    dollars: float | None = None


def parse_budget(text: str) -> Budget:
    """'30m' (wall time), '40' (evaluated candidates), '$2' or '2$' (LLM dollars)."""
    t = str(text).strip()
    money = re.fullmatch(r"\$\s*(\d+(?:\.\d+)?)|(\d+(?:\.\d+)?)\s*\$", t)
    if money:
        value = float(money.group(1) or money.group(2))
        if value <= 0:
            raise ValueError(f"budget {text!r} is not positive")
        return Budget(t, dollars=value)
    if re.fullmatch(r"\d+", t):
        if int(t) <= 0:
            raise ValueError(f"budget {text!r} is not positive")
        return Budget(t, candidates=int(t))
    try:
        return Budget(t, seconds=parse_duration(t))
    except ValueError:
        raise ValueError(f"cannot read budget {text!r}: a duration (30m, 2h), a number of candidates (40) or "
                         "dollars ($2)") from None


@dataclass(frozen=True)
class Cell:
    problem: str  # the path as given
    problem_name: str
    model: object  # a ModelSpec
    language: str | None = None  # --language, or None: the problem's first

    def tag(self, name: str, budget: Budget) -> dict:
        """The cell as its run's options record it; "agent" and "language" only where set, so that cells from
        before either existed are found again."""
        tag = {"name": name, "problem": self.problem_name, "model": self.model.name, "budget": budget.text}
        tag = {**tag, "agent": True} if self.model.agent else tag
        return tag if self.language is None else {**tag, "language": self.language}


def cells(problems: list[tuple[str, str]], models, languages=(None,)) -> list[Cell]:
    """Problems outer, then languages, models inner: (path, name) pairs, language names and ModelSpecs."""
    return [Cell(path, name, m, language) for path, name in problems for language in languages for m in models]


def existing(archive, cell: Cell, tag: dict) -> dict | None:
    """The archive's run of this cell (the newest), or None."""
    found = None
    for run in archive.runs():
        if (run.get("options") or {}).get("bench") == tag:
            found = run
    return found


def finished(run: dict) -> bool:
    """Ended for a reason of its own; a cell stopped by Ctrl-C or by a provider that gave nothing usable (fixed
    since, one hopes) is resumed."""
    reason = str(run.get("stop_reason") or "")
    return bool(run.get("ended")) and not reason.startswith("interrupted") and "gave nothing to evaluate" not in reason


def spent_seconds(archive, run_id: int) -> float:
    """Seconds a run has worked so far: its evaluations plus its model calls (time stopped or paused between
    sessions is not charged; calls that overlapped an evaluation are, which errs against the cell)."""
    return sum(float(c["eval_seconds"] or 0.0) + float(c["latency_s"] or 0.0) for c in archive.timeline(run_id))


def cell_config(base: RunConfig, cell: Cell, tag: dict, budget: Budget, resume_run: int | None,
                seconds_spent: float = 0.0) -> RunConfig:
    budget_s = None
    if budget.seconds is not None:
        budget_s = max(1.0, budget.seconds - seconds_spent)
    return replace(base, problem_dir=cell.problem, models=(cell.model,), max_candidates=budget.candidates,
                   eval=replace(base.eval, language=cell.language),
                   budget_s=budget_s, max_cost=budget.dollars, resume=resume_run is not None, run_id=resume_run,
                   isolated=True, bench=tag, default_budget=False)
