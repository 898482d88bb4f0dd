"""Text for people: the rung ladder and the per-shape table. Pure functions from a verdict to lines.

Plain text, not rich tables: the same ladder lines go into prompts (a model reads them) and into the archive, and
the shape table is printed by `evolve eval`, `best` and `show` where output is often piped; rich draws the live
progress view only (progress.py)."""
from __future__ import annotations

from .harness.parent.verdict import RungResult, Verdict


def _time(ms: float) -> str:
    if ms is None:
        return "-"
    if ms < 1:
        return f"{ms * 1e3:.1f} us"
    if ms < 1000:
        return f"{ms:.2f} ms"
    return f"{ms / 1e3:.2f} s"


def _rate(bytes_per_s) -> str:
    if not bytes_per_s:
        return "-"
    if bytes_per_s >= 1e12:
        return f"{bytes_per_s / 1e12:.2f} TB/s"
    if bytes_per_s >= 1e9:
        return f"{bytes_per_s / 1e9:.1f} GB/s"
    return f"{bytes_per_s / 1e6:.1f} MB/s"


def _speedup(value) -> str:
    return f"{value:.3g}x" if value else "-"


def _span(items: list, key: str) -> str:
    values = [k.get(key) for k in items if k.get(key) is not None]
    if not values:
        return "?"
    return str(min(values)) if min(values) == max(values) else f"{min(values)}-{max(values)}"


def _detail(rung: RungResult, shapes) -> str:
    m = rung.metrics
    name = rung.name
    if not rung.ok:
        return rung.reason or ""
    if name == "compile":
        groups: dict = {}
        for k in m.get("kernels", []):
            groups.setdefault(k["name"], []).append(k)
        parts = []
        for name, ks in groups.items():
            arch = "/".join(sorted({str(k.get("arch") or "?") for k in ks}))
            parts.append(f"{name}{f' x{len(ks)}' if len(ks) > 1 else ''} {arch} regs={_span(ks, 'regs')} "
                         f"spills={_span(ks, 'spills')} smem={_span(ks, 'smem')}B")
        return "; ".join(parts)
    if name == "run":
        return f"{m.get('cases')} shape/dtype cases, outputs plain, finite, right shape and dtype"
    if name == "correctness":
        drawn = f", {' and '.join(m['drawn'])} drawn" if m.get("drawn") else ""
        return f"{rung.reason} ({m.get('checks')} checks{drawn})"
    if name == "benchmark":
        if not shapes:
            return ""
        top = max(shapes, key=lambda s: s.get("bound_ms") or s["ms"])
        if top.get("clock") == "cpu-interpreter":  # no rate or speed-up: interpreter times say nothing of either
            return f"{top['case']}: {_time(top['ms'])} CPU interpreter time, not GPU performance  " \
                   f"({len(shapes)} shapes, table below)"
        frac = f"  {top['roofline_fraction']:.2f} of roofline" if top.get("roofline_fraction") else ""
        compiled = f"  {_speedup(top.get('speedup_vs_compile'))} torch.compile" if top.get("speedup_vs_compile") else ""
        return (f"{top['case']}: {_time(top['ms'])}  {_rate(top.get('bytes_per_s'))}{frac}  "
                f"{_speedup(top.get('speedup_vs_torch'))} torch{compiled}  ({len(shapes)} shapes, table below)")
    return rung.reason or ""


def rung_line(rung: RungResult, shapes=()) -> str:
    """One rung as a line; `shapes` (the verdict's per-shape rows) feed the benchmark rung's summary."""
    status = {"ok": "ok", "failed": "FAILED", "skipped": "skipped"}[rung.status]
    seconds = f"  ({rung.seconds:.1f} s)" if rung.seconds else ""
    generic = rung.reason in (None, "skipped") or rung.reason.startswith("skipped: an earlier rung failed")
    detail = _detail(rung, shapes) if rung.status != "skipped" or rung.name == "roofline" or not generic else ""
    if rung.status == "skipped" and detail.startswith("skipped"):
        detail = detail[len("skipped"):].lstrip(": ")
    return f"{'[' + rung.name + ']':<14}{status:<8}{detail}{seconds}".rstrip()


def ladder_lines(verdict: Verdict) -> list[str]:
    return [rung_line(rung, verdict.shapes) for rung in verdict.rungs]


def shape_table(verdict: Verdict) -> list[str]:
    shapes = verdict.shapes
    if not shapes:
        return []
    cpu = any(s.get("clock") == "cpu-interpreter" for s in shapes)
    if cpu:  # interpreter time only: a rate or a ratio to torch would read as performance, and swings run to run
        lines = ["  CPU interpreter times: not GPU performance, only how much work the interpreter does",
                 f"  {'case':<18}{'time':>11}"]
        return lines + [f"  {s['case']:<18}{_time(s['ms']):>11}" for s in shapes]
    header = f"  {'case':<18}{'time':>11}{'rate':>12}{'roofline':>10}{'vs torch':>10}{'vs compile':>12}"
    lines = ["  timed from outside the candidate's process: windows of calls on fresh inputs, L2 flushed", header]
    for s in shapes:
        frac = f"{s['roofline_fraction']:.2f}" if s.get("roofline_fraction") else "-"
        lines.append(f"  {s['case']:<18}{_time(s['ms']):>11}{_rate(s.get('bytes_per_s')):>12}{frac:>10}"
                     f"{_speedup(s.get('speedup_vs_torch')):>10}{_speedup(s.get('speedup_vs_compile')):>12}")
    return lines


