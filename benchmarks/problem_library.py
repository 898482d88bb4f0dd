"""Every problem's seed against the roofline, next to torch eager and torch.compile, in one run. Needs a CUDA GPU.

    python benchmarks/problem_library.py [PROBLEM ...] [--json results.json]

Each problem's first seed goes through the whole harness (evolve eval): its benchmark rung times it, and the torch
baselines (reference.py's `baseline`, eager and under torch.compile) on the same inputs, with the same clock and L2
flush. Columns per benchmark case: the bound (max of bytes / measured copy bandwidth and flops / measured matmul rate
of the dtype), the seed's time, and the fraction of the roofline each of seed, eager and compiled reaches (bound /
time). A problem whose seed fails prints the failing rung instead. Without arguments: every folder in problems/.
"""
import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from evolve.harness import EvalOptions, evaluate, load_problem

ROOT = Path(__file__).resolve().parents[1]


def rows_of(verdict) -> list[dict]:
    rows = []
    for shape in verdict.shapes:
        fraction = shape.get("roofline_fraction")
        bound = fraction * shape["ms"] if fraction else None
        eager = shape.get("speedup_vs_torch")
        compiled = shape.get("speedup_vs_compile")
        rows.append({"case": shape["case"], "bound_ms": bound, "seed_ms": shape["ms"], "seed": fraction,
                     "eager": fraction / eager if fraction and eager else None,
                     "compile": fraction / compiled if fraction and compiled else None})
    return rows


def fmt(value, spec=".2f") -> str:
    return "-" if value is None else format(value, spec)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("problems", nargs="*", help="problem folders (default: every folder in problems/)")
    parser.add_argument("--json", dest="json_path", help="also write every figure here")
    parser.add_argument("--budget", type=float, default=0.4, help="seconds of timing per benchmark case")
    args = parser.parse_args()
    folders = [Path(p) for p in args.problems] or sorted(p for p in (ROOT / "problems").iterdir() if p.is_dir())
    results = {}
    with tempfile.TemporaryDirectory(prefix="evolve-library-") as cache:
        for folder in folders:
            problem = load_problem(folder)
            seed = problem.seed_files()[0]
            started = time.perf_counter()
            verdict = evaluate(seed, folder, EvalOptions(device="cuda", cache_dir=cache, timeout_s=590,
                                                         bench_budget_s=args.budget))
            seconds = time.perf_counter() - started
            failed = next((r for r in verdict.rungs if r.failed), None)
            results[problem.name] = {"seed": seed.name, "fitness": verdict.fitness, "seconds": round(seconds, 1),
                                     "device": verdict.device, "versions": verdict.versions,
                                     "failed": f"{failed.name}: {failed.reason}" if failed else None,
                                     "rows": rows_of(verdict)}
            print(f"{problem.name}: {seed.name} fitness {fmt(verdict.fitness)} in {seconds:.0f} s"
                  + (f"  FAILED {failed.name}: {failed.reason}" if failed else ""), flush=True)
            if args.json_path:
                Path(args.json_path).write_text(json.dumps(results, indent=1))
    print()
    print(f"{'problem':<14}{'case':<34}{'bound ms':>10}{'seed ms':>10}{'seed':>7}{'eager':>7}{'compile':>9}")
    for name, result in results.items():
        for row in result["rows"]:
            print(f"{name:<14}{row['case']:<34}{fmt(row['bound_ms'], '.4f'):>10}{fmt(row['seed_ms'], '.4f'):>10}"
                  f"{fmt(row['seed']):>7}{fmt(row['eager']):>7}{fmt(row['compile']):>9}")
        if not result["rows"]:
            print(f"{name:<14}{'(no figures: ' + (result['failed'] or 'none') + ')'}"[:160])
    any_result = next(iter(results.values()), None)
    if any_result:
        print(f"\ndevice {any_result['device']}, {any_result['versions']}; fractions of the roofline (bound / time)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
