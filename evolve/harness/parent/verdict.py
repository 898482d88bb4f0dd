"""The verdict: what the parent decided about one candidate, rung by rung, as frozen values.

A rung's `status` is the one fact about it ("ok", "failed" or "skipped"); a verdict passes when no rung failed and the
benchmark ran. `to_json` writes the schema that `evolve eval --json` prints and the archive stores (each rung's `ok`
and the verdict's `ok` are written out, derived from the statuses, for readers of that JSON); `from_json` reads it
back, archives written by earlier versions included.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, TypedDict

RUNGS = ("load", "compile", "run", "correctness", "benchmark", "roofline")
STATUSES = ("ok", "failed", "skipped")


class BenchmarkRow(TypedDict, total=False):
    """One benchmark case of a verdict (Verdict.shapes), as the parent writes it from the measurer's figures
    (harness/parent/ladder.py) and compose, the search, profiling and the leaderboard read it."""
    case: str  # the case's label
    shape: dict  # its dimensions by name
    dtype: str
    params: dict  # a format's extra arguments of the case, where it has any
    ms: float  # per call: the median of the windows' figures
    speedup_vs_torch: float | None  # the library baseline's time over ms (GPU)
    speedup_vs_compile: float | None  # torch.compile's time over ms (GPU)
    roofline_fraction: float | None  # the case's roofline bound over ms (GPU)
    bound_ms: float  # that bound
    bytes_per_s: float | None
    clock: str  # "cuda-window" or "cpu-interpreter"
    windows: int
    calls_per_window: int
    spread: float | None  # the windows' interquartile range over their median
    spin_retries: int | None  # windows run again because the runner had not queued its calls in time
    quiet_s: float | None  # the wait for a quiet card before the first case's windows
    window_ms: float  # the window's parts, for the record
    fixed_ms: float
    calibrated_ms: float
    hops_ms: float
    parts_ms: dict
    inputs: list  # what the calls' inputs looked like (shape, dtype, strides): composites dispatch on it


@dataclass(frozen=True)
class RungResult:
    name: str
    status: str  # one of STATUSES
    reason: str | None = None
    seconds: float = 0.0
    metrics: Mapping[str, Any] = field(default_factory=dict)  # as the measurer reported it, schema-checked

    def __post_init__(self):
        if self.status not in STATUSES:
            raise ValueError(f"rung {self.name}: status {self.status!r} is not one of {STATUSES}")

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def failed(self) -> bool:
        return self.status == "failed"

    def to_json(self) -> dict:
        return {"name": self.name, "ok": self.ok, "status": self.status, "reason": self.reason,
                "seconds": self.seconds, "metrics": dict(self.metrics)}

    @classmethod
    def from_json(cls, d: Mapping) -> "RungResult":
        status = d.get("status")
        if status not in STATUSES:  # written before statuses existed: ok or not
            status = "ok" if d.get("ok") else "failed"
        return cls(name=str(d.get("name")), status=status, reason=d.get("reason"),
                   seconds=float(d.get("seconds") or 0.0), metrics=dict(d.get("metrics") or {}))


@dataclass(frozen=True)
class Verdict:
    problem: str
    candidate: str
    mode: str  # "gpu" or "cpu" (the Triton interpreter)
    device: str  # the measurer's device name, or the mode's when no measurer reported one
    rungs: tuple[RungResult, ...]  # every rung of RUNGS, in order, once each
    fitness: float | None = None  # geomean fraction of roofline; GPU only
    shapes: tuple[BenchmarkRow, ...] = ()  # per benchmark case: time, rate, roofline fraction, spread
    secret: int | None = None  # the seed the inputs were mixed from, for the record
    versions: Mapping[str, str] = field(default_factory=dict)
    setup: tuple[Mapping[str, Any], ...] = ()  # how the processes were started and waited for
    jail: str | None = None
    work: tuple[str, ...] = ()  # evaluation folders kept for inspection (EvalOptions.keep_work)
    gpu: str | None = None  # the card that measured it (its UUID, GPU-...), where the measurer reported one

    @property
    def ok(self) -> bool:
        return not any(r.failed for r in self.rungs) and any(r.name == "benchmark" and r.ok for r in self.rungs)

    def rung(self, name: str) -> RungResult | None:
        return next((r for r in self.rungs if r.name == name), None)

    @property
    def kernels(self) -> tuple:
        """The compile rung's kernel specializations (name, registers, spills, shared memory, warps, files)."""
        compiled = self.rung("compile")
        kernels = compiled.metrics.get("kernels", []) if compiled else []
        return tuple(kernels) if isinstance(kernels, list) else ()

    @property
    def raced(self) -> dict | None:
        """The race the benchmark lost (harness/measurer/race.py): cases timed and the best it could reach, or None."""
        bench = self.rung("benchmark")
        raced = bench.metrics.get("raced") if bench is not None else None
        return raced if isinstance(raced, dict) else None

    @property
    def failure(self) -> RungResult | None:
        """The rung that failed (a verdict has at most one: the rungs after it are skipped)."""
        return next((r for r in self.rungs if r.failed), None)

    @property
    def problem_fault(self) -> str | None:
        """Why the problem's own code failed (its input generator), as the measurer said: then no candidate can pass."""
        failure = self.failure
        return failure.reason if failure is not None and failure.metrics.get("problem_fault") else None

    def to_json(self) -> dict:
        out = {"ok": self.ok, "problem": self.problem, "candidate": self.candidate, "device": self.device,
               "mode": self.mode, "rungs": [r.to_json() for r in self.rungs], "fitness": self.fitness,
               "shapes": [dict(s) for s in self.shapes], "secret": self.secret, "versions": dict(self.versions),
               "setup": [dict(s) for s in self.setup], "jail": self.jail}
        if self.work:
            out["work"] = list(self.work)
        if self.gpu:
            out["gpu"] = self.gpu
        return out

    @classmethod
    def from_json(cls, d: Mapping) -> "Verdict":
        return cls(problem=str(d.get("problem") or ""), candidate=str(d.get("candidate") or ""),
                   mode=str(d.get("mode") or ""), device=str(d.get("device") or ""),
                   rungs=tuple(RungResult.from_json(r) for r in d.get("rungs") or ()),
                   fitness=d.get("fitness"), shapes=tuple(d.get("shapes") or ()), secret=d.get("secret"),
                   versions=dict(d.get("versions") or {}), setup=tuple(d.get("setup") or ()), jail=d.get("jail"),
                   work=tuple(d.get("work") or ()), gpu=d.get("gpu") or None)
