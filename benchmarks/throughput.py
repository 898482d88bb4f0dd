"""Search throughput: full evaluations per GPU-hour with a proposer that answers instantly, where the time goes, and
how busy the GPU was. Prints a table.

    python benchmarks/throughput.py [--problem problems/softmax] [--candidates 30] [--device auto]

The proposer returns the problem's seed with one module-level line changed per proposal (`_VARIANT = n`), so every
proposal is new to the archive (nothing is deduplicated away) and compiles and measures like the seed; no knob tuner
and no composites. Time per evaluation is split by rung from the verdicts: compile (load and compile), correctness
(run and correctness), timing (benchmark), and the rest of the evaluation (process start-up waits, inputs, teardown);
"outside" is the loop's own time between evaluations. The GPU's busy fraction is read from the driver (`nvidia-smi
--query-gpu=utilization.gpu` every 200 ms): the share of samples above 0%, and their mean. The seed's fitness is
reported from the first candidate (the seed itself), so before/after figures can be compared with the same script.
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from evolve.archive import Archive
from evolve.config import ProfileConfig, RunConfig, SearchConfig
from evolve.harness import EvalOptions, evaluate, load_problem
from evolve.proposer import Proposal
from evolve.search import Search

ROOT = Path(__file__).resolve().parents[1]


class Instant:
    """Answers at once with the seed and one changed module-level line."""

    concurrency = 1

    def __init__(self, seed_source: str):
        self.seed, self.n = seed_source, 0

    def propose(self, template, context, parent_source=None, toolbox=None) -> Proposal:
        self.n += 1
        source = self.seed.rstrip("\n") + f"\n\n_VARIANT = {self.n}\n"
        return Proposal(source, None, template, "instant", "", "", 0, 0, 0.0, 0.0, 1)


class GpuSampler:
    def __init__(self, period_ms: int = 200):
        self.samples: list[float] = []
        self.proc = None
        if shutil.which("nvidia-smi"):
            self.proc = subprocess.Popen(["nvidia-smi", "--query-gpu=utilization.gpu", "--format=csv,noheader,nounits",
                                          "-i", "0", "-lms", str(period_ms)], stdout=subprocess.PIPE, text=True)
            threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            try:
                self.samples.append(float(line.strip()))
            except ValueError:
                pass

    def stop(self):
        if self.proc:
            self.proc.terminate()
            self.proc.wait()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--problem", default=str(ROOT / "problems" / "softmax"))
    parser.add_argument("--candidates", type=int, default=30)
    parser.add_argument("--device", default="auto", choices=["auto", "cuda", "cpu"])
    args = parser.parse_args()
    problem = load_problem(args.problem)
    seed = problem.seed_files()[0].read_text()
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "throughput.db"
        config = RunConfig(problem_dir=args.problem, db=str(db), max_candidates=args.candidates, seed=1,
                           search=SearchConfig(tune_share=0.0, compose_share=0.0, stagnation=10 ** 6),
                           eval=EvalOptions(device=args.device, prewarm=True), profile=ProfileConfig(top=0))
        archive = Archive(db)
        sampler = GpuSampler()
        started = time.monotonic()
        walls: dict[str, float] = {}

        def timed(path, problem_path, options):  # the harness, with each evaluation's wall time noted
            began = time.monotonic()
            verdict = evaluate(path, problem_path, options)
            walls[Path(path).name] = time.monotonic() - began
            return verdict

        summary = Search(config, archive, Instant(seed), evaluate=timed).run()
        wall = time.monotonic() - started
        sampler.stop()
        cands = [c for c in archive.candidates(summary.run_id) if c.status == "evaluated"]
        split = {"compile": [], "correctness": [], "timing": [], "rest of evaluation": []}
        eval_wall = []
        for c in cands:
            verdict = archive.verdict(c.id)
            rungs = {r.name: r.seconds for r in verdict.rungs}
            seconds = walls.get(f"candidate_{c.id}.py", 0.0)
            eval_wall.append(seconds)
            parts = {"compile": rungs.get("load", 0) + rungs.get("compile", 0),
                     "correctness": rungs.get("run", 0) + rungs.get("correctness", 0),
                     "timing": rungs.get("benchmark", 0)}
            parts["rest of evaluation"] = max(0.0, seconds - sum(parts.values()))
            for k, v in parts.items():
                split[k].append(v)
        seed_fitness = cands[0].fitness if cands else None
        device = archive.run(summary.run_id)["device"]
        archive.close()
    n = len(cands)
    print(f"throughput: {problem.name}, {n} candidates on {device}, instant proposer, {time.strftime('%Y-%m-%d')}")
    print(f"| wall | evaluations per GPU-hour | per evaluation | {' | '.join(split)} | outside | GPU busy | GPU util mean "
          f"| seed fitness |")
    print("| --- " * (7 + len(split)) + "|")
    per = wall / n if n else float("nan")
    outside = (wall - sum(eval_wall)) / n if n else float("nan")
    busy = (sum(s > 0 for s in sampler.samples) / len(sampler.samples)) if sampler.samples else None
    util = statistics.mean(sampler.samples) if sampler.samples else None
    cells = [f"{statistics.mean(v):.2f} s" if v else "-" for v in split.values()]
    print(f"| {wall:.0f} s | {3600 / per:.0f} | {per:.2f} s | {' | '.join(cells)} | {outside:.2f} s | "
          f"{'-' if busy is None else f'{busy:.0%}'} | {'-' if util is None else f'{util:.0f}%'} | "
          f"{'-' if seed_fitness is None else f'{seed_fitness:.3f}'} |")


if __name__ == "__main__":
    main()
