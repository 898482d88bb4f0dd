"""`evolve model profile`: where a program's time goes, by op and by fusible chain, each with its share of the time,
the shapes and dtypes it ran at and how often, and on a card the most it could gain end to end."""
from __future__ import annotations

from dataclasses import dataclass

from .graph import record_shapes, trace
from .patterns import Pattern, find_patterns
from .program import load_program
from .roofline import amdahl, bound_ms, card_peaks


@dataclass
class Row:
    """One pattern's line of the table."""
    pattern: Pattern
    ms: float  # per forward, all its units together
    share: float  # of the total
    bound_ms: float | None  # all its units at the roofline (GPU)
    gain: float | None  # the end-to-end speed-up if it ran at the roofline (GPU)


@dataclass
class Profile:
    program: str
    device: str
    total_ms: float  # the timed ops' times summed, per forward
    rows: list
    roofline_note: str  # where the peaks came from, or why there is no gain column

    def to_json(self) -> dict:
        return {"program": self.program, "device": self.device, "total_ms": self.total_ms,
                "roofline": self.roofline_note,
                "rows": [{"id": r.pattern.id, "label": r.pattern.label, "kind": r.pattern.kind,
                          "outputs": r.pattern.output_ops(), "calls": len(r.pattern.units), "ms": r.ms,
                          "share": r.share, "bound_ms": r.bound_ms, "max_gain": r.gain,
                          "extractable": r.pattern.kind is not None,
                          "shapes": [{"shape": dict(shape) if r.pattern.kind else _plain(shape), "dtype": dtype,
                                      "calls": count} for (shape, dtype), count in r.pattern.variants().items()]}
                         for r in self.rows]}


def _plain(shape) -> dict:
    return {name: [list(s) for s in value] if name == "in" else (list(value) if value else None)
            for name, value in shape}


def traced_program(path, device: str):
    """(graph module with shapes and its patterns, inputs, the original module)."""
    model, inputs = load_program(path, device)
    graph_module = trace(model)
    record_shapes(graph_module, inputs)
    return graph_module, find_patterns(graph_module), inputs, model


def profile_program(path, device: str = "cpu", repeats: int = 10) -> Profile:
    from .timing import time_nodes

    graph_module, patterns, inputs, _ = traced_program(path, device)
    times = time_nodes(graph_module, inputs, device, repeats=repeats)
    total = sum(times.values())
    peaks, note = card_peaks() if device.startswith("cuda") else (
        None, "max gain needs a GPU: on the CPU there is no roofline to bound an op by (run this on the card)")
    rows = []
    for pattern in patterns:
        ms = sum(times.get(node, 0.0) for unit in pattern.units for node in unit.nodes)
        bound = sum(bound_ms(unit, peaks) for unit in pattern.units) if peaks else None
        rows.append(Row(pattern, ms, ms / total if total else 0.0, bound,
                        amdahl(total, ms, min(bound, ms)) if bound is not None else None))
    rows.sort(key=lambda r: -r.ms)
    return Profile(str(path), device, total, rows, note)


def _shapes_text(pattern: Pattern, limit: int = 3) -> str:
    items = sorted(pattern.variants().items(), key=lambda kv: -kv[1])
    parts = []
    for (shape, dtype), count in items[:limit]:
        if pattern.kind:
            dims = " ".join(f"{k}={v}" for k, v in shape)
        else:
            dims = ",".join("x".join(map(str, s)) for s in dict(shape)["in"]) or "-"
        parts.append(f"{dtype} {dims} (x{count})")
    more = f" +{len(items) - limit} more" if len(items) > limit else ""
    return "; ".join(parts) + more


def render(profile: Profile, top: int = 20) -> str:
    lines = [f"{profile.program} on {profile.device}: {profile.total_ms:.3f} ms per forward in the timed ops "
             f"(each op timed alone, median of the repeats)",
             f"{'id':<5} {'op or chain':<24} {'calls':>5} {'ms':>9} {'share':>6} {'bound ms':>9} {'max gain':>8}  "
             "shapes (calls)  [extract: kind]"]
    for row in profile.rows[:top]:
        p = row.pattern
        bound = f"{row.bound_ms:9.4f}" if row.bound_ms is not None else f"{'-':>9}"
        gain = f"{row.gain:7.3f}x" if row.gain is not None else f"{'-':>8}"
        kind = f"  [{p.kind}]" if p.kind else "  [not extractable]"
        outputs = len(p.output_ops())
        name = p.label if outputs == 1 else f"{p.label} ({outputs} out)"
        lines.append(f"{p.id:<5} {name[:24]:<24} {len(p.units):>5} {row.ms:9.4f} {row.share:6.1%} {bound} {gain}  "
                     f"{_shapes_text(p)}{kind}")
    if len(profile.rows) > top:
        lines.append(f"... {len(profile.rows) - top} more (--top N)")
    lines.append(profile.roofline_note)
    lines.append("a chain's time is its ops' times summed; its bound counts only its outside inputs and its results "
                 "(a chain marked (2 out) also writes an intermediate the program reads elsewhere). "
                 "Write problems with: evolve model extract PROGRAM --pick ID[,ID] --out DIR")
    return "\n".join(lines)
