"""Whose fault it is when the problem's input generator fails inside an evaluation. A candidate can make the
generator fail there (it takes the card's or the host's memory at import), and a problem fault stops a whole run, so
the measurer's word is not enough: after the evaluation's processes are gone, a jailed child with no candidate loaded
(harness/parent/jailed.py) makes the same case's inputs from the same seed on the same card, and its answer decides."""
from __future__ import annotations

from dataclasses import replace

from . import jailed
from .verdict import RungResult

LIMIT_S = 300.0  # a cold torch import and one case's inputs (KernelBench's are up to 13 GB) on a loaded machine


def judged(rung: RungResult, problem_path, card: bool, gpu: str | None, fork: bool = True) -> RungResult:
    """The failed rung the measurer reported (its metrics name the case and the seed), with its cause decided: the
    candidate's where the inputs are made without it; the harness's (the evaluation is made again) where memory ran
    out without it too; the problem's (problem_fault, the run stops) where the generator fails without it too."""
    figures = dict(rung.metrics)
    said = figures.pop("generator_failed")
    answer = jailed.ask("inputs", {"problem": str(problem_path), "case": said["case"], "seed": said["seed"]},
                        LIMIT_S, card=card, gpu=gpu, fork=fork, runner_user=False)
    if answer.get("made"):
        return replace(rung, reason=f"{rung.reason}, while this candidate was loaded; with none loaded the same "
                                    "inputs were made, so the failure is the candidate's", metrics=figures)
    if answer.get("out_of_memory") or "made" not in answer:
        why = answer.get("reason") or answer.get("error")
        return replace(rung, reason=f"{rung.reason}; with no candidate loaded it failed too ({why}), for want of "
                                    "memory another process holds or in the harness: the harness's failure, not the "
                                    "candidate's, so it is evaluated again",
                       metrics={**figures, "evaluate_again": True})
    return replace(rung, reason=f"{rung.reason}; with no candidate loaded too ({answer.get('reason')}): a fault of the "
                                "problem, not the candidate's (`evolve check-problem` shows it)",
                   metrics={**figures, "problem_fault": True})
