"""What the embedded search (no model: the problem's own kernels, the tuner, the composer) gains over each problem's
seed in a fixed time. One `evolve run` per problem, each in a fresh archive; prints one table: seed fitness, best
fitness, the gain, the best's proposer and how many candidates it took, and the per-case best: for each benchmark case
the highest figure any kernel of the run reached there, their geometric mean, which is the most a shape-dispatch
composite of the run's kernels could score (where the gain is small and the per-case best is near the best, no kernel
the run evaluated is much faster than the best on any case).

    python benchmarks/search_gain.py [--minutes 5] [--device cuda] [--jobs N] [--keep DIR] [PROBLEM ...]

--jobs N runs N problems' searches at once (on one GPU they take turns on the card: evolve's card lock lets one
process's evaluations on a card at a time, so figures stay clean while each search gets a share of the card's
time); --keep DIR keeps each run's archive. Each problem's row is printed as soon as its run ends.

Default problems: softmax, rmsnorm, layernorm, cross_entropy, attention. On a machine without a GPU the figures are
interpreter scores (1 / ms), which rank kernels but mean nothing against the hardware.
"""
import argparse
import math
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from evolve.archive import Archive
from evolve.compose import case_value

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = ["softmax", "rmsnorm", "layernorm", "cross_entropy", "attention"]


def row_line(row: dict) -> str:
    if "error" in row:
        return f"{row['problem']:<14} failed: {' '.join(row['error'])}"
    seed, best = row["seed"], row["best"]
    gain = f"{best.score / seed.score - 1:+.1%}" if seed and best and seed.score else "-"
    return (f"{row['problem']:<14} {row['device'][:24]:<24} {figure(seed):>7} {figure(best):>7} {gain:>7}  "
            f"{(best.proposer if best else '-'):<10} {row['taken'] or '-':>5} {row['evaluated']:>4} "
            f"{number(row['per_case'], best):>9}  {row['stop']}")


HEADER = (f"{'problem':<14} {'device':<24} {'seed':>7} {'best':>7} {'gain':>7}  {'best by':<10} {'taken':>5} "
          f"{'of':>4} {'per-case':>9}  stop")


def per_case_best(archive: Archive, cands: list) -> float | None:
    """The geometric mean over benchmark cases of the highest figure any of `cands` reached on each (fraction of
    roofline on a GPU, 1 / interpreter ms on the CPU), over the cases every one of them was measured on."""
    best: dict = {}
    counts: dict = {}
    for cand in cands:
        verdict = archive.verdict(cand.id)
        if verdict is None or not verdict.ok:
            continue
        for row in verdict.shapes:
            value = case_value(row, verdict.mode == "gpu")
            if row.get("case") and value is not None:
                best[row["case"]] = max(best.get(row["case"], 0.0), value)
                counts[row["case"]] = counts.get(row["case"], 0) + 1
    cases = [label for label in best if counts[label] == max(counts.values())]
    return math.exp(sum(math.log(best[label]) for label in cases) / len(cases)) if cases else None


def one(problem: str, minutes: float, device: str | None, folder: Path) -> dict:
    db = folder / f"{problem}.db"
    command = [sys.executable, "-m", "evolve.cli", "run", str(ROOT / "problems" / problem), "--budget",
               f"{int(minutes * 60)}s", "--db", str(db)] + (["--device", device] if device else [])
    began = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True)
    seconds = time.monotonic() - began
    if not db.is_file():
        return {"problem": problem, "error": (done.stderr or done.stdout).strip().splitlines()[-1:]}
    archive = Archive(str(db))
    run = archive.runs()[-1]
    cands = [c for c in archive.candidates(run["id"]) if c.status == "evaluated"]
    seeds = [c for c in cands if c.proposer == "seed" and c.score is not None]
    best = archive.best(problem, run["id"])
    seed = max(seeds, key=lambda c: c.score) if seeds else None
    taken = next((i + 1 for i, c in enumerate(cands) if best is not None and c.id == best.id), None)
    return {"problem": problem, "device": run["device"], "seed": seed, "best": best, "taken": taken,
            "evaluated": len(cands), "seconds": seconds, "per_case": per_case_best(archive, cands),
            "stop": run["stop_reason"] if run["ended"] else
            f"the run did not end (exit code {done.returncode}): {(done.stderr or '').strip().splitlines()[-1:]}"}


def figure(cand) -> str:
    if cand is None:
        return "-"
    return f"{cand.fitness:.3f}" if cand.fitness is not None else f"{cand.score:.4g}*"


def number(value: float | None, like) -> str:
    """A figure in the unit of `like`'s (fitness, or a starred interpreter score)."""
    if value is None:
        return "-"
    return f"{value:.3f}" if like is not None and like.fitness is not None else f"{value:.4g}*"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("problems", nargs="*", default=DEFAULT)
    parser.add_argument("--minutes", type=float, default=5.0, help="each run's budget [default: 5]")
    parser.add_argument("--device", default=None, help="cuda or cpu [default: evolve run's own choice]")
    parser.add_argument("--jobs", type=int, default=1, help="problems searched at once [default: 1]")
    parser.add_argument("--keep", type=Path, default=None, help="keep each run's archive (PROBLEM.db) in this folder")
    args = parser.parse_args()
    from concurrent.futures import ThreadPoolExecutor

    with tempfile.TemporaryDirectory(prefix="evolve-gain-") as scratch:
        folder = args.keep or Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        print(HEADER, flush=True)
        with ThreadPoolExecutor(max(1, args.jobs)) as pool:
            futures = [pool.submit(one, problem, args.minutes, args.device, folder) for problem in args.problems]
            for future in futures:
                print(row_line(future.result()), flush=True)
    print(f"(* interpreter score, 1 / ms: no GPU; taken: the best's place among the run's evaluated candidates; "
          f"{args.jobs} search{'es' if args.jobs != 1 else ''} at once)")


if __name__ == "__main__":
    main()
