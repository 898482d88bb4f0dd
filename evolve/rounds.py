"""The rounds a run makes beside its search: Nsight Compute profiles of its best few correct kernels (every
--profile-every evaluations, and at the end) and traces of the sections they mark, the end-of-run re-timing of the
best against each other, and the launch audit of the kernel the run reports. Each is advice or evidence: one that
cannot run says why and the run goes on."""
from __future__ import annotations

from pathlib import Path

from .archive import Archive, Candidate


class Rounds:
    """One run's profiler, re-timing and launch audit, with what each found."""

    def __init__(self, config, archive: Archive, problem, work: Path, emit, auditor=None):
        self.config, self.archive, self.problem, self.work, self.emit = config, archive, problem, work, emit
        self.profiler = None  # made at the first profile round; False once profiling is off for the run
        self.tracer = None  # made at the first trace of marked sections; False once tracing is off for the run
        self.retimed: list = []  # retime.Retimed of the end of the run, best first
        self.auditor = auditor  # launch_audit.Auditor, made at the end of the run where none was given
        self.audited = None  # launch_audit.Picked: the reported best and its launch audit

    # -- profiles ---------------------------------------------------------------------------------------------------
    def due(self, ranked: list, device: str, trace: bool) -> bool:
        """Whether a profile round would profile or trace anything now (the run empties its lanes only then: the
        profiler needs the card to itself)."""
        return bool(self._to_profile(ranked, device) or (trace and self._to_trace(ranked, device)))

    def _to_profile(self, ranked: list, device: str) -> list:
        """The best few correct candidates (ranked, best first) not yet profiled on this device."""
        top = self.config.profile.top
        if top <= 0 or self.profiler is False:
            return []
        done = self.archive.profiles.attempted(device)
        return [c for c in ranked if c.ok and c.fitness is not None and c.id not in done][:top]

    def profile(self, ranked: list, device: str, gpu: str | None) -> None:
        """Nsight Compute on the best few correct candidates (ranked, best first) not yet profiled on this device
        (GPU runs only)."""
        chosen = self._to_profile(ranked, device)
        if not chosen:  # nothing timed on a GPU (a CPU run, or none correct yet): no profiler to look for, or to miss
            return
        from .profiling import Profiler

        if self.profiler is None:
            self.profiler = Profiler(allow_root=self.config.profile.as_root, timeout_s=self.config.profile.timeout_s)
        if self.profiler.unavailable:
            self.emit({"kind": "profile_off", "reason": self.profiler.unavailable})
            self.profiler = False
            return
        for cand in chosen:
            try:
                self._profile_one(cand, device, gpu)
            except Exception as exc:  # noqa: BLE001 - a profile is advice: the run goes on without it
                self.emit({"kind": "profile_off", "reason": f"{type(exc).__name__}: {exc}"[:300]})
                self.profiler = False
            if self.profiler is not False and self.profiler.unavailable:  # e.g. no permission for the counters
                self.emit({"kind": "profile_off", "reason": self.profiler.unavailable})
                self.profiler = False
            if self.profiler is False:
                return

    def _profile_one(self, cand: Candidate, device: str, gpu: str | None) -> None:
        from .profiling import chosen_row

        verdict = self.archive.verdict(cand.id)
        labels = [case.label for case in self.problem.benchmarks]
        row = chosen_row(verdict, labels)
        if row is None:
            return
        peaks = verdict.rung("roofline").metrics.get("peaks") or {}
        kind = None
        if row.get("bound_ms") and row.get("bytes_per_s") and peaks.get("bandwidth"):
            memory_ms = row["bytes_per_s"] * row["ms"] * 1e-3 / peaks["bandwidth"] * 1e3
            kind = "memory" if memory_ms >= 0.999 * row["bound_ms"] else "compute"
        path = self.work / f"profile_{cand.id}.py"
        path.write_text(cand.source)
        result = self.profiler.profile(path, self.problem.path, labels.index(row["case"]),
                                       beside=self.problem.beside_files(),
                                       bound_kind=kind, case_label=row["case"], gpu=gpu)
        self.archive.profiles.store(cand.id, device, result, row["case"])
        self.emit({"kind": "profile", "candidate": cand, "result": result})

    # -- traces of marked sections ------------------------------------------------------------------------------------
    def _to_trace(self, ranked: list, device: str) -> list:
        """The best few correct candidates that mark sections, not yet traced on this device."""
        from .harness.runner.sections import SectionError, find

        top = self.config.profile.top
        if top <= 0 or self.tracer is False:
            return []
        done = self.archive.traces.attempted(device)
        chosen = []
        for cand in ranked:
            if len(chosen) == top:
                break
            if not (cand.ok and cand.fitness is not None):
                continue
            try:
                marked = cand.id not in done and bool(find(cand.source or ""))
            except SectionError:
                marked = False
            if marked:
                chosen.append(cand)
        return chosen

    def trace(self, ranked: list, device: str, gpu: str | None) -> None:
        """The sections the best few correct candidates mark (harness/runner/sections.py), traced on the case a profile
        would take, where not yet traced on this device (GPU runs only; candidates without marks are left alone)."""
        chosen = self._to_trace(ranked, device)
        if not chosen:
            return
        from .tracing import Tracer

        if self.tracer is None:
            self.tracer = Tracer(timeout_s=self.config.profile.timeout_s)
        if self.tracer.unavailable:
            self.emit({"kind": "trace_off", "reason": self.tracer.unavailable})
            self.tracer = False
            return
        from .profiling import chosen_row

        labels = [case.label for case in self.problem.benchmarks]
        for cand in chosen:
            row = chosen_row(self.archive.verdict(cand.id), labels)
            if row is None:
                continue
            label = row["case"]
            path = self.work / f"trace_{cand.id}.py"
            path.write_text(cand.source)
            result = self.tracer.trace(path, self.problem.path, labels.index(label),
                                       beside=self.problem.beside_files(), case_label=label, gpu=gpu)
            self.archive.traces.store(cand.id, device, result, label)
            self.emit({"kind": "trace", "candidate": cand, "result": result})

    # -- the end-of-run re-timing -----------------------------------------------------------------------------------
    def retime(self, ranked: list, run_id: int, evaluate, options, score_of) -> list:
        """On a GPU: the best few correct candidates (ranked, best first) re-timed against each other, interleaved,
        with `evaluate` on the card `options` names."""
        from .retime import retime

        top = self.config.retime_top
        chosen = [c for c in ranked if c.ok and c.source][:top] if top >= 2 else []
        verdict = self.archive.verdict(chosen[0].id) if chosen else None
        if len(chosen) < 2 or verdict is None or verdict.mode != "gpu":
            return []
        self.emit({"kind": "retiming", "ids": [c.id for c in chosen], "rounds": self.config.retime_rounds})
        try:
            results = retime(self.archive, run_id, chosen, evaluate, self.problem.path, options, self.work,
                             self.config.retime_rounds, score_of, self.emit)
        except Exception as exc:  # noqa: BLE001 - a lane fault: the re-timing is evidence, the run is done
            self.emit({"kind": "retime_off", "reason": f"{type(exc).__name__}: {exc}"[:300]})
            return []
        self.retimed = results
        return results

    # -- the launch audit -------------------------------------------------------------------------------------------
    def audit(self, device: str, reported, gpu: str | None) -> None:
        """The launch audit of the run's best (launch_audit.py; `reported()` names it); one that fails is left out and
        the next best is audited, up to launch_audit.TRIES of them."""
        from .launch_audit import pick

        self.audited = pick(self.archive, device, reported, lambda cand: self._audit_one(cand, gpu))
        for cand, audit in self.audited.failed:
            self.emit({"kind": "audit", "candidate": cand, "audit": audit})
        if self.audited.best is not None:
            self.emit({"kind": "audit", "candidate": self.audited.best, "audit": self.audited.audit})

    def _audit_one(self, cand: Candidate, gpu: str | None):
        from .harness.parent.ladder import gpu_available
        from .launch_audit import NEEDS_GPU, NOT_RUN, Audit, Auditor, allowed_names

        verdict = self.archive.verdict(cand.id)
        if verdict is None or verdict.mode != "gpu":
            return Audit(NOT_RUN, NEEDS_GPU)
        if self.auditor is None:
            if not gpu_available():  # a cluster's driver: the lanes' cards are elsewhere
                return Audit(NOT_RUN, "no GPU on this machine (the run's lanes were elsewhere)")
            self.auditor = Auditor()
        return self.auditor.audit(cand.source, self.problem.path, allowed_names(verdict, cand.source),
                                  beside=self.problem.beside_files(),
                                  gpu=gpu)
