"""Every problem's seeds pass the whole ladder under the CPU interpreter, and every file in problems/*/solutions/ is a
test of the checker: its first line says the verdict it must get."""
import re
from pathlib import Path

import pytest

from evolve.harness import EvalOptions, evaluate

ROOT = Path(__file__).resolve().parents[1]
EXPECT = re.compile(r"#\s*expect:\s*(ok|(load|compile|run|correctness|benchmark|roofline):\s*(.+))\s*$")


def solution_files():
    files = sorted(ROOT.glob("problems/*/solutions/*/*.py"))
    return [pytest.param(f, id=f"{f.parents[2].name}/{f.parent.name}/{f.stem}") for f in files]


def seed_files():
    files = sorted(ROOT.glob("problems/*/seeds/*.py"))
    return [pytest.param(f, id=f"{f.parents[1].name}/seeds/{f.stem}") for f in files]


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
    assert not verdict.ok
    failed = [r for r in verdict.rungs if r.failed]
    assert len(failed) == 1, failed
    assert failed[0].name == rung, f"failed at {failed[0].name} ({failed[0].reason}), expected {rung}"
    assert reason in failed[0].reason.lower(), failed[0].reason
    after = verdict.rungs[[r.name for r in verdict.rungs].index(rung) + 1:]
    assert all(r.status == "skipped" for r in after)
