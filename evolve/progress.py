"""Progress of a run for people: a live rich view on a terminal, one plain line per candidate otherwise."""
from __future__ import annotations

import sys
import time


def _score(c) -> str:
    if c is None or c.score is None:
        return "-"
    return f"fitness {c.fitness:.3f}" if c.fitness is not None else f"cpu score {c.score:.3g}"


def candidate_line(event: dict) -> str:
    c = event["candidate"]
    who = c.proposer + (f" {c.model}" if c.model else "") + (f" {c.template}" if c.template and c.proposer == "llm"
                                                              else "")
    if c.status == "invalid":
        return f"#{c.id:<5} {who}: invalid proposal: {c.error}"
    verdict = "ok" if c.ok else f"FAILED {c.failed_rung}: {c.reason}"
    best = event.get("best")
    best_text = f"  (best {_score(best)} #{best.id})" if best else ""
    took = "verdict kept from an earlier run here" if event.get("known") else f"{event.get('seconds', 0):.1f} s"
    return f"#{c.id:<5} {who} island {c.island}: {verdict}  {_score(c) if c.ok else ''}{best_text}  {took}"


class Progress:
    """Receives the search's events; draws a live table on a TTY, prints log lines elsewhere."""

    def __init__(self, config, archive, stream=None):
        self.config = config
        self.archive = archive
        self.stream = stream or sys.stdout
        self.tty = self.stream.isatty()
        self.started = time.monotonic()
        self.run_id = None
        self.counts = {"evaluated": 0, "correct": 0, "invalid": 0, "duplicate": 0}
        self.best = None
        self.recent: list[str] = []
        self.live = None

    def __enter__(self):
        if self.tty:
            from rich.console import Console
            from rich.live import Live

            self.live = Live(self._render(), console=Console(file=self.stream), refresh_per_second=2,
                             transient=False)
            self.live.__enter__()
        return self

    def __exit__(self, *exc):
        if self.live is not None:
            self.live.update(self._render())
            self.live.__exit__(*exc)
        return False

    def __call__(self, event: dict) -> None:
        kind = event["kind"]
        if kind == "start":
            self.run_id = event["run_id"]
        elif kind == "candidate":
            self.counts["evaluated"] += 1
            self.counts["correct"] += bool(event["candidate"].ok)
            self.best = event.get("best") or self.best
        elif kind in ("invalid", "duplicate"):
            self.counts[kind] += 1
        say = LINES.get(kind)
        line = say(event) if say else None
        if line is None:
            return
        if self.live is not None:
            self.recent = (self.recent + [line])[-8:]
            self.live.update(self._render())
        else:
            print(line, file=self.stream, flush=True)

    def _lineage(self) -> str:
        chain, c = [], self.best
        while c is not None and len(chain) < 6:
            chain.append(f"#{c.id}")
            c = self.archive.get(c.parent_ids[0]) if c.parent_ids else None
        return " <- ".join(chain)

    def _render(self):
        from rich.table import Table

        elapsed = time.monotonic() - self.started
        n = self.counts["evaluated"]
        table = Table.grid(padding=(0, 2))
        table.add_column(style="bold")
        table.add_column()
        rate = f"{self.counts['correct']}/{n} correct ({100 * self.counts['correct'] / n:.0f}%)" if n else "-"
        run = f"{self.run_id}  " if self.run_id is not None else ""  # none until the archive has given it one
        table.add_row("run", f"{run}{self.config.problem_dir}  archive {self.config.db}")
        table.add_row("candidates", f"{n} evaluated, {rate}, {self.counts['invalid']} invalid proposals, "
                                    f"{self.counts['duplicate']} duplicates skipped")
        table.add_row("best", f"{_score(self.best)}  {self._lineage()}" if self.best else "-")
        table.add_row("pace", f"{3600 * n / elapsed:.0f} candidates/hour" if elapsed > 1 and n else "-")
        spend = self.archive.spend(self.run_id)["cost"] if self.run_id else 0.0
        cap = f" of ${self.config.max_cost:g}" if self.config.max_cost else ""
        table.add_row("spend", f"${spend:.4f}{cap}")
        left = f"{max(0.0, self.config.budget_s - elapsed) / 60:.1f} min left" if self.config.budget_s else "no limit"
        table.add_row("time", f"{elapsed / 60:.1f} min elapsed, {left}")
        for line in self.recent:
            table.add_row("", line)
        return table


# -- one line per event kind (None: counted, not said) -------------------------------------------------------------
def _start(e) -> str:
    return (f"run {e['run_id']} {'resumed' if e['resumed'] else 'started'} ({e['members']} correct kernels already in "
            f"the archive)")


