"""Harness overhead per candidate: wall time of one evaluation, split by rung. Prints a table.

    python benchmarks/harness_overhead.py [CANDIDATE] [PROBLEM]

Defaults to the softmax seed. Runs the evaluation three times: with an empty cache (peaks and torch/torch.compile
baselines measured); with the cache warm (what `evolve eval` pays); and with the cache warm and the processes (measurer
and runner) already started by the evaluation before (what each candidate pays inside `evolve run`, which starts the
next evaluation's processes while the current one is evaluated).
"""
import argparse
import tempfile
import time
from pathlib import Path

from evolve.harness import EvalOptions, evaluate
from evolve.harness.parent.sandbox import STARTED_AHEAD

ROOT = Path(__file__).resolve().parents[1]


def one(candidate, problem, cache_dir, prewarm=False):
    started = time.perf_counter()
    verdict = evaluate(candidate, problem, EvalOptions(cache_dir=cache_dir, prewarm=prewarm))
    wall = time.perf_counter() - started
    per = {r.name: r.seconds for r in verdict.rungs}
    return verdict, wall, per


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("candidate", nargs="?", default=ROOT / "problems/softmax/seeds/softmax_rows.py",
                        help="candidate file (default: the softmax seed)")
    parser.add_argument("problem", nargs="?", default=ROOT / "problems/softmax",
                        help="problem folder (default: problems/softmax)")
    args = parser.parse_args()
    candidate, problem = args.candidate, args.problem
    rows = []
    with tempfile.TemporaryDirectory() as cache:
        for label, prewarm in (("cold cache", False), ("warm cache", True), ("spare child", True)):
            verdict, wall, per = one(candidate, problem, cache, prewarm)
            rows.append((label, verdict, wall, per))
        STARTED_AHEAD.clear()
    print(f"device: {rows[0][1].device}  mode: {rows[0][1].mode}")
    print(f"{'run':<12}{'ok':>4}{'load':>7}{'compile':>9}{'run':>7}{'correct':>9}{'bench':>8}{'other':>8}{'total':>8}")
    for label, verdict, wall, per in rows:
        rungs = ("load", "compile", "run", "correctness", "benchmark")
        other = wall - sum(per.get(r, 0.0) for r in rungs)
        cells = "".join(f"{per.get(r, 0.0):>{w}.1f}" for r, w in zip(rungs, (7, 9, 7, 9, 8)))
        print(f"{label:<12}{'yes' if verdict.ok else 'no':>4}{cells}{other:>8.1f}{wall:>8.1f}")
        setup = ", ".join(f"waited {s['wait_s']:.1f} s for start-up (measurer {s['warm_s']:.1f} s, runner "
                          f"{s['runner_warm_s']:.1f} s), prepare {s['prepare_s']:.1f} s"
                          for s in verdict.setup)
        print(f"{'':<12}{setup}")
        compile_rung = verdict.rung("compile")
        split = compile_rung.metrics.get("split")
        if split:
            print(f"{'':<12}compile: inputs {split['inputs']:.1f} s, the runner's calls {split['runner_calls']:.1f} s "
                  f"(mapping its inputs {split.get('runner_inputs', 0):.1f} s, Triton compiling "
                  f"{compile_rung.metrics.get('compile_seconds', 0):.1f} s), reading the kernels back "
                  f"{split['runner_describe']:.1f} s")
        split = verdict.rung("benchmark").metrics.get("split")
        if split:
            print(f"{'':<12}benchmark: inputs and references {split['inputs']:.1f} s, "
                  f"windows {split['windows']:.1f} s, checking timed outputs {split['checks']:.1f} s; "
                  f"{split['outputs_mapped']} output allocations mapped in {split['mapping_s']:.1f} s")
    print("seconds; 'other' = process start, imports, device setup, peaks/baselines and window calibration")


if __name__ == "__main__":
    main()
