"""Shapes drawn per evaluation from what a problem declares it accepts ([accepts] in problem.toml,
harness/measurer/drawn_shapes.py): a kernel right only on the listed shapes fails."""
import math
import shutil
import textwrap
from pathlib import Path

import pytest

from evolve.harness import EvalOptions, evaluate
from evolve.harness.measurer.drawn_shapes import DRAWN, draw
from evolve.harness.shared.formats import load_problem
from evolve.harness.shared.problem import ProblemError

ROOT = Path(__file__).resolve().parents[1]
ADVERSARIAL = ROOT / "tests" / "adversarial" / "problem"


def test_a_kernel_right_only_on_the_listed_widths_fails_on_a_drawn_one(tmp_path):
    """It writes every column on the widths the problem lists and drops the last one on any other width: every listed
    check passed it. A drawn width is one it was never shown (the chance that both draws land on a listed width is
    about 1 in 5,000)."""
    problem = load_problem(ADVERSARIAL)
    listed = sorted({dict(case.shape)["N"] for case in problem.tests + problem.benchmarks + problem.cpu_benchmarks})
    honest = (ROOT / "problems" / "softmax" / "solutions" / "correct" / "single_block.py").read_text()
    candidate = tmp_path / "listed_widths_only.py"
    candidate.write_text(honest.replace(
        "softmax_kernel[(n_rows,)](out, x, x.stride(0), out.stride(0), n_cols,",
        "softmax_kernel[(n_rows,)](out, x, x.stride(0), out.stride(0), n_cols if n_cols in LISTED else n_cols - 1,"
    ) + f"\nLISTED = {listed!r}\n")
    verdict = evaluate(candidate, ADVERSARIAL, EvalOptions(device="cpu", cache_dir=str(tmp_path / "cache")))
    correctness = verdict.rung("correctness")
    assert verdict.rung("run").ok and correctness.failed, verdict.rungs
    assert "a shape drawn for this evaluation from the problem's [accepts]" in correctness.reason
    assert len(correctness.metrics["drawn"]) == DRAWN


def test_the_correctness_line_names_the_drawn_shapes():
    from evolve.harness.parent.verdict import RungResult
    from evolve.render import rung_line

    rung = RungResult("correctness", "ok", "worst: fp32 max_abs=0", 1.0,
                      {"checks": 44, "drawn": ["fp32 3x858", "bf16 16x4538"], "per_dtype": {}})
    line = rung_line(rung, ())
    assert "(44 checks, fp32 3x858 and bf16 16x4538 drawn)" in line


def test_the_drawn_shapes_keep_to_the_declared_ranges_and_the_largest_test_and_differ_by_secret():
    problem = load_problem(ROOT / "problems" / "attention")
    budget = max(math.prod(dict(case.shape).values()) for case in problem.tests)
    seen = set()
    for secret in range(300):
        cases = draw(problem, secret)
        assert cases == draw(problem, secret) and len(cases) == DRAWN  # the secret decides them
        for case in cases:
            shape = dict(case.shape)
            assert shape["D"] in (64, 128) and all(1 <= shape[n] <= 32 for n in "BH") and 1 <= shape["S"] <= 16384
            assert math.prod(shape.values()) <= budget, shape
            assert (case.dtype, case.params) in {(c.dtype, c.params) for c in problem.tests}
            seen.add(case.shape)
    assert len(seen) > 300  # shapes nobody can list beforehand


def test_a_multiple_is_kept_and_a_problem_without_accepts_checks_its_listed_shapes(tmp_path):
    folder = tmp_path / "problem"
    shutil.copytree(ADVERSARIAL, folder)
    toml = folder / "problem.toml"
    text = toml.read_text()
    toml.write_text(text.replace("N = { min = 1, max = 131072 }", "N = { min = 16, max = 4096, multiple_of = 16 }"))
    problem = load_problem(folder)
    widths = {dict(case.shape)["N"] for secret in range(200) for case in draw(problem, secret)}
    assert widths and all(w % 16 == 0 and 16 <= w <= 4096 for w in widths) and len(widths) > 20
    toml.write_text(text.split("[accepts]")[0])
    assert draw(load_problem(folder), 1) == ()


@pytest.mark.parametrize("accepts, fragment", [
    ("Q = { min = 1, max = 9 }", "not a dimension of every [[test]] shape"),
    ("N = { min = 9, max = 1 }", "min must be at most max"),
    ("N = { min = 3, max = 9, multiple_of = 2 }", "a multiple of multiple_of"),
    ("N = { low = 1 }", "must be { min = 1, max = 4096 }"),
    ("N = { one_of = [64, 0] }", "every value must be a positive integer"),
])
def test_a_malformed_accepts_is_named(tmp_path, accepts, fragment):
    folder = tmp_path / "problem"
    shutil.copytree(ADVERSARIAL, folder)
    toml = folder / "problem.toml"
    toml.write_text(toml.read_text().split("[accepts]")[0] + "[accepts]\n" + textwrap.dedent(accepts) + "\n")
    with pytest.raises(ProblemError, match="accepts"):
        try:
            load_problem(folder)
        except ProblemError as exc:
            assert fragment in str(exc), str(exc)
            raise