def _compose(e) -> str:
    plan, incumbent = e["plan"], e.get("incumbent")
    versus = f" against the best's {incumbent.score:.3g}" if incumbent and incumbent.score else ""
    return (f"composing {', '.join(f'#{p}' for p in plan.parts)}: predicted {plan.predicted:.3g}{versus}; "
            f"rule {plan.rule}")


def _context(e) -> str:
    skipped = f", {e['skipped']} files left out (too large or not text)" if e["skipped"] else ""
    return (f"context: {e['chunks']} passages from {e['files']} files in {', '.join(e['folders'])} indexed in "
            f"{e['seconds']:.1f} s{skipped}")


def _retime(e) -> str:
    figure = f"{e['figure']:.3f}" if e["figure"] is not None else f"failed ({e['reason']})"
    return f"  round {e['round']}: #{e['candidate_id']} {figure}"


def _lanes(e) -> str:
    where = ", ".join(e["lanes"])
    return (f"evaluating on {where} (each benchmark alone on its card)" if e.get("gpu", True) else
            f"evaluating on {where}: no GPU, so each candidate runs under the Triton interpreter and its score "
            f"ranks the interpreter's work, not GPU speed")


def _lane_fault(e) -> str:
    then = "queued again" if e["requeued"] else "left pending for --resume"
    return (f"lane {e['lane']} failed #{e['candidate']} for the harness's reasons ({e['reason']}); the candidate is "
            f"{then}; checking the card")


def _duel(e) -> str:
    c, inc = e["candidate"], e["incumbent"]
    return (f"#{c.id} ({_score(c)}) beats the best #{inc.id} ({_score(inc)}), which was timed on another card or "
            f"long ago: timing #{inc.id} again on {e['lane']} before the win counts")


def _duel_result(e) -> str:
    c, inc = e["candidate"], e["incumbent"]
    if e["figure"] is None:
        return (f"#{inc.id} timed again: no figure (its re-timing failed), which decides no duel; #{c.id} stays a "
                f"parent, not the best")
    return (f"#{inc.id} timed again: {e['figure']:.3f}; #{c.id}'s win " +
            ("holds" if e["holds"] else "does not hold (it stays a parent, not the best)"))


def _profile(e) -> str:
    c, r = e["candidate"], e["result"]
    return (f"profiled #{c.id} on {r.summary.get('case')} in {r.seconds:.1f} s: {r.summary.get('verdict')}"
            if r.ok else f"profiling #{c.id} failed after {r.seconds:.1f} s: {r.message}")


def _trace(e) -> str:
    c, r = e["candidate"], e["result"]
    if not r.ok:
        return f"tracing #{c.id} failed after {r.seconds:.1f} s: {r.message}"
    top = max(r.summary["sections"], key=lambda s: s["share"])
    return (f"traced #{c.id}'s sections on {r.summary.get('case')} in {r.seconds:.1f} s: {top['function']}/"
            f"{top['name']} takes {100 * top['share']:.0f}% of the marked time")


LINES = {
    "start": _start,
    "candidate": candidate_line,
    "invalid": candidate_line,
    "resume": lambda e: f"re-evaluating #{e['candidate'].id}, in flight when the last run stopped",
    "compose": _compose,
    "paused": lambda e: "paused (evolve pause): nothing new starts until `evolve resume`; calls in flight finish",
    "resumed": lambda e: f"resumed after {e['seconds'] / 60:.1f} min paused",
    "migrate": lambda e: f"migration: island sizes {e['islands']}",
    "context": _context,
    "retiming": lambda e: (f"re-timing {', '.join(f'#{i}' for i in e['ids'])} against each other, interleaved, "
                           f"{e['rounds']} rounds"),
    "retime": _retime,
    "lanes": _lanes,
    "lane_fault": _lane_fault,
    "lane_back": lambda e: f"lane {e['lane']} passed its check and takes work again",
    "lane_retired": lambda e: f"lane {e['lane']} retired: its card failed every check",
    "unevaluated": lambda e: f"#{e['candidate'].id} was not evaluated ({e['reason']}); --resume evaluates it",
    "duel": _duel,
    "duel_result": _duel_result,
    "context_off": lambda e: f"no searchable context for this run: {e['reason']}",
    "retime_off": lambda e: f"re-timing stopped: {e['reason']}",
    "profile_off": lambda e: f"profiling off for this run: {e['reason']}",
    # an audit that did not run is said once, in the run's summary
    "audit": lambda e: f"#{e['candidate'].id}: {e['audit'].line}" if e["audit"].ran else None,
    "profile": _profile,
    "trace": _trace,
    "trace_off": lambda e: f"tracing off for this run: {e['reason']}",
}
