"""What a GPU evaluation measures before any runner has imported the candidate: the device's peaks, the library
baselines, and the timing window's fixed costs per benchmark case. Each is kept by the parent across evaluations
(harness/parent/ladder.py) and measured again once older than RECHECK_S."""
from __future__ import annotations

import hashlib
import math
import time
from importlib.metadata import PackageNotFoundError, version

import torch

from ..shared.seeds import BASELINE_SEED
from . import peaks
from .exchange import CallSet, nbytes_of

TARGET_WINDOW_MS = 2.0  # work in one window for a kernel at the roofline: well above the window's own noise
MAX_CALLS_PER_WINDOW = 256
MEASURER_MEMORY_SHARE = 0.2  # of the device's memory, for one window's inputs, copies and read-back
RECHECK_S = 1800.0  # a kept calibration (peaks, a window's fixed costs) older than this is measured again


def triton_version() -> str:
    """Triton's version without importing it (the measurer has no use for Triton itself)."""
    try:
        return version("triton")
    except PackageNotFoundError:
        return "unknown"


def device_key(gpu: bool) -> str:
    name = torch.cuda.get_device_name() if gpu else "cpu"
    return f"{name}|torch {torch.__version__}|triton {triton_version()}|peaks v3"


def fixed_ms(plan: dict, k: int, observed: float | None = None) -> float:
    """A window's cost with no work in it, for k calls: the measurer's copies and read-back as calibrated with no
    candidate (linear between the two calibrated sizes), or as this window's own events saw them where that is
    less, plus the two context switches. A candidate can lengthen the measurer's own parts of a window (work of its
    own competing for the device) but never shorten them, so the lesser of the two is never flattering; it
    corrects a calibration made while the device was slower than it is during the window."""
    calibrated = plan["one_ms"]
    if plan["k"] > 1:
        calibrated += (k - 1) / (plan["k"] - 1) * (plan["many_ms"] - plan["one_ms"])
    if observed is not None:
        calibrated = min(calibrated, observed)
    return calibrated + plan["hops_ms"]


def fresh(job: dict, entry, stamp: str = "checked") -> bool:
    """Whether a kept calibration was measured (or re-checked) within the job's recheck_s: an older one is
    measured again, and the two merged, rather than believed for good."""
    try:
        return time.time() - float(entry[stamp]) < float(job.get("recheck_s", RECHECK_S))
    except (KeyError, TypeError, ValueError):
        return False


