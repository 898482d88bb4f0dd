"""`evolve leaderboard --html DIR`: the leaderboard as a static site that opens from disk.

Templates (jinja2) and assets live in the top-level `leaderboard/` folder (installed as `evolve/leaderboard_site`);
users may edit them. The site is plain files: an index, one page per run (progress curves and evolution tree as
inline SVG), one per best kernel (source and rung ladder). No server, no network: no CDN scripts, fonts or images;
the one script sorts tables. The SVG is drawn here rather than with a plotting library: the pictures are a few step
lines and a tree, a library such as matplotlib would add tens of megabytes to the install for them, and hand-made SVG
keeps classes and `<title>` tooltips a test (and a reader's browser) can query.
"""
from __future__ import annotations

import html
import shutil
from pathlib import Path

import jinja2

from . import __version__
from .config import format_duration
from .diversity import Cell, run_elites
from .leaderboard import EMBEDDED, Board, Run

TEMPLATES = Path(__file__).resolve().parent.parent / "leaderboard"


def templates_dir() -> Path:
    """The checkout's leaderboard/ folder, else the installed copy."""
    if (TEMPLATES / "index.html.j2").exists():
        return TEMPLATES
    return Path(__file__).resolve().parent / "leaderboard_site"


def _num(v, fmt="{:.3f}"):
    return "-" if v is None else fmt.format(v)


def _pct(v):
    return "-" if v is None else f"{100 * v:.0f}%"


def _speed(v):
    return "-" if v is None else f"{v:.2f}x"


def _money(v):
    return "-" if v is None else f"{v:.4f}"


def _ver(versions, name):
    return (versions or {}).get(name) or "?"


# --- pictures ---------------------------------------------------------------------------------------------------

def curve_svg(points: list[tuple[float, float]], xlabel: str, ylabel: str, kind: str, width: int = 380,
              height: int = 230) -> str:
    """A step line of the best value so far; axes labelled with their ranges."""
    left, right, top, bottom = 52, 12, 14, 38
    w, h = width - left - right, height - top - bottom
    head = (f'<svg class="curve" data-x="{kind}" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
            f'xmlns="http://www.w3.org/2000/svg" role="img"><title>best {html.escape(ylabel)} against '
            f'{html.escape(xlabel)}</title>')
    axes = (f'<line class="axis" x1="{left}" y1="{top + h}" x2="{left + w}" y2="{top + h}"/>'
            f'<line class="axis" x1="{left}" y1="{top}" x2="{left}" y2="{top + h}"/>'
            f'<text x="{left + w / 2}" y="{height - 6}" text-anchor="middle">{html.escape(xlabel)}</text>')
    if not points:
        return head + axes + f'<text x="{left + 10}" y="{top + h / 2}">no correct kernel yet</text></svg>'
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    x0, x1 = min(xs), max(xs)
    y0, y1 = min(ys), max(ys)
    if y1 == y0:
        y0, y1 = y0 * 0.95, y1 * 1.05 if y1 else 1.0
    if x1 == x0:
        x1 = x0 + 1

    def sx(x):
        return left + (x - x0) / (x1 - x0) * w

    def sy(y):
        return top + h - (y - y0) / (y1 - y0) * h

    coords, last = [], None
    for x, y in points:
        if last is not None:
            coords.append(f"{sx(x):.1f},{sy(last):.1f}")
        coords.append(f"{sx(x):.1f},{sy(y):.1f}")
        last = y
    labels = (f'<text x="{left - 4}" y="{top + 10}" text-anchor="end">{y1:.3g}</text>'
              f'<text x="{left - 4}" y="{top + h}" text-anchor="end">{y0:.3g}</text>'
              f'<text x="{left}" y="{top + h + 14}">{x0:.3g}</text>'
              f'<text x="{left + w}" y="{top + h + 14}" text-anchor="end">{x1:.3g}</text>'
              f'<text x="{left + 4}" y="{top + 10}">{html.escape(ylabel)}</text>')
    return head + axes + labels + f'<polyline points="{" ".join(coords)}"/></svg>'


def curves(run: Run, gpu: bool) -> list[str]:
    progress = [p for p in run.progress() if p["best"] is not None]
    label = "fraction of roofline" if gpu else "CPU score"
    out = [curve_svg([(p["candidates"], p["best"]) for p in progress], "candidates evaluated", label, "candidates")]
    if any(p["dollars"] for p in progress):
        out.append(curve_svg([(p["dollars"], p["best"]) for p in progress], "dollars", label, "dollars"))
    else:
        why = "none spent: no model" if run.model == EMBEDDED else "none spent"
        out.append(curve_svg([(p["dollars"], p["best"]) for p in progress], f"dollars ({why})", label, "dollars"))
    out.append(curve_svg([(p["seconds"] / 60, p["best"]) for p in progress if p["seconds"] is not None],
                         "minutes", label, "minutes"))
    return out


def _shade(t: float) -> str:
    """Light blue (low) to dark blue (high)."""
    low, high = (219, 234, 254), (30, 58, 138)
    return "#" + "".join(f"{round(a + (b - a) * t):02x}" for a, b in zip(low, high))


