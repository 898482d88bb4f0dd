"""An evaluation that stops early or times some cases only (what an agent session's tools ask for): the rungs past
the last one asked for are skipped with the reason, and a figure over some of the cases never becomes a fitness."""
from pathlib import Path

import pytest

from evolve.harness import EvalOptions, evaluate
from test_run import GOOD

MINI = Path(__file__).resolve().parent / "data" / "mini_softmax"


@pytest.fixture(scope="module")
def candidate(tmp_path_factory):
    path = tmp_path_factory.mktemp("partial") / "candidate.py"
    path.write_text(GOOD.replace("WARPS", "4"))
    return path


def statuses(verdict) -> dict:
    return {r.name: r.status for r in verdict.rungs}


def test_stopping_after_compile_skips_the_rest_with_the_reason(candidate):
    verdict = evaluate(candidate, MINI, EvalOptions(device="cpu", last_rung="compile"))
    assert statuses(verdict) == {"load": "ok", "compile": "ok", "run": "skipped", "correctness": "skipped",
                                 "benchmark": "skipped", "roofline": "skipped"}
    assert "stopped after the compile rung" in verdict.rung("run").reason
    assert not verdict.ok and verdict.kernels  # never a pass, and the compiled kernels are there to read


def test_stopping_after_correctness_checks_without_timing(candidate):
    verdict = evaluate(candidate, MINI, EvalOptions(device="cpu", last_rung="correctness"))
    assert statuses(verdict)["correctness"] == "ok" and statuses(verdict)["benchmark"] == "skipped"
    assert not verdict.ok and not verdict.shapes


def test_some_cases_timed_give_their_figures_and_no_fitness(candidate):
    verdict = evaluate(candidate, MINI, EvalOptions(device="cpu", bench_cases=("fp32 4x256",)))
    assert [s["case"] for s in verdict.rung("benchmark").metrics["shapes"]] == ["fp32 4x256"]
    assert verdict.fitness is None and statuses(verdict)["roofline"] == "skipped"
    assert "advice" in verdict.rung("roofline").reason


def test_an_unknown_case_fails_the_benchmark_naming_the_cases(candidate):
    verdict = evaluate(candidate, MINI, EvalOptions(device="cpu", bench_cases=("fp32 1x1",)))
    failed = verdict.failure
    assert failed is not None and failed.name == "benchmark" and "fp32 4x256" in failed.reason


def test_an_unknown_last_rung_is_refused_before_anything_starts(candidate):
    with pytest.raises(ValueError, match="last_rung"):
        evaluate(candidate, MINI, EvalOptions(device="cpu", last_rung="roofline"))
