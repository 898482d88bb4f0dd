"""Figures of one run from its archive: candidates per hour, correct rate, best against the best seed.

    python benchmarks/run_report.py runs/evolve.db [RUN_ID]
"""
import sys
from datetime import datetime

from evolve.archive import Archive


def main():
    archive = Archive(sys.argv[1])
    runs = archive.runs()
    run = next((r for r in runs if str(r["id"]) == sys.argv[2]), None) if len(sys.argv) > 2 else runs[-1]
    cands = [c for c in archive.candidates(run["id"]) if c.status == "evaluated"]
    start = datetime.fromisoformat(run["started"])
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
