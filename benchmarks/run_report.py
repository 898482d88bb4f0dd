"""Figures of one run from its archive: candidates per hour, correct rate, best against the best seed.

    python benchmarks/run_report.py runs/evolve.db [RUN_ID]
"""
import argparse
from datetime import datetime
from pathlib import Path

from evolve.archive import Archive


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("archive", help="the run's SQLite archive, e.g. runs/evolve.db")
    parser.add_argument("run_id", nargs="?", help="which run (default: the latest)")
    args = parser.parse_args()
    if not Path(args.archive).is_file():
        raise SystemExit(f"{args.archive}: no such archive")
    archive = Archive(args.archive)
    runs = archive.runs()
    if not runs:
        raise SystemExit(f"{args.archive}: no runs in this archive")
    run = next((r for r in runs if str(r["id"]) == args.run_id), None) if args.run_id else runs[-1]
    if run is None:
        raise SystemExit(f"{args.archive}: no run {args.run_id}; runs: {', '.join(str(r['id']) for r in runs)}")
    cands = [c for c in archive.candidates(run["id"]) if c.status == "evaluated"]
    start = datetime.fromisoformat(run["started"])
    if not cands:
        raise SystemExit(f"run {run['id']}: no candidate evaluated yet")
    end = datetime.fromisoformat(run["ended"]) if run.get("ended") else datetime.fromisoformat(cands[-1].created)
    hours = max((end - start).total_seconds(), 1e-9) / 3600
    seeds = [c for c in cands if c.proposer == "seed" and c.score is not None]
    best = archive.best(run["problem"], run["id"])
    print(f"run {run['id']} {run['problem']} on {run['device']}: stopped: {run['stop_reason']}")
    print(f"{len(cands)} evaluated in {hours * 60:.1f} min = {len(cands) / hours:.0f} candidates/hour; "
          f"{sum(bool(c.ok) for c in cands)} correct")
    for label, c in (("best seed", max(seeds, key=lambda c: c.score) if seeds else None), ("best", best)):
        if c is not None:
            kind = f"fitness {c.fitness:.4f}" if c.fitness is not None else f"cpu score {c.score:.4g}"
            print(f"{label:<10} #{c.id:<4} {c.proposer:<6} {kind}  knobs {c.knobs}")
    for c in cands:
        print(f"  #{c.id:<4} {c.proposer:<6} {'ok' if c.ok else 'FAILED ' + str(c.failed_rung):<10} "
              f"{c.score if c.score is not None else '-'}  {c.knobs}")


if __name__ == "__main__":
    main()
