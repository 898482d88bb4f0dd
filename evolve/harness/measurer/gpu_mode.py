"""The measurer on a GPU: calibrations before the candidate exists (harness/measurer/calibration.py), compiling ahead
off the card (harness/measurer/ahead.py), and each benchmark case timed in windows on the measurer's own stream
(harness/measurer/exchange.py)."""
from __future__ import annotations

import contextlib
import math
import statistics
import time

import torch

from ..shared.formats.base import describe
from ..shared.seeds import BENCH_SEED
from .ahead import CompileAhead
from .calibration import TARGET_WINDOW_MS, Calibration, fixed_ms
from .exchange import CallSet, Fail
from .rungs import Measurer

SETTLED, SETTLED_WINDOWS = 0.01, 4  # a case's windows stop once its last four per-call figures lie within 1%


def settled(per_call: list) -> bool:
    """Whether a case's windows may stop before their budget: its last SETTLED_WINDOWS per-call figures lie within
    SETTLED of their median, so more windows would move the case's figure (the median of all of them) by less than
    the noise between runs. A candidate whose windows disagree is timed for the whole budget, as before."""
    last = per_call[-SETTLED_WINDOWS:]
    if len(last) < SETTLED_WINDOWS or not all(math.isfinite(x) for x in last):
        return False
    middle = statistics.median(last)
    return middle > 0 and (max(last) - min(last)) <= SETTLED * middle


def _build_triton_driver() -> None:
    """Triton compiles a small C module (its CUDA driver utilities) on first use. Built here, by a process that runs
    no candidate code, into a cache the parent copies into each runner's own (a runner never writes it)."""
    try:
        import triton

        triton.runtime.driver.active.utils  # noqa: B018 - building it is the point
    except Exception:  # noqa: BLE001 - a runner then builds its own, only slower
        pass


