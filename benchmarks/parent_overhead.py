"""The run's own share of the lanes' idle time: a search whose lanes each take a fixed time per evaluation, so what
is left idle is the loop's (archiving verdicts, proposing, handing out work, the rounds beside the search), not the
card's. Prints a table.

    python benchmarks/parent_overhead.py [--problem problems/softmax] [--lanes 6 8] [--lane-seconds 3]
                                         [--candidates 60]

The seed is evaluated once for real on this machine (the interpreter without a GPU: about a minute); every lane's
evaluation then sleeps --lane-seconds and returns that verdict for its own file. The proposer is
benchmarks/throughput.py's (the seed with one line changed, at once), with the same search settings: no tuner,
no composites, no profiling. "ideal" is the lane time over the lanes: the wall per evaluation of a loop that costs
nothing.
"""
from __future__ import annotations

import argparse
import dataclasses
import sys
import tempfile
import threading
import time
from pathlib import Path

from evolve.archive import Archive
from evolve.config import ProfileConfig, RunConfig, SearchConfig
from evolve.harness import EvalOptions, evaluate, load_problem
from evolve.search import Search

sys.path.insert(0, str(Path(__file__).resolve().parent))
from throughput import Instant  # noqa: E402 - the proposer throughput.py measures with


def one_run(problem_dir: str, verdict, lanes: int, lane_s: float, candidates: int) -> tuple[float, float, int]:
    """Wall per evaluation and the lanes' idle share of one search; the evaluations it made."""
    spans, lock = [], threading.Lock()

    def sleeping(path, problem_path, options):
        began = time.monotonic()
        time.sleep(lane_s)
        with lock:
            spans.append(time.monotonic() - began)
        return dataclasses.replace(verdict, candidate=str(path))

    seed = load_problem(problem_dir).seed_files()[0].read_text()
    with tempfile.TemporaryDirectory() as tmp:
        config = RunConfig(problem_dir=problem_dir, db=f"{tmp}/a.db", max_candidates=candidates, seed=1,
                           search=SearchConfig(tune_share=0.0, compose_share=0.0, stagnation=10 ** 6),
                           eval=EvalOptions(device="cpu", prewarm=False), profile=ProfileConfig(top=0), retime_top=0,
                           gpus=tuple(str(i) for i in range(lanes)))  # one lane a named card: no card is used
        started = time.monotonic()
        Search(config, Archive(f"{tmp}/a.db"), Instant(seed), evaluate=sleeping).run()
        wall = time.monotonic() - started
    return wall / len(spans), 1 - sum(spans) / (wall * lanes), len(spans)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--problem", default="problems/softmax")
    parser.add_argument("--lanes", type=int, nargs="+", default=[6, 8])
    parser.add_argument("--lane-seconds", type=float, default=3.0)
    parser.add_argument("--candidates", type=int, default=60)
    args = parser.parse_args()
    problem = load_problem(args.problem)
    print(f"evaluating {problem.seed_files()[0].name} once for its verdict ...", flush=True)
    verdict = evaluate(problem.seed_files()[0], problem.path, EvalOptions())
    print("| lanes | lane seconds | evaluations | wall per evaluation | ideal | lanes idle |")
    print("| --- | --- | --- | --- | --- | --- |")
    for lanes in args.lanes:
        per, idle, n = one_run(args.problem, verdict, lanes, args.lane_seconds, args.candidates)
        print(f"| {lanes} | {args.lane_seconds:g} s | {n} | {per:.3f} s | {args.lane_seconds / lanes:.3f} s | "
              f"{idle:.0%} |", flush=True)


if __name__ == "__main__":
    main()
