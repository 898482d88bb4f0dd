"""One definition of standing: which kernel a run reports as its best, which of a problem's kernels `evolve best`
exports, and which of a run's kernels a leaderboard row is judged on. Every reader (the run's summary, `evolve best`,
the leaderboard, `evolve bench`, the MCP server, the Python API) asks here.

The rule: the highest score among correct kernels that never failed a launch audit, unless the run held another as
its best (one measured within the timing noise of it, or re-timed above it in every round at the end of the run).
The run's choice is persisted as `runs.best_id` when it stops; readers after the run take it from there.
"""
from __future__ import annotations

from .archive import Archive, Candidate
from .population import Population
from .retime import overtaken


def run_best(archive: Archive, population: Population, problem: str, run_id: int) -> \
        tuple[Candidate | None, Candidate | None]:
    """(best, near tie) of a run in progress: the highest measured score may beat the population's best only
    within the noise; then the population's best is reported and the other is its near tie."""
    top = archive.best(problem, run_id)
    held = population.best
    if held is not None and held.id in archive.launch_audits.failed():
        held = None
    if top is not None and held is not None and held.run_id == run_id and held.id != top.id \
            and not population.better(top, held):
        return held, top
    return top, None


def promote_retimed(population: Population, ranked: list[Candidate], results: list) -> None:
    """The end-of-run re-timing's choice: one that beat the held best in every round, back to back, is the best."""
    winner = overtaken(results)
    if winner is not None:
        population.best = next(c for c in ranked if c.id == winner)


def problem_best(archive: Archive, problem: str) -> tuple[Candidate | None, Candidate | None]:
    """(the problem's best, the highest score where that is another): the highest score across the archive, unless
    the run of that kernel reported another as its best when it stopped, correct and never failing a launch audit:
    then that one."""
    top = archive.best(problem)
    if top is None:
        return None, None
    chosen = archive.run(top.run_id).get("best_id")
    if chosen is None or chosen == top.id or chosen in archive.launch_audits.failed():
        return top, None
    held = archive.get(chosen)
    return (held, top) if held.ok else (top, None)


def run_leader(candidates: list[dict], best_id: int | None, value) -> dict | None:
    """The kernel a run is judged on, from its timeline rows (Archive.timeline): the one it reported (best_id) where
    that is correct and passed or was never put to a launch audit, else the highest `value(row)`."""
    usable = [c for c in candidates if c["ok"] and c.get("audit") != "failed" and value(c) is not None]
    reported = next((c for c in usable if c["id"] == best_id), None)
    if reported is not None:
        return reported
    return max(usable, key=lambda c: (value(c), -c["id"]), default=None)
