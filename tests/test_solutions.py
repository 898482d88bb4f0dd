"""Every problem's seeds pass the whole ladder under the CPU interpreter, and every file in problems/*/solutions/ is a
test of the checker: its first line says the verdict it must get."""
import re
from pathlib import Path

import pytest
import torch

from evolve import lang
from evolve.harness import EvalOptions, evaluate

HAS_GPU = torch.cuda.is_available()

ROOT = Path(__file__).resolve().parents[1]
EXPECT = re.compile(r"#\s*expect:\s*(ok|(load|compile|run|correctness|benchmark|roofline):\s*(.+))\s*$")


def solution_files():
    files = sorted(ROOT.glob("problems/*/solutions/*/*.py"))
    return [pytest.param(f, id=f"{f.parents[2].name}/{f.parent.name}/{f.stem}") for f in files]


def seed_files():
    files = sorted(ROOT.glob("problems/*/seeds/*.py"))
    return [pytest.param(f, id=f"{f.parents[1].name}/seeds/{f.stem}") for f in files]


def other_language_files():
    """Seeds and solutions in another language than a problem's first: seeds/<language>/,
    solutions/<kind>/<language>/."""
    files = sorted(ROOT.glob("problems/*/seeds/*/*.py")) + sorted(ROOT.glob("problems/*/solutions/*/*/*.py"))
    return [pytest.param(f, id=str(f.relative_to(ROOT / "problems").with_suffix(""))) for f in files]


def test_every_problem_has_a_seed_and_wrong_solutions():
    for folder in sorted(p for p in (ROOT / "problems").iterdir() if p.is_dir()):
        assert list((folder / "seeds").glob("*.py")), f"{folder.name} has no seed"
        assert list((folder / "solutions" / "wrong").glob("*.py")), f"{folder.name} has no wrong solution"


@pytest.mark.parametrize("path", seed_files())
def test_seed_passes(path, cache_dir):
    verdict = evaluate(path, path.parents[1], EvalOptions(cache_dir=cache_dir))
    assert verdict.ok, [f"{r.name}: {r.reason}" for r in verdict.rungs if r.failed]
    assert verdict.rung("correctness").status == "ok"


def expectation(path: Path):
    match = EXPECT.match(path.read_text().splitlines()[0])
    assert match, f"{path}: first line must be '# expect: ok' or '# expect: <rung>: <reason>'"
    if match.group(1) == "ok":
        return None, None
    return match.group(2), match.group(3).strip().lower()


@pytest.mark.slow  # every solution file of every problem; the seeds above climb the ladder in the quick run
@pytest.mark.parametrize("path", solution_files())
def test_solution_verdict(path, cache_dir):
    rung, reason = expectation(path)
    if path.parent.name == "correct":
        assert rung is None, "files in solutions/correct must expect ok"
    else:
        assert rung is not None, "files in solutions/wrong must expect a failing rung"
    timeout = 25 if reason and "timed out" in reason else 600
    verdict = evaluate(path, path.parents[2], EvalOptions(cache_dir=cache_dir, timeout_s=timeout))
    if rung is None:
        assert verdict.ok, [f"{r.name}: {r.reason}" for r in verdict.rungs if r.failed]
        assert verdict.rung("correctness").status == "ok"
        return
    assert_fails_as_expected(verdict, rung, reason)


def assert_fails_as_expected(verdict, rung, reason):
    assert not verdict.ok
    failed = [r for r in verdict.rungs if r.failed]
    assert len(failed) == 1, failed
    assert failed[0].name == rung, f"failed at {failed[0].name} ({failed[0].reason}), expected {rung}"
    assert reason in failed[0].reason.lower(), failed[0].reason
    after = verdict.rungs[[r.name for r in verdict.rungs].index(rung) + 1:]
    assert all(r.status == "skipped" for r in after)


@pytest.mark.slow
@pytest.mark.parametrize("path", other_language_files())
def test_other_language_file_verdict(path, cache_dir):
    """Where the machine has no GPU, a language without an interpreter reaches only its compile rung: a file expected
    to pass or to fail later must compile, its later rungs skipped for want of a GPU; on a GPU the whole expectation."""
    seed = path.parent.parent.name == "seeds"
    language, problem = path.parent.name, path.parents[2] if seed else path.parents[3]
    rung, reason = (None, None) if seed else expectation(path)
    verdict = evaluate(path, problem, EvalOptions(cache_dir=cache_dir, language=language,
                                                  device="cuda" if HAS_GPU else "cpu"))
    order = [r.name for r in verdict.rungs]
    reachable = order if HAS_GPU or lang.get(language).without_gpu == "interpret" else ["load", "compile"]
    if rung in reachable:
        assert_fails_as_expected(verdict, rung, reason)
        return
    assert all(r.status == "ok" for r in verdict.rungs if r.name in reachable), \
        [f"{r.name}: {r.reason}" for r in verdict.rungs]
    if reachable != order:
        assert all(r.status == "skipped" and "no GPU" in r.reason for r in verdict.rungs if r.name not in reachable)
