"""Do the harness's figures agree with triton.testing.do_bench? Prints a table; needs a CUDA GPU.

    python benchmarks/timing_agreement.py [CANDIDATE] [--runs 2]

The candidate (default: the softmax seed) is evaluated --runs times through the whole harness, where the measurer
times windows of calls made by the runner from outside it. The same custom_kernel is then timed in this process with
do_bench (L2 flushed before every call) and back to back (the window's own pattern: calls on distinct fresh inputs
with no flush between them, queued behind a spin, between two events). Columns: the harness's median per shape in each
run and their spread, do_bench, and the ratios harness/do_bench and harness/back-to-back. A second table shows the
first run's windows in parts (medians): the fixed cost subtracted, the measurer's copies and read-back as calibrated
with no runner, the two context switches, and what the windows' own copies, runner part and read-back took.
"""
import argparse
import importlib.util
import statistics
import tempfile
import time
from pathlib import Path

import torch
import triton.testing

from evolve.harness import EvalOptions, evaluate
from evolve.harness import load_problem

ROOT = Path(__file__).resolve().parents[1]


def load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def back_to_back(fn, sets) -> float:
    """Per-call ms of fn over the sets, called back to back between two events (the measurer's window pattern)."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    began = time.perf_counter()
    for inputs in sets:
        fn(*inputs)
    queue_ms = (time.perf_counter() - began) * 1e3  # the host's time to queue the calls: the spin must outlast it
    samples = []
    for _ in range(5):
        torch.cuda.synchronize()
        torch.cuda._sleep(int(2e6 * (2 * queue_ms + 1)))
        start.record()
        for inputs in sets:
            fn(*inputs)
        end.record()
        torch.cuda.synchronize()
        samples.append(start.elapsed_time(end) / len(sets))
    return statistics.median(samples)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("candidate", nargs="?", default=ROOT / "problems/softmax/seeds/softmax_rows.py")
    parser.add_argument("--problem", default=ROOT / "problems/softmax")
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("needs a CUDA GPU")
    problem = load_problem(args.problem)
    reference = load(problem.reference_path, "reference")
    kernel = load(Path(args.candidate), "candidate")
    verdicts = []
    with tempfile.TemporaryDirectory() as cache:
        for _ in range(args.runs):
            verdicts.append(evaluate(args.candidate, args.problem, EvalOptions(cache_dir=cache)))
    for v in verdicts:
        if not v.ok:
            raise SystemExit(f"the candidate failed: {[(r.name, r.reason) for r in v.rungs]}")
    print(f"device: {verdicts[0].device}  candidate: {Path(args.candidate).name}  fitness per run: "
          + ", ".join(f"{v.fitness:.4f}" for v in verdicts))
    print(f"{'case':<18}{'K':>4}" + "".join(f"{f'run{i + 1} us':>10}" for i in range(len(verdicts)))
          + f"{'spread':>8}{'do_bench':>10}{'/do_bench':>10}{'back2back':>11}{'/b2b':>7}")
    ratios, b2b_ratios, spreads = [], [], []
    for index, case in enumerate(problem.benchmarks):
        runs = [v.shapes[index]["ms"] for v in verdicts]
        k = verdicts[0].shapes[index]["calls_per_window"]
        sets = [reference.generate_input(1000 + i, device="cuda", **case.kwargs) for i in range(k)]
        x = sets[0]
        theirs = triton.testing.do_bench(lambda: kernel.custom_kernel(*x), warmup=25, rep=200, return_mode="median")
        b2b = back_to_back(kernel.custom_kernel, sets)
        ours = statistics.median(runs)
        spread = (max(runs) - min(runs)) / ours
        ratios.append(ours / theirs)
        b2b_ratios.append(ours / b2b)
        spreads.append(spread)
        print(f"{case.label:<18}{k:>4}" + "".join(f"{r * 1e3:>10.1f}" for r in runs)
              + f"{spread:>8.3f}{theirs * 1e3:>10.1f}{ours / theirs:>10.3f}{b2b * 1e3:>11.1f}{ours / b2b:>7.3f}")
        del sets
        torch.cuda.empty_cache()
    print(f"median harness/do_bench {statistics.median(ratios):.3f}; within 5%: "
          f"{sum(abs(r - 1) <= 0.05 for r in ratios)} of {len(ratios)}; median harness/back-to-back "
          f"{statistics.median(b2b_ratios):.3f}; largest run-to-run spread {max(spreads):.3f}")
    print(f"\n{'case':<18}{'K':>4}{'window ms':>11}{'fixed ms':>10}{'calibrated':>15}{'hops':>8}"
          f"{'copies':>9}{'runner':>9}{'read':>8}")
    for index, case in enumerate(problem.benchmarks):
        row = verdicts[0].shapes[index]
        parts = row["parts_ms"]
        print(f"{case.label:<18}{row['calls_per_window']:>4}{row['window_ms']:>11.3f}{row['fixed_ms']:>10.3f}"
              f"{row['calibrated_ms']:>15.3f}{row['hops_ms']:>8.3f}{parts['copies']:>9.3f}"
              f"{parts['runner']:>9.3f}{parts['read']:>8.3f}")


if __name__ == "__main__":
    main()
