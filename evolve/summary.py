"""What a run reports when it stops: its counts, its best (standing.py) with the best's launch audit, the seed's
best beside it, the end-of-run re-timing and what the run spent."""
from __future__ import annotations

from dataclasses import dataclass

from .archive import Archive, Candidate
from .retime import overtaken


@dataclass(frozen=True)
class Summary:
    run_id: int
    stop_reason: str
    evaluated: int
    correct: int
    best: Candidate | None
    seed_best: Candidate | None
    cost: float
    seconds: float
    db: str
    near_tie: Candidate | None = None  # measured above `best`, but by less than the timing noise
    interrupted: bool = False  # stopped by Ctrl-C or SIGTERM (the command exits 130 or 143)
    retimed: tuple = ()  # retime.Retimed: the best few re-timed against each other at the end (GPU runs)
    promoted: int | None = None  # `best`, where it re-timed above the best the search held (retime.overtaken)
    session_evaluated: int | None = None  # evaluated by this process, where the run was resumed (seconds count these)
    audit: object = None  # launch_audit.Audit of `best`: passed, or not run and why
    audit_failed: tuple = ()  # (Candidate, Audit): better candidates that failed the launch audit, left out


def summarize(archive: Archive, run_id: int, stop: str, reported: tuple, rounds, device: str,
              seconds: float) -> Summary:
    """reported: (best, near tie) as standing.run_best says; rounds: the run's rounds.Rounds (audit, re-timing)."""
    from .launch_audit import recorded

    everything = archive.candidates(run_id)
    seeds = [(c.score, c) for c in everything if c.proposer == "seed" and c.score is not None]
    best, near_tie = reported
    picked = rounds.audited
    if picked is not None and (picked.best is None or best is None or picked.best.id == best.id):
        best, audit, failed = picked.best, picked.audit, picked.failed
    else:  # not audited in this session (interrupted): what the archive knows
        audit, failed = (recorded(archive, best, device) if best is not None else None), ()
    if best is None or near_tie is not None and near_tie.id == best.id:
        near_tie = None
    promoted = overtaken(rounds.retimed)  # the re-timing's choice, unless the launch audit turned it down
    return Summary(
        run_id=run_id, stop_reason=stop, evaluated=sum(c.status == "evaluated" for c in everything),
        correct=sum(bool(c.ok) for c in everything), best=best,
        seed_best=max(seeds, key=lambda pair: pair[0])[1] if seeds else None,
        cost=archive.spend(run_id)["cost"], seconds=seconds, db=str(archive.path), near_tie=near_tie,
        retimed=tuple(rounds.retimed), audit=audit, audit_failed=failed,
        promoted=promoted if best is not None and best.id == promoted else None,
    )
