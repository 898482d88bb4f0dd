"""Honest kernels in the idioms people and models write (tests/honest/): none may be refused.

Each is a correct softmax written the way a public kernel library, Triton's tutorial, a benchmark suite or a model
would write it. All pass the static check for problems/softmax; on a CPU each one runs the whole ladder on the
small softmax of tests/data, except those whose header says they need a GPU, which must still load.
"""
from pathlib import Path

import pytest

from evolve.harness import evaluate
from evolve.harness import load_problem
from evolve.harness.runner.static.check import screen

ROOT = Path(__file__).resolve().parents[1]
HONEST = sorted((ROOT / "tests" / "honest").glob("*.py"))
MINI = ROOT / "tests" / "data" / "mini_softmax"


def test_there_are_honest_kernels():
    assert len(HONEST) >= 8


@pytest.mark.parametrize("path", HONEST, ids=[p.stem for p in HONEST])
def test_the_static_check_accepts_it(path):
    problem = load_problem(ROOT / "problems" / "softmax")
    assert screen(path, problem.forbid_calls, problem.forbid_modules) == []


@pytest.mark.slow
@pytest.mark.parametrize("path", HONEST, ids=[p.stem for p in HONEST])
def test_it_climbs_the_ladder(path, options):
    verdict = evaluate(path, MINI, options)
    assert verdict.rung("load").status == "ok", verdict.rung("load").reason
    if "# needs: gpu" in path.read_text() and verdict.mode != "gpu":
        return
    assert verdict.ok, [(r.name, r.reason) for r in verdict.rungs if r.failed]
