"""Every adversarial case through one parent process: expected and actual verdict, reason, seconds. Prints a table.

    python benchmarks/adversarial_report.py [--cache DIR] [CASE ...]

Each case in tests/adversarial/cases/ is evaluated against tests/adversarial/problem with the static check on and,
where its header has an `expect-dynamic` line, once more with the static check off; the `stops` column is the defence
its header names for that run. The honest control is evaluated first and again last, and its per-shape figures are
compared, so the table also shows whether the suite degraded the harness. GPU-only cases are skipped without a GPU.
Exit status 1 if any verdict differs from its header.
"""
import argparse
import statistics
from concurrent.futures import ThreadPoolExecutor
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "adversarial"))

from test_adversarial import CASES, PROBLEM, check, expected, header, language_missing, options_for  # noqa: E402

from evolve.harness import evaluate  # noqa: E402
from evolve.harness.parent.sandbox import STARTED_AHEAD  # noqa: E402


def one(path: Path, options, key: str) -> dict:
    started = time.perf_counter()
    # The next case's processes start while this one is evaluated, as in `evolve run` (start-up only: a spare
    # prepares nothing on the device before its job arrives).
    verdict = evaluate(path, PROBLEM, replace(options, prewarm=True))
    seconds = time.perf_counter() - started
    expectation = expected(header(path), key, verdict)
    failure = verdict.failure
    try:
        check(verdict, expectation)
        match = True
    except AssertionError:
        match = False
    return {"verdict": verdict, "seconds": seconds, "match": match, "expected": expectation,
            "rung": failure.name if failure else "-",
            "reason": " ".join((failure.reason or "").split()) if failure else "ok"}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", help="peaks/baselines cache folder (default: a fresh temporary one)")
    parser.add_argument("--width", type=int, default=110, help="reason column width")
    parser.add_argument("--jobs", type=int, default=1,
                        help="cases evaluated at once, without a GPU only (the honest control always runs alone, "
                             "before and after)")
    parser.add_argument("cases", nargs="*", help="case names (default: all)")
    args = parser.parse_args()
    cache = args.cache or tempfile.mkdtemp(prefix="evolve-adv-")
    control = CASES / "honest_control.py"
    paths = [p for p in sorted(CASES.glob("*.py")) if not args.cases or p.stem in args.cases]

    before = one(control, options_for(control, cache), "expect")
    gpu = before["verdict"].mode == "gpu"
    if gpu and args.jobs > 1:
        print(f"--jobs {args.jobs} ignored on a GPU: evaluations sharing the card would time each other's work")
        args.jobs = 1
    print(f"device: {before['verdict'].device}  mode: {before['verdict'].mode}")
    print(f"{'case':<28}{'check':<8}{'stops':<14}{'match':<6}{'rung':<12}{'secs':>6}  reason")
    rows, slowest = [], (0.0, "")
    todo = []
    for path in paths:
        h = header(path)
        if "gpu" in h and not gpu:
            print(f"{path.stem:<28}{'-':<8}{'-':<14}{'-':<6}{'-':<12}{'':>6}  skipped: needs a GPU")
            continue
        if absent := language_missing(h):
            print(f"{path.stem:<28}{'-':<8}{'-':<14}{'-':<6}{'-':<12}{'':>6}  skipped: {absent}")
            continue
        base = options_for(path, cache)
        lines = h["stops"].split(", then ")
        todo.append((path, "static", base, "expect", lines[0]))
        if "expect-dynamic" in h:
            todo.append((path, "dynamic", replace(base, static_check=False), "expect-dynamic", lines[-1]))
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        results = pool.map(lambda item: one(item[0], item[2], item[3]), todo)
        for (path, label, _, _, stops), r in zip(todo, results):
            rows.append(r)
            if not r["verdict"].ok and r["seconds"] > slowest[0]:
                slowest = (r["seconds"], f"{path.stem} ({label})")
            reason = r["reason"] if len(r["reason"]) <= args.width else r["reason"][: args.width - 3] + "..."
            print(f"{path.stem:<28}{label:<8}{stops:<14}{'yes' if r['match'] else 'NO':<6}{r['rung']:<12}"
                  f"{r['seconds']:>6.1f}  {reason}", flush=True)
            if not r["match"]:
                print(f"{'':<28}expected: {r['expected']}", flush=True)

    after = one(control, options_for(control, cache), "expect")
    STARTED_AHEAD.clear()
    print(f"{sum(r['match'] for r in rows)} of {len(rows)} verdicts as expected; "
          f"slowest rejection {slowest[0]:.1f} s: {slowest[1]}")
    b, a = before["verdict"], after["verdict"]

    def fit(v):
        return "-" if v.fitness is None else f"{v.fitness:.4f}"

    print(f"honest control before: {'ok' if b.ok else 'FAILED'} fitness {fit(b)}; "
          f"after: {'ok' if a.ok else 'FAILED'} fitness {fit(a)}")
    if b.shapes and a.shapes:
        ratios = [x["ms"] / y["ms"] for x, y in zip(a.shapes, b.shapes)]
        print(f"per-shape time after/before: median {statistics.median(ratios):.3f} "
              f"(min {min(ratios):.3f}, max {max(ratios):.3f}, {len(ratios)} shapes)")
    sys.exit(0 if all(r["match"] for r in rows) and a.ok and b.ok else 1)


if __name__ == "__main__":
    main()
