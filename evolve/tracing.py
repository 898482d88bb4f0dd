"""Time inside a kernel: the sections a Triton candidate marks (`# section: NAME`, harness/runner/sections.py), each
warp's cycles and nanoseconds per section on one benchmark case, for the archive, `evolve show` and the prompts.

`Tracer.trace(...)` runs the candidate in the profiler's jailed child (harness/runner/profile.py, `trace-target`: its
own namespaces, Landlock, a lifeline, the card held against other evolve processes), never inside a verdict, and reads
the stamp buffer it leaves as numbers: whatever the traced process wrote there is advice, like a profile. What a
summary holds per section: how many warps recorded it, the median and the 10th-90th percentile of its cycles per warp
(`%clock64`), its median in nanoseconds (`%globaltimer`) and its share of the marked time; per kernel, the CTAs
recorded, the median CTA time from first to last mark and how far apart the CTAs started.
"""
from __future__ import annotations

import secrets
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from .harness.runner import sections
from .profiling import Result, _number, _read_bytes, _remove, run_child

NO_MARKS = ("no sections marked: put `# section: NAME` comment lines inside the @triton.jit function, one where each "
            "part begins and `# section: end` after the last")


def parse(data: bytes, marks: list[sections.Mark]) -> dict:
    """The summary of a stamp buffer (sections.MAX_CTAS x WARPS x marks x (clock64, globaltimer), u64). Raises
    ValueError when the buffer has the wrong size or no warp reached two marks of one function."""
    count = len(marks)
    if count == 0 or len(data) != sections.buffer_bytes(count):
        raise ValueError(f"the stamp buffer has {len(data)} bytes, not the {sections.buffer_bytes(count)} expected")
    stamps = np.frombuffer(data, dtype=np.uint64).reshape(sections.MAX_CTAS, sections.WARPS, count, 2).astype(np.int64)
    seen = stamps[..., 1] > 0  # a stamp written (globaltimer is never 0 on a running GPU)
    rows = []
    for i, mark in enumerate(marks[:-1]):
        after = marks[i + 1]
        if mark.name == sections.END or after.function != mark.function:
            continue
        both = seen[..., i] & seen[..., i + 1]
        cycles = (stamps[..., i + 1, 0] - stamps[..., i, 0])[both]
        ns = (stamps[..., i + 1, 1] - stamps[..., i, 1])[both]
        keep = (cycles >= 0) & (ns >= 0)
        cycles, ns = cycles[keep], ns[keep]
        if cycles.size == 0:
            continue
        rows.append({"function": mark.function, "name": mark.name, "warps": int(cycles.size),
                     "cycles_median": float(np.median(cycles)), "cycles_p10": float(np.percentile(cycles, 10)),
                     "cycles_p90": float(np.percentile(cycles, 90)), "ns_median": float(np.median(ns))})
    if not rows:
        raise ValueError("no warp recorded two marks of one function (did the marked kernel run on this case?)")
    total = sum(r["cycles_median"] for r in rows) or 1.0
    for r in rows:
        r["share"] = r["cycles_median"] / total
    timer = np.where(seen, stamps[..., 1], 0)
    ctas = seen.any(axis=(1, 2))
    first = np.where(seen, stamps[..., 1], np.iinfo(np.int64).max).min(axis=(1, 2))[ctas]
    last = timer.max(axis=(1, 2))[ctas]
    return {"sections": rows, "ctas": int(ctas.sum()), "warps_per_cta": int(seen.any(axis=2).sum(axis=1).max()),
            "cta_ns_median": float(np.median(last - first)), "start_spread_ns": float(first.max() - first.min()),
            "capped": bool(ctas[-1])}


def render(summary: dict) -> str:
    """A few lines for a prompt or `evolve show`."""
    capped = " (the most recorded: a larger grid's later CTAs are not)" if summary.get("capped") else ""
    lines = [f"Sections traced on {summary.get('case', 'one case')}: {summary['ctas']} CTAs{capped} of up to "
             f"{summary['warps_per_cta']} warps; per warp, from its mark to the next (a mark inside a loop keeps its "
             f"last pass):"]
    for r in summary["sections"]:
        lines.append(f"- {r['function']}/{r['name']}: median {r['cycles_median']:,.0f} cycles "
                     f"({r['ns_median'] / 1000:.2f} us), p10-p90 {r['cycles_p10']:,.0f}-{r['cycles_p90']:,.0f}; "
                     f"{100 * r['share']:.0f}% of the marked time; {r['warps']} warps")
    lines.append(f"A CTA took {summary['cta_ns_median'] / 1000:.2f} us (median) from its first mark to its last; the "
                 f"CTAs' first marks spread over {summary['start_spread_ns'] / 1000:.1f} us."
                 + (f" The traced call took {summary['call_ms']:.3f} ms, stamps included (the verdict times the "
                    f"file without them)." if summary.get("call_ms") else ""))
    return "\n".join(lines)


class Tracer:
    """Traces candidates one at a time; `unavailable` says why not (None when it can)."""

    def __init__(self, *, timeout_s: float = 180.0):
        self.timeout_s = timeout_s
        from .harness.parent.ladder import gpu_available

        self.unavailable = None if gpu_available() else "tracing needs a GPU: sections are timed on the card"

    def trace(self, candidate: Path, problem_dir: Path, case: int, *, beside=None, case_label: str = "",
              gpu: str | None = None) -> Result:
        started = time.monotonic()
        try:
            marks = sections.find(Path(candidate).read_text())
        except (OSError, sections.SectionError) as exc:
            return Result(False, 0.0, f"not traced: {exc}")
        if not marks:
            return Result(False, 0.0, NO_MARKS)
        if self.unavailable:
            return Result(False, 0.0, self.unavailable)
        work = Path(tempfile.mkdtemp(prefix="evolve-trace-"))
        problem_dir = Path(problem_dir).resolve()  # the child starts in its work folder
        try:
            shutil.copyfile(candidate, work / "candidate.py")
            for name, path in dict(beside or {}).items():
                shutil.copyfile(path, work / name)
            job = {"candidate": str(work / "candidate.py"), "problem": str(problem_dir), "case": case,
                   "work": str(work), "seed": secrets.randbits(31), "beside": bool(beside), "mode": "trace"}
            code = run_child(work, job, self.timeout_s, gpu)
            seconds = time.monotonic() - started
            if code is None:
                return Result(False, seconds, f"the traced call did not finish within {self.timeout_s:g} s")
            data = _read_bytes(work / "trace.bin", sections.buffer_bytes(len(marks)) + 1)
            if code != 0 or not data:
                tail = " ".join(_read_bytes(work / "stderr", 64 << 10).decode(errors="replace").strip()
                                .splitlines()[-2:])[-300:]
                return Result(False, seconds, f"the traced child failed (exit code {code}): {tail}")
            summary = parse(data, marks)
            summary["case"] = case_label or f"benchmark case {case}"
            ms = _number(_read_bytes(work / "trace_ms", 64).decode(errors="replace"))  # advice, as the stamps are
            summary["call_ms"] = ms if ms and ms > 0 else None
            return Result(True, seconds, "", summary, "")
        except Exception as exc:  # noqa: BLE001 - a trace is advice: whatever goes wrong, the caller goes on
            return Result(False, time.monotonic() - started, f"tracing failed: {type(exc).__name__}: {exc}"[:300])
        finally:
            _remove(work)
