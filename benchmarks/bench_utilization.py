"""`evolve bench` of two scripted models over two problems, with the GPU's utilization sampled. Prints a table.

    python benchmarks/bench_utilization.py [--budget-per-cell 60s] [--problem problems/softmax --problem ...]
                                           [--minutes M] [-- ARGS]

Both models are served by the local scripted OpenAI-compatible server (tests/llm_server.py, real HTTP through
litellm): each answer is the asked problem's seed with one module-level line changed (`_VARIANT = n`), so every
proposal is new, compiles and measures like the seed, and the models cost nothing to wait for. What is measured is
the harness and the search around them: the bench's wall time, candidates per proposer, and the card's utilization
from the driver (`nvidia-smi --query-gpu=utilization.gpu` every 200 ms: the mean, and the share of samples above 0%).
Arguments after `--` go to `evolve bench` as they are (`--per-gpu 1`, say, for a before/after).
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from llm_server import ScriptedLLM  # noqa: E402

MODELS = ("openai/gpt-4o-mini", "openai/gpt-4o")  # names litellm knows; the scripted server answers both


class SeedVariants(ScriptedLLM):
    """Answers every chat request with a new variant of the seed of the problem its prompt names."""

    def __init__(self, seeds: dict[str, str]):
        super().__init__()
        self.seeds, self.count = seeds, itertools.count(1)

    def _next(self, body, headers):
        with self._lock:
            self.requests.append(body)
        text = json.dumps(body.get("messages", [])).lower()
        name = next((n for n in self.seeds if n in text), next(iter(self.seeds)))
        return f"```python\n{self.seeds[name]}\n_VARIANT = {next(self.count)}\n```"


def sample(samples: list, stop: threading.Event) -> None:
    while not stop.is_set() and shutil.which("nvidia-smi"):
        out = subprocess.run(["nvidia-smi", "--query-gpu=utilization.gpu", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True).stdout.split()
        samples.extend(float(v) for v in out[:1])
        time.sleep(0.2)


def _wait(bench: subprocess.Popen, seconds: float | None) -> bool:
    """Wait for the bench; past `seconds`, or on Ctrl-C or SIGTERM, stop it as Ctrl-C would. Whether it was stopped."""
    try:
        bench.wait(timeout=seconds)
        return False
    except (subprocess.TimeoutExpired, KeyboardInterrupt):
        bench.send_signal(signal.SIGINT)  # evolve bench archives what it has and ends
        try:
            bench.wait(timeout=120)
        except subprocess.TimeoutExpired:
            bench.kill()
            bench.wait()
        return True


def main():
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # `timeout` stops it as Ctrl-C would: a table
    argv = sys.argv[1:]
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget-per-cell", default="60s")
    parser.add_argument("--problem", action="append", default=None)
    parser.add_argument("--minutes", type=float, default=None,
                        help="stop the bench (as Ctrl-C would) after this long and print what ran; SIGTERM too")
    args = parser.parse_args(argv[: argv.index("--")] if "--" in argv else argv)
    problems = args.problem or [str(ROOT / "problems" / "softmax"), str(ROOT / "problems" / "rmsnorm")]
    seeds = {Path(p).name: sorted((Path(p) / "seeds").glob("*.py"))[0].read_text() for p in problems}
    samples, stop = [], threading.Event()
    with SeedVariants(seeds) as llm, tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "bench.db"
        cmd = [sys.executable, "-m", "evolve.cli", "bench", *[a for m in MODELS for a in ("--model", m)],
               *[a for p in problems for a in ("--problem", p)], "--budget-per-cell", args.budget_per_cell,
               "--api-base", llm.url, "--db", str(db), *extra]
        threading.Thread(target=sample, args=(samples, stop), daemon=True).start()
        started = time.monotonic()
        with tempfile.TemporaryFile("w+") as err:
            bench = subprocess.Popen(cmd, env=dict(os.environ, OPENAI_API_KEY="scripted"), stdout=subprocess.DEVNULL,
                                     stderr=err, text=True)
            interrupted = _wait(bench, args.minutes * 60 if args.minutes else None)
            err.seek(0)
            said = err.read()
        wall = time.monotonic() - started
        stop.set()
        with sqlite3.connect(db) as c:
            made = dict(c.execute("SELECT proposer, count(*) FROM candidates GROUP BY proposer").fetchall())
    if bench.returncode != 0 and not interrupted:
        print(said[-3000:])
    print(f"bench: {len(MODELS)} scripted models x {len(problems)} problems, --budget-per-cell "
          f"{args.budget_per_cell} {' '.join(extra)}, {time.strftime('%Y-%m-%d')}"
          f"{', interrupted (the table covers what ran)' if interrupted else ''}")
    print("| wall | exit | model calls | candidates by proposer | GPU util mean | samples above 0% |")
    print("| --- | --- | --- | --- | --- | --- |")
    util = f"{sum(samples) / len(samples):.1f}%" if samples else "-"
    busy = f"{sum(s > 0 for s in samples) / len(samples):.0%} of {len(samples)}" if samples else "- (no nvidia-smi)"
    print(f"| {wall:.0f} s | {bench.returncode} | {len(llm.requests)} | "
          f"{', '.join(f'{k} {v}' for k, v in sorted(made.items()))} | {util} | {busy} |")


if __name__ == "__main__":
    main()
