"""Cheating, crashing and hanging candidates: each must fail with its reason, and the harness must stay healthy.

Every file in cases/ is a candidate that tries one trick, evaluated against problem/ (problems/softmax with small test
shapes, so the suite runs in minutes on a CPU; the same GPU benchmark shapes). Its header says what must happen and
which line stops it:

    # stops: <line>[, then <line>]      which defence stops it: static check, runner, measurer, window, jail, limits,
                                        or none (an honest control); after "then", what stops it once the line
                                        before is gone
    # expect: <rung>[|<rung>...]: <reason>[|<reason>...]      with the static check on (the default)
    # expect-dynamic: <rung>...: <reason>...       when the static check stops it: the same file with the static
                                                   check off, so the lines behind it are tested on their own
    # expect-gpu: / # expect-dynamic-gpu: ...      optional: what replaces the line above on a GPU
    # gpu                                          optional: needs a CUDA GPU (run by hand there)
    # language: <name>                             optional: the candidate's language (default the problem's first)
    # max-memory: <GB>  /  # timeout: <seconds>    optional evaluation limits

The lines: "static check" refuses the file (evolve/harness/runner/static/check.py); "runner" is the runner's own first
line (host torch ops, no launch, output types), believed only when it reports a failure; "measurer" reads the outputs'
bytes outside the runner and compares them; "window" times the runner's calls from outside it, so hidden work is
counted; "jail" keeps the runner from writing outside its folder or reaching other processes; "limits" are the
wall-clock and memory limits and the process that dies alone. `<reason>` fragments are matched case-insensitively
against the failed rung's reason; an expectation of `ok` means the candidate must pass (the trick gains nothing), and
`ok or <rung>: <reason>` accepts either outcome (a race the candidate runs against the read-back, say).
"""
import re
import statistics
from dataclasses import replace
from pathlib import Path

import pytest

from evolve.harness import EvalOptions, Verdict, evaluate

ROOT = Path(__file__).resolve().parents[2]
PROBLEM = Path(__file__).parent / "problem"
CASES = Path(__file__).parent / "cases"
LINES = ("static check", "runner", "measurer", "window", "jail", "limits", "none")
HEADER = re.compile(r"#\s*(expect-dynamic-gpu|expect-dynamic|expect-gpu|expect|stops|gpu|language|max-memory|timeout)\s*"
                    r"(?::\s*(.*))?$")


def header(path: Path) -> dict:
    out = {}
    for line in path.read_text().splitlines():
        match = HEADER.match(line.strip())
        if not match:
            if line.strip() and not line.startswith("#"):
                break
            continue
        out[match.group(1)] = (match.group(2) or "").strip()
    assert "expect" in out, f"{path.name}: needs a '# expect:' line"
    assert "stops" in out, f"{path.name}: needs a '# stops:' line naming the defence that stops it"
    lines = [part.strip() for part in out["stops"].split(", then ")]
    assert all(line in LINES for line in lines), f"{path.name}: stops names {lines}, not among {LINES}"
    if lines[0] == "static check":
        assert "expect-dynamic" in out and len(lines) > 1, f"{path.name}: say what stops it behind the static check"
    for key in ("expect-gpu", "expect-dynamic-gpu"):
        assert key not in out or key[: -len("-gpu")] in out, f"{path.name}: '# {key}:' overrides a line it lacks"
    return out


def cases():
    params = []
    for path in sorted(CASES.glob("*.py")):
        marks = [pytest.mark.gpu] if "gpu" in header(path) else []
        params.append(pytest.param(path, id=path.stem, marks=marks))
    return params


def language_missing(h: dict) -> str | None:
    """What this machine lacks to run the case's language (its header's `language:`), or None."""
    from evolve import lang

    return lang.missing(lang.get(h["language"])) if "language" in h else None


def expected(h: dict, key: str, verdict: Verdict) -> str:
    """The header's expectation `key` for this verdict's mode: a `-gpu` line wins on a GPU."""
    return h.get(f"{key}-gpu", h[key]) if verdict.mode == "gpu" else h[key]


def check(verdict: Verdict, expectation: str) -> None:
    failed = [r for r in verdict.rungs if r.failed]
    if expectation.startswith("ok or "):  # either outcome is honest: passed with its true figures, or failed
        if verdict.ok:
            return
        expectation = expectation[len("ok or "):]
    if expectation.startswith("ok"):
        assert verdict.ok, [f"{r.name}: {r.reason}" for r in failed]
        return
    rungs, _, reasons = expectation.partition(":")
    assert not verdict.ok and len(failed) == 1, [(r.name, r.status, r.reason) for r in verdict.rungs]
    assert failed[0].name in rungs.split("|"), f"failed at {failed[0].name}: {failed[0].reason}"
    reason = (failed[0].reason or "").lower()
    assert any(fragment.strip().lower() in reason for fragment in reasons.split("|")), failed[0].reason


def options_for(path: Path, cache_dir: str) -> EvalOptions:
    h = header(path)
    return EvalOptions(cache_dir=cache_dir, timeout_s=float(h.get("timeout", 120)),
                       max_rss_gb=float(h.get("max-memory", 8)), language=h.get("language"))


@pytest.mark.parametrize("path", cases())
def test_case(path, cache_dir):
    h = header(path)
    if absent := language_missing(h):
        pytest.skip(absent)
    options = options_for(path, cache_dir)
    verdict = evaluate(path, PROBLEM, options)
    check(verdict, expected(h, "expect", verdict))
    if "expect-dynamic" in h:
        verdict = evaluate(path, PROBLEM, replace(options, static_check=False))
        check(verdict, expected(h, "expect-dynamic", verdict))


@pytest.mark.slow
def test_harness_not_degraded_by_the_suite(cache_dir):
    """The cases that crash, hang, exit or exhaust memory, with the static check off, in one parent process between
    two runs of the honest control: same verdict, and on a GPU the same figures."""
    control = CASES / "honest_control.py"
    options = EvalOptions(cache_dir=cache_dir, timeout_s=120)
    before = evaluate(control, PROBLEM, options)
    assert before.ok
    for path in sorted(CASES.glob("*.py")):
        h = header(path)
        if ("gpu" in h and before.mode != "gpu") or "limits" not in h["stops"]:
            continue
        evaluate(path, PROBLEM, replace(options_for(path, cache_dir), static_check=False, timeout_s=10))
    after = evaluate(control, PROBLEM, options)
    assert after.ok
    assert [r.status for r in after.rungs] == [r.status for r in before.rungs]
    if before.mode == "gpu":  # times on a GPU agree within noise; interpreter times are too noisy to compare
        ratios = [a["ms"] / b["ms"] for a, b in zip(after.shapes, before.shapes)]
        assert 0.9 < statistics.median(ratios) < 1.1, ratios