class Calibration:
    """The GPU mode's calibrations: peaks, baselines, and each benchmark case's plan (calls per window and the
    window's fixed cost for one and for that many calls)."""

    def __init__(self, job: dict, problem, reference, maker, channel, lease, caller):
        self.job, self.problem, self.reference, self.maker = job, problem, reference, maker
        self.ch, self.lease, self.caller = channel, lease, caller
        self.device = maker.device
        self.baselines: dict = {}
        self.peaks: dict | None = None
        self.plans: dict = {}  # benchmark case label -> its plan

    @property
    def window(self):
        """The GPU runner's timing window (harness/measurer/exchange.py), once connected."""
        return self.caller.window

    @property
    def device_key(self) -> str:
        return device_key(True)

    @property
    def baseline_key(self) -> str:
        digest = hashlib.sha256(self.problem.reference_path.read_bytes()).hexdigest()[:12]
        return f"{self.device_key}|{self.problem.name}|{digest}"

    @property
    def plan_key(self) -> str:
        return f"{self.baseline_key}|per-gpu {int(self.job.get('per_gpu', 1))}|plans v1"

    @property
    def kept_plans(self) -> dict:
        """The window's calibrations kept for this card model, problem and --per-gpu (harness/parent/ladder.py)."""
        return (self.job.get("plans") or {}).get(self.plan_key) or {}

    def missing(self) -> bool:
        """Whether anything must be measured now (then under the lease): every figure here is a timing."""
        kept, job = self.kept_plans, self.job
        baselines = (job.get("baselines") or {}).get(self.baseline_key, {})
        return (not fresh(job, (job.get("peaks") or {}).get(self.device_key))
                or not isinstance(kept.get("hops_ms"), float) or not fresh(job, kept, "hops_checked")
                or any(not fresh(job, kept.get(case.label))
                       or (self.reference.has_baseline and case.label not in baselines)
                       for case in self.problem.benchmarks))

    def measure(self, timer, split: dict) -> None:
        """The device's peaks (unless kept), the library baselines (unless kept), the window's switches and each
        benchmark case's plan; seconds of each part into split."""
        kept_peaks = (self.job.get("peaks") or {}).get(self.device_key)
        cached = fresh(self.job, kept_peaks)
        mark = time.perf_counter()
        # a peak measured while something else used the card can only come out low: each the highest seen
        self.peaks = kept_peaks if cached else peaks.highest(kept_peaks, peaks.measure(timer, self.device))
        split["peaks"] = time.perf_counter() - mark
        mark = time.perf_counter()
        self.ch.send({"kind": "peaks", "key": self.device_key, "cached": bool(cached),
                      "bandwidth": float(self.peaks["bandwidth"]),
                      "flops": {k: float(self.peaks["flops"][k]) for k in ("bfloat16", "float32", "float16")}})
        self.baselines = dict((self.job.get("baselines") or {}).get(self.baseline_key, {}))
        for case in self.problem.benchmarks:
            if case.label not in self.baselines and self.reference.has_baseline:
                figures = self._time_baselines(timer, [self.maker.make(case, BASELINE_SEED + i) for i in range(2)])
                self.baselines[case.label] = figures
                self.ch.send({"kind": "baseline", "key": self.baseline_key, "case": case.label,
                              "torch_ms": figures.get("torch_ms"), "compile_ms": figures.get("compile_ms"),
                              "compile_error": figures.get("compile_error")})
        split["baselines"] = time.perf_counter() - mark
        # The window's calibrations are kept per card model, problem and --per-gpu, each the fastest seen (the
        # parent keeps them, harness/parent/ladder.py): an evaluation measures only what no earlier one has.
        kept = self.kept_plans
        mark = time.perf_counter()
        self._hops(kept)
        split["hops"] = time.perf_counter() - mark
        mark = time.perf_counter()
        for case in self.problem.benchmarks:
            self.plans[case.label] = self._plan(case, kept.get(case.label))
        split["plans"] = time.perf_counter() - mark

    def _hops(self, kept: dict) -> None:
        """The two context switches a window holds, as kept or measured now (again, where kept: a cost measured while
        the card was busy only comes out high)."""
        window = self.window
        kept_hops = kept.get("hops_ms") if isinstance(kept.get("hops_ms"), float) else None
        if kept_hops is not None and fresh(self.job, kept, "hops_checked"):
            window.hops_ms = kept_hops
            return
        with self.lease.timing():
            window.calibrate_hops()
        self.ch.send({"kind": "plan", "key": self.plan_key, "case": None, "k": None, "one_ms": None,
                      "many_ms": None, "hops_ms": float(window.hops_ms)})
        if kept_hops is not None:
            window.hops_ms = min(window.hops_ms, kept_hops)

    def _time_baselines(self, timer, samples) -> dict:
        import torch._dynamo as dynamo

        for knob in ("recompile_limit", "cache_size_limit"):
            if hasattr(dynamo.config, knob):
                setattr(dynamo.config, knob, 256)
        if self.reference.times_own_baselines:  # a foreign problem's, where its code runs
            with self.lease.timing():
                return self.reference.time_baselines(samples, compiled=True)
        baseline = self.reference.baseline_for(samples[0])
        sets = [s.leaves for s in samples]
        figures = {"torch_ms": timer.time(baseline, sets)["ms"]}
        try:
            compiled = torch.compile(baseline, dynamic=False)
            figures["compile_ms"] = timer.time(compiled, sets)["ms"]
        except Exception as exc:  # noqa: BLE001 - torch.compile missing a compiler is not the candidate's fault
            figures["compile_error"] = str(exc)[:200]
        return figures

    def bound_ms(self, case) -> float:
        """The case's roofline: its bytes at the measured bandwidth or its FLOPs at the measured peak, the longer."""
        profile = self.reference.profile(case)
        flops_peak = self.peaks["flops"].get(profile["dtype"], max(self.peaks["flops"].values()))
        return 1e3 * max(profile["bytes"] / self.peaks["bandwidth"], profile["flops"] / flops_peak)

    def _plan(self, case, kept: dict | None = None) -> dict:
        """Calls per window (a roofline-speed kernel fills TARGET_WINDOW_MS, within a share of device memory) and
        the window's fixed cost for 1 and for that many calls, measured with no candidate anywhere (or as kept from
        an earlier evaluation for the same calls per window)."""
        sample = self.maker.make(case, BASELINE_SEED)
        expects = self.reference.expects(case, sample)
        self.reference.profile(case, sample)
        per_set = sum(t.numel() * t.element_size() for t in sample.leaves if isinstance(t, torch.Tensor))
        per_set += sum(nbytes_of(shape, dtype) for shape, dtype in expects)
        share = MEASURER_MEMORY_SHARE / max(1, int(self.job.get("per_gpu", 1)))  # evaluations sharing the card
        budget = share * torch.cuda.get_device_properties(self.device).total_memory
        k = max(1, min(MAX_CALLS_PER_WINDOW, math.ceil(TARGET_WINDOW_MS / max(self.bound_ms(case), 1e-4)),
                       int(budget // max(3 * per_set, 1))))
        window = self.window
        if not (isinstance(kept, dict) and kept.get("k") == k and all(isinstance(kept.get(f), float)
                                                                       for f in ("one_ms", "many_ms"))):
            kept = None  # none kept for this many calls per window
        elif fresh(self.job, kept):
            return {"k": k, "one_ms": kept["one_ms"], "many_ms": kept["many_ms"], "hops_ms": window.hops_ms}
        sets = [CallSet(sample.clone().leaves, expects, sample.tree, sample.buffers)
                for _ in range(k)]  # distinct memory, as a window's inputs are (one source would sit in L2)
        with self.lease.timing():  # a kept plan for other calls per window: measured now, under the lease
            one = window.calibrate_copies(sets[:1])
            many = window.calibrate_copies(sets) if k > 1 else one
        del sets
        self.ch.send({"kind": "plan", "key": self.plan_key, "case": case.label, "k": k, "one_ms": float(one),
                      "many_ms": float(many), "hops_ms": None})
        if kept is not None:  # re-checked: the lesser of the two
            one, many = min(one, kept["one_ms"]), min(many, kept["many_ms"])
        return {"k": k, "one_ms": one, "many_ms": many, "hops_ms": window.hops_ms}