def _kernels(verdict: Verdict | None) -> dict:
    out = {}
    for k in (verdict.kernels if verdict else ()):
        if isinstance(k, dict) and k.get("name"):
            out.setdefault(k["name"], k)  # the first specialization of each kernel
    return out


def against_parent(verdict: Verdict, parent_verdict: Verdict | None, cand, parent) -> list[str]:
    """Why a candidate won or lost against its parent: the verdicts side by side, per benchmark case (time, the
    speed-up over the parent, fraction of roofline) and the compiled kernels' resources that changed."""
    if parent_verdict is None:
        return []
    head = f"against its parent #{parent.id} ({parent.proposer})"
    if not verdict.ok or not parent_verdict.ok:
        this = "passed" if verdict.ok else f"failed at {verdict.failure.name if verdict.failure else 'a rung'}"
        that = ("passed" if parent_verdict.ok
                else f"failed at {parent_verdict.failure.name if parent_verdict.failure else 'a rung'}")
        return [f"{head}: this one {this}, the parent {that}"]
    ours, theirs = cand.score, parent.score
    lines = []
    if ours is not None and theirs:
        lines.append(f"{head}: score {ours:.4g} against {theirs:.4g} ({100 * (ours / theirs - 1):+.1f}%)"
                     + ("; the fitness of each is a fraction of roofline" if verdict.fitness is not None else ""))
    old = {s.get("case"): s for s in parent_verdict.shapes}
    rows = [(s, old.get(s.get("case"))) for s in verdict.shapes if old.get(s.get("case"))]
    if rows:
        lines.append(f"  {'case':<22}{'parent':>11}{'this':>11}{'speed-up':>10}{'roofline':>17}")
        for s, p in rows:
            frac = (f"{p['roofline_fraction']:.2f} -> {s['roofline_fraction']:.2f}"
                    if s.get("roofline_fraction") is not None and p.get("roofline_fraction") is not None else "-")
            speed = f"{p['ms'] / s['ms']:.2f}x" if s.get("ms") and p.get("ms") else "-"
            lines.append(f"  {str(s.get('case'))[:21]:<22}{_time(p['ms']):>11}{_time(s['ms']):>11}"
                         f"{speed:>10}{frac:>17}")
    changed = changes(_kernels(parent_verdict), _kernels(verdict), ("regs", "spills", "smem", "num_warps"),
                      label="kernel ")
    if changed:
        lines.append("compiled kernels that changed (first specialization of each):")
        lines += changed
    return lines


def changes(before: dict, after: dict, keys=None, missing=None, label: str = "") -> list[str]:
    """One line per name whose figures differ between two {name: {key: value}} tables ("new" or "gone" where only
    one has it); `keys`: the keys compared, in order (default: every key of either, load and store widths first);
    `missing`: the value of a key a table lacks."""
    lines = []
    for name in sorted(set(before) | set(after)):
        a, b = before.get(name), after.get(name)
        if a is None or b is None:
            lines.append(f"  {label}{name}: {'new' if a is None else 'gone'}")
            continue
        names = keys or sorted(set(a) | set(b), key=lambda k: (not k.endswith(("loads", "stores")), k))
        diffs = [f"{key} {a.get(key, missing)} -> {b.get(key, missing)}" for key in names
                 if a.get(key, missing) != b.get(key, missing)]
        if diffs:
            lines.append(f"  {label}{name}: " + ", ".join(diffs))
    return lines


def digest_against(before, after) -> list[str]:
    """What changed in the SASS between two candidates (digest.KernelDigest lists), per kernel with its
    specializations summed: global loads and stores by width, local and shared memory traffic, barriers, shuffles,
    instructions, and the hot loop's instructions."""
    def per_kernel(digests) -> dict:
        out: dict[str, dict] = {}
        for d in digests:
            k = out.setdefault(d.name.split("_", 1)[-1], {"specializations": 0})
            k["specializations"] += 1
            t = d.total
            for kind, widths in (("loads", t.global_loads), ("stores", t.global_stores)):
                for width, n in widths.items():
                    k[f"{width}-bit {kind}"] = k.get(f"{width}-bit {kind}", 0) + n
            for key in ("local_loads", "local_stores", "shared_loads", "shared_stores", "barriers", "shuffles",
                        "instructions"):
                k[key.replace("_", " ")] = k.get(key.replace("_", " "), 0) + getattr(t, key)
            k["hot loop instructions"] = k.get("hot loop instructions", 0) + (d.loop.instructions if d.loop else 0)
        return out

    return changes(per_kernel(before), per_kernel(after), missing=0)