def tree_svg(candidates: list[dict]) -> str:
    """Each candidate a node, columns by generation, an edge from each parent; fill by fitness, failures red."""
    columns: dict[int, list[dict]] = {}
    for c in candidates:
        columns.setdefault(int(c["generation"] or 0), []).append(c)
    pos = {}
    for gen in sorted(columns):
        for row, c in enumerate(columns[gen]):
            pos[c["id"]] = (30 + 70 * gen, 18 + 20 * row)
    width = max((x for x, _ in pos.values()), default=30) + 60
    height = max((y for _, y in pos.values()), default=18) + 24
    values = [(c["fitness"] if c["fitness"] is not None else c["score"]) for c in candidates if c["ok"]]
    lo, hi = (min(values), max(values)) if values else (0.0, 1.0)
    parts = [f'<svg class="tree" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
             f'xmlns="http://www.w3.org/2000/svg" role="img"><title>evolution tree</title>']
    for c in candidates:
        for p in c["parent_ids"]:
            if p in pos:
                (x1, y1), (x2, y2) = pos[p], pos[c["id"]]
                parts.append(f'<line class="edge" x1="{x1}" y1="{y1}" x2="{x2}" y2="{y2}"/>')
    for c in candidates:
        x, y = pos[c["id"]]
        value = c["fitness"] if c["fitness"] is not None else c["score"]
        if c["status"] == "invalid":
            cls, fill, what = "invalid", "", "invalid proposal"
        elif c["ok"]:
            t = (value - lo) / (hi - lo) if hi > lo else 1.0
            cls, fill, what = "ok", f' fill="{_shade(t)}"', f"ok, {value:.3g}"
        elif c["status"] == "evaluated":
            cls, fill, what = "failed", "", f"failed {c['failed_rung']}: {(c['reason'] or '')[:160]}"
        else:
            cls, fill, what = "pending", ' fill="#fff"', "not evaluated"
        if c["proposer"] == "composer":
            cls += " composite"
        tip = html.escape(f"#{c['id']} {c['proposer']}{' ' + c['model'] if c['model'] else ''}: {what}")
        parts.append(f'<circle class="node {cls}" data-id="{c["id"]}" cx="{x}" cy="{y}" r="7"{fill}>'
                     f'<title>{tip}</title></circle>')
        parts.append(f'<text x="{x + 9}" y="{y + 4}">{c["id"]}</text>')
    parts.append("</svg>")
    return "".join(parts)


def diversity_grid(archive, run_id: int) -> dict:
    """The run's diversity archive (diversity.py) as the run page draws it: a row per structure family, a column per
    tile and registers bucket, each occupied cell its elite's id and figure."""
    best = run_elites(archive, run_id)
    families = sorted({cell.family for cell in best})
    columns = sorted({(cell.tile, cell.regs) for cell in best})
    table = {(cell.family, (cell.tile, cell.regs)): {"id": c.id, "value": c.fitness if c.fitness is not None
                                                     else c.score} for cell, c in best.items()}
    return {"families": families, "cells": len(best),
            "columns": [{"key": key, "label": Cell("", *key).column} for key in columns],
            "rows": [{"family": f, "cells": [table.get((f, key)) for key in columns]} for f in families]}


# --- the site ---------------------------------------------------------------------------------------------------

def write_site(board: Board, out: Path, sources) -> Path:
    """Write index.html, run-*.html, kernel-*.html and static/ under `out`; returns index.html's path."""
    from .archive import Archive
    from .harness.parent.verdict import Verdict
    from .render import ladder_lines, shape_table

    folder = templates_dir()
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(folder)), autoescape=True,
                             undefined=jinja2.StrictUndefined)
    env.globals.update(ver=_ver, num=_num, pct=_pct, speed=_speed, money=_money, secs=format_duration,
                       fast_p=["0", "1", "1.5", "2"], generated=board.generated, evolve_version=__version__, root="",
                       sources=[Path(s).name for s in sources])
    out.mkdir(parents=True, exist_ok=True)
    shutil.copytree(folder / "static", out / "static", dirs_exist_ok=True)
    runs_by_key = {r.key: r for r in board.runs}
    archives = {str(s): Archive(s, read_only=True) for s in sources}
    try:
        devices = []
        for name in sorted({r.device for r in board.rows}):
            rows = [r for r in board.rows if r.device == name]
            for r in rows:
                if r.best_candidate:
                    r.kernel_page = f"kernel-{r.best_candidate['archive']}-{r.best_candidate['id']}.html"
            runs = [runs_by_key[k] for r in rows for k in r.runs]
            newest = max(runs, key=lambda x: x.started or "")
            devices.append({"name": name, "rows": rows, "summaries": [s for s in board.summaries if s.device == name],
                            "versions": newest.versions, "first": min(x.started for x in runs)[:10],
                            "last": max(x.started for x in runs)[:10],
                            "cpu": any(r.best is None and r.cpu_score for r in rows)})
        (out / "index.html").write_text(env.get_template("index.html.j2").render(devices=devices))
        for run in board.runs:
            gpu = any(c["fitness"] is not None for c in run.candidates)
            archive = archives.get(run.db)
            grid = diversity_grid(archive, run.id) if archive is not None else None
            page = env.get_template("run.html.j2").render(run=run, gpu=gpu, curves=curves(run, gpu),
                                                          tree=tree_svg(run.candidates), grid=grid)
            (out / f"run-{run.key}.html").write_text(page)
        for row in board.rows:
            if not row.best_candidate:
                continue
            db = row.best_candidate["db"]
            cand = archives[db].get(row.best_candidate["id"])
            stored = archives[db].evaluation(cand.id)
            verdict = Verdict.from_json(stored) if stored else None
            ladder = "\n".join(ladder_lines(verdict) + shape_table(verdict)) if verdict else "(no verdict)"
            page = env.get_template("kernel.html.j2").render(
                row=row, cand=cand, db=Path(db).name, ladder=ladder,
                run_key=f"{row.best_candidate['archive']}-{cand.run_id}",
                verdict=verdict or Verdict("", "", "", "unknown", ()))
            (out / row.kernel_page).write_text(page)
    finally:
        for a in archives.values():
            a.close()
    return out / "index.html"
