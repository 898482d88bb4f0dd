"""Why a run stops: the problem's own failure, the target, --max-candidates, the budget, --max-cost, stagnation,
lanes that cannot evaluate, or a model that gives nothing to evaluate. Each reason says how to go on."""
from __future__ import annotations

import statistics

from .config import format_duration

UNEVALUATED_STOP = 3  # candidates in a row that no lane could evaluate before the run stops


def stop_reason(c, ledger, best, elapsed: float, eval_seconds: list, spent, ahead: int = 0) -> str | None:
    """c: the RunConfig; ledger: the run's ledger.Ledger (its counts); elapsed: seconds the budget counts;
    eval_seconds: each evaluation's seconds so far; spent(): dollars spent; ahead: candidates in the pipeline, which
    count toward --max-candidates."""
    if ledger.problem_fault:
        return f"the problem itself failed, so no kernel can pass: {ledger.problem_fault[:300]}; fix it, then --resume"
    if best is not None and best.fitness is not None and best.fitness >= c.target:
        return f"target reached: fitness {best.fitness:.3f} >= {c.target}"
    if c.max_candidates is not None and ledger.evaluated + ahead >= c.max_candidates:
        return f"--max-candidates {c.max_candidates} evaluated"
    if c.budget_s is not None:
        typical = statistics.median(eval_seconds) if eval_seconds else 0.0
        if elapsed + typical > c.budget_s:  # the next evaluation would end past the budget
            which = "the default budget without a GPU" if c.default_budget else "--budget"
            return f"{which} of {format_duration(c.budget_s)} used; go on with --resume --budget 30m (or longer)"
    if c.max_cost is not None and spent() >= c.max_cost:
        return f"--max-cost ${c.max_cost:g} spent"
    if ledger.since_improvement >= c.search.stagnation:
        return f"no improvement in {c.search.stagnation} evaluated candidates"
    if ledger.unevaluated_run >= UNEVALUATED_STOP:
        return (f"the harness could not evaluate {ledger.unevaluated_run} candidates in a row (the last: "
                f"{ledger.last_unevaluated[:300]}); they stay pending: check the GPUs, then --resume")
    if ledger.unusable >= c.search.unusable:
        # without this a broken provider (or a model that only repeats itself) would be asked forever, since
        # the other limits count evaluated candidates
        return (f"{ledger.unusable} proposals in a row gave nothing to evaluate (the last: "
                f"{ledger.last_unusable[:300]}); check the model, its key and --api-base, then --resume")
    return None
