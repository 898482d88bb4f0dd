"""The measurer without a GPU: the interpreter runner runs, checks and times the candidate on the host clock, while
the compile-only runner compiles it for sm_90 beside it. A language without an interpreter (Language.without_gpu
"compile") gets the compile rung only."""
from __future__ import annotations

import statistics
import threading
import time

import torch

from ..shared.formats.base import describe
from ..shared.seeds import BASELINE_SEED, BENCH_SEED
from .channel import BufferedChannel
from .exchange import Pool
from .rungs import Measurer
from .timing import cpu_time


class CpuMeasurer(Measurer):
    mode, runner, clock = "cpu", "interpret", "cpu-interpreter"

    def __init__(self, job: dict, channel, links: dict, grant_fd: int, runner_pgids: dict):
        super().__init__(job, channel, links, grant_fd, runner_pgids, torch.device("cpu"))

    def _pool_for(self, name: str) -> Pool:
        # the compile-only runner's calls go on beside the interpreter's: buffers of its own
        return Pool("cpu", self.job["shm"]) if name == "compile" else self.pool

    def device_name(self) -> str:
        return "cpu (Triton interpreter)" if "interpret" in self.callers else "cpu (compile only)"

    def ladder(self) -> None:
        if "interpret" not in self.callers:
            return self._compile_only()
        self._beside()

    def _compile_only(self) -> None:
        """Load and compile for sm_90a; the rungs that need the kernels to run are skipped, with the reason."""
        if self.step(self.ch, "load", lambda: self.load("compile", "load")) \
                and self.step(self.ch, "compile", lambda: self.compile("compile")):
            reason = (f"no GPU: {self.job['language']} has no CPU interpreter, so its kernels were compiled for sm_90a "
                      "and not run; evaluate on a GPU (--device cuda) to check and time them")
            self.ch.skip("run", reason)
            for name in ("correctness", "benchmark"):
                self.ch.skip(name, "no GPU: not run (the run rung says why)")

    def _beside(self) -> None:
        """Two runners share no work: the sm_90 compile (the compile-only runner, in a thread of this process) goes on
        while the interpreter runs the run and correctness rungs. Their rungs are held until the compile rung is
        decided, and reported after it only when it passed: the parent sees the rungs in order."""
        real = self.ch
        if not self.step(real, "load", lambda: self.load("compile", "load")):
            return
        sets: list = []
        if not self.step(real, "compile", lambda: sets.extend(self.maker.compile_sets(self.device)) or True):
            return  # the problem's generator failed: the compile rung says so
        decided: dict = {}
        beside = threading.Thread(target=lambda: decided.update(
            ok=self.step(real, "compile", lambda: self.compile("compile", real, sets))), daemon=True)
        beside.start()
        held = BufferedChannel()
        self.ch = held
        try:
            ok = self.step(held, "run", lambda: self.load("interpret", "run") and self.run_rung()) \
                and self.step(held, "correctness", self.correctness_rung)
        finally:
            self.ch = real
            beside.join()
        if decided.get("ok"):
            held.replay(real)
            if ok:
                self.step(real, "benchmark", self.benchmark_rung)

    def benchmark_cases(self) -> list:
        return list(self.problem.cpu_benchmarks)

    def time_case(self, case, counter: list, index: int) -> dict:
        """The interpreter's calls on the host clock, one at a time, each output checked; the reference's own time
        beside it where the problem has a library baseline."""
        caller = self.callers["interpret"]
        times = []
        started = time.perf_counter()
        budget_s = max(float(self.job.get("bench_budget_s", 0.4)), 0.2)
        while len(times) < 3 or (len(times) < 20 and time.perf_counter() - started < budget_s):
            counter[0] += 1
            inputs, call_set = self.maker.call_set(case, BENCH_SEED + counter[0])
            outs, figures = caller.call([call_set], "time", timed=True)
            times.append(figures["ms"])
            self.checks.timed(case, outs, [inputs])
        figures = {"ms": statistics.median(times), "windows": len(times), "calls_per_window": 1,
                   "clock": self.clock, "inputs": describe(inputs.leaves)}
        if self.reference.has_baseline:
            samples = [self.maker.make(case, BASELINE_SEED + i) for i in range(2)]
            if self.reference.times_own_baselines:  # a foreign problem's, where its code runs
                figures["torch_ms"] = self.reference.time_baselines(samples, compiled=False)["torch_ms"]
            else:
                figures["torch_ms"] = cpu_time(self.reference.baseline_for(samples[0]), [s.leaves for s in samples],
                                               budget_s=budget_s)["ms"]
        return figures
