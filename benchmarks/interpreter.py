"""Triton's CPU interpreter with and without evolve's one-time module listing (evolve/lang/triton/interpreter.py).

For each problem's seed, the seconds that one call of custom_kernel on every test case of the problem takes under
TRITON_INTERPRET=1 (what the CPU mode's run rung calls; its correctness rung calls each case once per seed), in a
fresh process per side, after one untimed call on the smallest case; best of --repeat. Prints a table with the ratio.

    python benchmarks/interpreter.py [--repeat 2] [--problem softmax ...]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

TIMER = r"""
import importlib.util, json, sys, time, torch
from evolve.harness import load_problem
from evolve.harness.shared.formats import reference_for

if sys.argv[1] == "fast":
    from evolve.lang.triton.interpreter import speed_up
    assert speed_up()
path, repeat = sys.argv[2], int(sys.argv[3])
problem = load_problem(sys.argv[4])
reference = reference_for(problem)
spec = importlib.util.spec_from_file_location("candidate", path)
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
size = lambda c: sum(t.numel() for t in reference.generate(c, 1, "cpu").leaves if isinstance(t, torch.Tensor))
cases = sorted(problem.tests, key=size)
module.custom_kernel(*reference.generate(cases[0], 1, "cpu").leaves)
inputs = [reference.generate(case, 2, "cpu") for case in cases]
best = float("inf")
for _ in range(repeat):
    started = time.perf_counter()
    for one in inputs:
        module.custom_kernel(*one.leaves)
    best = min(best, time.perf_counter() - started)
print(json.dumps({"cases": len(cases), "seconds": best}))
"""


def _time(side: str, seed: Path, problem: Path, repeat: int) -> dict:
    env = {**os.environ, "TRITON_INTERPRET": "1", "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", TIMER, side, str(seed), str(repeat), str(problem)],
                          capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise SystemExit(f"{seed}: {done.stderr.strip().splitlines()[-1] if done.stderr.strip() else 'failed'}")
    return json.loads(done.stdout.splitlines()[-1])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=2, help="timed calls per side (the best is kept)")
    parser.add_argument("--problem", action="append", help="a problem folder's name (default: every one)")
    args = parser.parse_args(argv)
    folders = sorted(p for p in (ROOT / "problems").iterdir() if (p / "seeds").is_dir())
    if args.problem:
        folders = [p for p in folders if p.name in args.problem]
    print(f"{'seed':34} {'cases':>5} {'Triton s':>9} {'evolve s':>9} {'ratio':>6}")
    for folder in folders:
        for seed in sorted((folder / "seeds").glob("*.py")):
            theirs = _time("triton", seed, folder, args.repeat)
            ours = _time("fast", seed, folder, args.repeat)
            ratio = theirs["seconds"] / ours["seconds"] if ours["seconds"] > 0 else float("inf")
            print(f"{folder.name + '/' + seed.stem:34} {theirs['cases']:5d} {theirs['seconds']:9.3f} "
                  f"{ours['seconds']:9.3f} {ratio:6.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
