"""Harness overhead per candidate: wall time of one evaluation, split by rung. Prints a table.

    python benchmarks/harness_overhead.py [CANDIDATE] [PROBLEM]

Defaults to the softmax seed. Runs the evaluation twice: first with an empty cache (peaks and torch/torch.compile
baselines measured), then with the cache warm, which is what every candidate after the first one pays.
"""
import sys
import tempfile
import time
from pathlib import Path

from evolve.harness import EvalOptions, evaluate

ROOT = Path(__file__).resolve().parents[1]


def one(candidate, problem, cache_dir):
    started = time.perf_counter()
    verdict = evaluate(candidate, problem, EvalOptions(cache_dir=cache_dir))
    wall = time.perf_counter() - started
    per = {r["name"]: r["seconds"] for r in verdict["rungs"]}
    return verdict, wall, per


def main():
    candidate = sys.argv[1] if len(sys.argv) > 1 else ROOT / "problems/softmax/seeds/softmax_rows.py"
    problem = sys.argv[2] if len(sys.argv) > 2 else ROOT / "problems/softmax"
    rows = []
    with tempfile.TemporaryDirectory() as cache:
        for label in ("cold cache", "warm cache"):
            verdict, wall, per = one(candidate, problem, cache)
            rows.append((label, verdict, wall, per))
    print(f"device: {rows[0][1]['device']}  mode: {rows[0][1]['mode']}")
    print(f"{'run':<12}{'ok':>4}{'load':>7}{'compile':>9}{'run':>7}{'correct':>9}{'bench':>8}{'other':>8}{'total':>8}")
    for label, verdict, wall, per in rows:
        rungs = ("load", "compile", "run", "correctness", "benchmark")
        other = wall - sum(per.get(r, 0.0) for r in rungs)
        cells = "".join(f"{per.get(r, 0.0):>{w}.1f}" for r, w in zip(rungs, (7, 9, 7, 9, 8)))
        print(f"{label:<12}{'yes' if verdict['ok'] else 'no':>4}{cells}{other:>8.1f}{wall:>8.1f}")
        setup = ", ".join(f"{s['mode']} child: start {s['start_s']:.1f} s, imports {s['import_s']:.1f} s, "
                          f"prepare {s['prepare_s']:.1f} s"
                          for s in verdict.get("setup", []))
        print(f"{'':<12}{setup}")
    print("seconds; 'other' = process start, imports, device setup, reference inputs, peaks/baselines when cold")


if __name__ == "__main__":
    main()