class GpuMeasurer(Measurer):
    mode, runner, clock = "gpu", "gpu", "cuda-window"

    def __init__(self, job: dict, channel, links: dict, grant_fd: int, runner_pgids: dict):
        super().__init__(job, channel, links, grant_fd, runner_pgids, torch.device("cuda", 0))
        self.timer = None
        self.calibration = Calibration(job, self.problem, self.reference, self.maker, channel, self.lease,
                                       self.callers["gpu"])
        self.ahead = CompileAhead(job, self.problem, self.secret, self.device, self.callers.get("compile"), channel,
                                  self.lease, self.reference)

    def device_name(self) -> str:
        return torch.cuda.get_device_name()

    def uuid(self) -> str:
        """The card's UUID as nvidia-smi prints it (GPU-...), which names it across processes, lanes and hosts."""
        try:
            return f"GPU-{torch.cuda.get_device_properties(0).uuid}"
        except Exception:  # noqa: BLE001 - a torch without the field: the name alone then
            return ""

    # -- set-up
    # ---------------------------------------------------------------------------------------------------------
    def prepare(self) -> None:
        """Compiling ahead overlaps the set-up, unless the set-up times anything: the peaks, baselines and plans are
        measured before any runner has imported the candidate."""
        from .timing import GpuTimer

        calibrating = self.calibration.missing()
        if not calibrating:
            self._start_ahead()
        began = time.perf_counter()
        self.callers["gpu"].connect_gpu()
        _build_triton_driver()
        self.timer = GpuTimer(self.device, budget_s=float(self.job.get("bench_budget_s", 0.4)))
        split = self.prepare_split
        split["connect"] = time.perf_counter() - began
        # every figure of the set-up is a timing; with all of them kept from earlier evaluations there is none
        with self.lease.hold() if calibrating else contextlib.nullcontext():
            split["lease"] = time.perf_counter() - began - split["connect"]  # the lease, and the card quiet
            self.calibration.measure(self.timer, split)
        self.pool.trim()
        torch.cuda.empty_cache()
        if calibrating:
            self._start_ahead()

    def _start_ahead(self) -> None:
        if self.ahead.caller is not None:
            self.ahead.start(str(self.ready.get("compile", {}).get("jail", "")))

    def peaks(self) -> dict | None:
        return self.calibration.peaks

    def ahead_record(self, part: str) -> dict | None:
        return self.ahead.records.get(part)

    # -- the ladder ---------------------------------------------------------------------------------------------------
    def ladder(self) -> None:
        steps = [("load", lambda: self.load("gpu", "load")),
                 ("compile", lambda: self.ahead.take("tests") or self.compile("gpu")),
                 ("run", self.run_rung), ("correctness", self.correctness_rung),
                 ("benchmark", lambda: self.ahead.take("benchmarks") or self.benchmark_rung())]
        all(self.step(self.ch, name, step) for name, step in steps)

    def benchmark_cases(self) -> list:
        return list(self.problem.benchmarks)

    def benchmark_extra(self) -> dict:
        """Where the rung's time went: making inputs and references, the windows, checking timed outputs."""
        mapped = self.callers["gpu"].mapped
        extra = {"ahead": self.ahead.records["benchmarks"]} if self.ahead.records.get("benchmarks") else {}
        extra["split"] = {**{k: round(v, 3) for k, v in self.bench_split.items()},
                          "outputs_mapped": mapped.opened, "mapping_s": round(mapped.open_seconds, 3)}
        return extra

    # -- one case's windows
    # ---------------------------------------------------------------------------------------------
    def time_case(self, case, counter: list, index: int) -> dict:
        plan = self.calibration.plans[case.label]
        budget_s = float(self.job.get("bench_budget_s", 0.4))
        totals: list = []
        fixeds: list = []
        described: list = []

        def window(k: int):
            figures = self._window(case, k, counter, described)
            totals.append(figures["ms"])
            fixed = fixed_ms(plan, k, figures["copies_ms"] + figures["read_ms"])
            fixeds.append(fixed)
            return (figures["ms"] - fixed) / k, figures

        # The first window compiles the shape's specialization in the runner; it is run again once the runner has
        # queued its calls in time (Window.run), so its figure estimates the call.
        started = time.perf_counter()  # the budget counts the first window too
        estimate, _ = window(min(4, plan["k"]))
        k = max(1, min(plan["k"], math.ceil(TARGET_WINDOW_MS / max(estimate, 1e-4))))
        per_call, lates, parts = [], 0, []
        while len(per_call) < 3 or (len(per_call) < 30 and time.perf_counter() - started < budget_s
                                    and not settled(per_call)):
            ms, figures = window(k)
            per_call.append(ms)
            lates += figures["late"]
            parts.append((figures["copies_ms"], figures["runner_ms"], figures["read_ms"]))
        ms = statistics.median(per_call)
        fixed = statistics.median(fixeds[1:])
        window_ms = statistics.median(totals[1:])
        if ms <= 0:
            # The window's own cost, calibrated with no candidate, came out above the window: the calibration does
            # not describe this device now. No figure is better than a wrong one.
            raise Fail(f"{case.label}: the timing window could not be measured (window {window_ms:.4f} ms, its fixed "
                       f"cost {fixed:.4f} ms, {k} calls): a harness fault, not the candidate's")
        quartiles = statistics.quantiles(per_call, n=4) if len(per_call) >= 4 else [ms] * 3
        quiet = self.lease.quiet_waits
        return {"ms": ms, "windows": len(per_call), "calls_per_window": k, "window_ms": window_ms,
                "fixed_ms": round(fixed, 4), "hops_ms": round(plan["hops_ms"], 4), "spin_retries": lates,
                "calibrated_ms": round(fixed_ms(plan, k) - plan["hops_ms"], 4),
                "parts_ms": {name: round(statistics.median(p[i] for p in parts), 4)
                             for i, name in enumerate(("copies", "runner", "read"))},
                "spread": (quartiles[2] - quartiles[0]) / ms, "clock": self.clock, "inputs": described,
                "quiet_s": quiet[-1] if quiet and not index else 0.0,  # the wait for quiet, before the first case
                **self.calibration.baselines.get(case.label, {})}

    def _window(self, case, k: int, counter: list, described: list) -> dict:
        """One window of k calls on fresh inputs, every output checked after; the window's figures."""
        split = self.bench_split
        began = time.perf_counter()
        sets_inputs = []
        for _ in range(k):
            counter[0] += 1
            sets_inputs.append(self.maker.make(case, BENCH_SEED + counter[0]))
        described[:] = describe(sets_inputs[0].leaves)
        expects = self.reference.expects(case, sets_inputs[0])
        sets = [CallSet(inputs.leaves, expects, inputs.tree, inputs.buffers) for inputs in sets_inputs]
        called = time.perf_counter()
        outs, figures = self.callers["gpu"].call(sets, "time", timed=True)
        checking = time.perf_counter()
        self.checks.timed(case, outs, sets_inputs)
        split["inputs"] += called - began
        split["windows"] += checking - called
        split["exchange"] += figures["exchange_ms"] / 1e3
        split["spin"] += figures["spin_ms"] / 1e3
        split["checks"] += time.perf_counter() - checking
        return figures
