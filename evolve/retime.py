"""The top candidates of a run re-timed against each other, interleaved, on one device, back to back.

A run's fitness figures were measured minutes or hours apart, each candidate once. At the end of a run on a GPU (and
with `evolve retime`), the best `top` correct candidates go up the whole ladder again `rounds` times, interleaved
(round 1: A B C, round 2: B C A, round 3: C A B, so no candidate always goes first after a quiet spell), and the
spread of each one's figures is reported with the order they give, against the first: at the end of a run, the best
it held (the others are the highest figures). Nothing here changes a candidate's own verdict or fitness: the
re-timings are kept apart (table `retimes`). At the end of a run, one whose every re-timed figure is above every
one of the held best's (`overtaken`) is the best the run reports: two kernels measured once each, minutes apart, can
be held as a tie that back-to-back rounds separate.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Retimed:
    candidate_id: int
    searched: float | None  # the figure the search measured
    figures: list = field(default_factory=list)  # per round: the re-measured figure, None when the ladder failed

    @property
    def measured(self) -> list[float]:
        return [f for f in self.figures if f is not None]

    @property
    def median(self) -> float | None:
        return statistics.median(self.measured) if self.measured else None

    @property
    def spread(self) -> float | None:
        """(max - min) / median of the re-measured figures."""
        m = self.measured
        return (max(m) - min(m)) / statistics.median(m) if len(m) > 1 and statistics.median(m) > 0 else None


def order(ids: list[int], rounds: int) -> list[tuple[int, int]]:
    """(round, candidate) in the order they are measured: each round starts one candidate later."""
    out = []
    for r in range(rounds):
        k = r % len(ids) if ids else 0
        out += [(r + 1, i) for i in ids[k:] + ids[:k]]
    return out


def retime(archive, run_id: int, candidates, evaluate, problem_path, options, work: Path, rounds: int,
           figure, on_event=lambda event: None) -> list[Retimed]:
    """Re-evaluate `candidates` (archive Candidates, best first) `rounds` times, interleaved; store each verdict's
    figures in `retimes`; `figure(verdict)` is the number compared (search.score_of: fitness on a GPU)."""
    results = {c.id: Retimed(c.id, c.fitness if c.fitness is not None else c.score) for c in candidates}
    sources = {c.id: c.source for c in candidates}
    for number, cid in order([c.id for c in candidates], rounds):
        path = work / f"retime_{cid}_{number}.py"
        path.write_text(sources[cid])
        verdict = evaluate(path, problem_path, options)
        value = figure(verdict) if verdict.ok else None
        results[cid].figures.append(value)
        archive.retimes.store(run_id, cid, number, verdict, value)
        failed = None if verdict.ok else verdict.failure
        reason = None if verdict.ok else (f"{failed.name}: {failed.reason}" if failed else "no verdict")[:200]
        on_event({"kind": "retime", "candidate_id": cid, "round": number, "figure": value, "reason": reason})
    return [results[c.id] for c in candidates]


def overtaken(results: list[Retimed]) -> int | None:
    """The candidate that re-timed above the first (the held best) in every round against every one of its figures,
    the highest median of those; None where none did, or where either has fewer than two figures (a failed round
    counts against it)."""
    def complete(r: Retimed) -> bool:
        return len(r.figures) >= 2 and None not in r.figures

    if not results or not complete(results[0]):
        return None
    ceiling = max(results[0].measured)
    above = [r for r in results[1:] if complete(r) and min(r.measured) > ceiling]
    return max(above, key=lambda r: r.median).candidate_id if above else None


def report(results: list[Retimed], rounds: int, label: str, promoted: int | None = None) -> list[str]:
    """The lines `evolve run` and `evolve retime` print; `promoted`: the candidate the run reports instead of the
    first, as `overtaken` chose it."""
    if not results:
        return []
    lines = [f"re-timed against each other, interleaved ({rounds} round{'s' if rounds != 1 else ''}, one device, "
             f"back to back; {label}):"]
    for r in results:
        figures = " ".join(f"{f:.3f}" if f is not None else "failed" for f in r.figures)
        searched = f"{r.searched:.3f}" if r.searched is not None else "-"
        median = f"median {r.median:.3f}" if r.median is not None else "no figure"
        spread = f", spread {r.spread:.1%}" if r.spread is not None else ""
        lines.append(f"  #{r.candidate_id:<5} {searched} in the search; now {figures}: {median}{spread}")
    ranked = sorted((r for r in results if r.median is not None), key=lambda r: -r.median)
    if ranked:
        first, held = ranked[0], results[0]
        text = " > ".join(f"#{r.candidate_id}" for r in ranked)
        if first.candidate_id == held.candidate_id:
            lines.append(f"  re-timed order {text}: the search's best holds")
        else:
            gap = (first.median - (held.median or 0)) / first.median if held.median else None
            noise = max((r.spread or 0) for r in (first, held))
            within = gap is not None and gap <= noise
            lines.append(f"  re-timed order {text}: #{first.candidate_id} re-times above the search's best "
                         f"#{held.candidate_id}" + (f" by {gap:.1%}, " + ("inside" if within else "outside")
                                                    + " their spread" if gap is not None else "")
                         + (f"; #{promoted} is the run's best: every one of its figures is above every one of "
                            f"#{held.candidate_id}'s" if promoted is not None else ""))
    return lines
