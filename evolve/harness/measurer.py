"""The measurer: the trusted process of an evaluation. `python -m evolve.harness.measurer JOB OUT RUNNER...`.

It never imports candidate code. It makes every input (from the problem's seeds mixed with a secret only it and the
parent know) and every reference, measures the device's peaks and the library baselines before any runner has
imported the candidate, drives the runner through the rungs, reads the outputs back itself, compares them, and times
the calls from outside the runner (harness/exchange.py). Its observations go to the parent over a pipe the runner
does not have, signed with a key that reached it on the job pipe. The parent turns them into the verdict.
"""
from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import math
import os
import signal
import statistics
import sys
import threading
import time
import traceback

import torch

from . import compiled, lifeline, metrics
from .exchange import CallSet, Caller, Fail, Pool, RunnerLost, nbytes_of
from .formats import load_problem, reference_for
from .formats.base import describe, dtype_name
from .privilege import UID_ENV
from .protocol import RUNNER
from .timing import cpu_time
from .wire import Closed, Link, short_error

# Seed offsets of the harness's own inputs (mixed with the evaluation's secret): the problem's seeds are small.
BENCH_SEED = 1 << 40  # + a running count: every timed call of a candidate sees new values
BASELINE_SEED = 1 << 41  # two fixed sets for timing the library baselines, which are not candidates
COMPILE_SEED = 1 << 42  # the compile rung's calls
WARM_SEED = 1 << 43  # the call before a benchmark case's windows

QUIET_PROBE_MS = 1.0  # a launch and wait of one tiny kernel, above which another process's work holds up the card
QUIET_STREAK = 3
QUIET_WAIT_S = 10.0  # then the evaluations stopped for the lease are evicted (evaluated again later)
TARGET_WINDOW_MS = 2.0  # work in one window for a kernel at the roofline: well above the window's own noise
MAX_CALLS_PER_WINDOW = 256
SETTLED, SETTLED_WINDOWS = 0.01, 4  # a case's windows stop once its last four per-call figures lie within 1%
PRECOMPILE_WAIT_S = 60.0  # the GPU runner's compile rung waits this long for the compile-only runner, then goes on
MEASURER_MEMORY_SHARE = 0.2  # of the device's memory, for one window's inputs, copies and read-back
RECHECK_S = 1800.0  # a kept calibration (peaks, a window's fixed costs) older than this is measured again


def _settled(per_call: list) -> bool:
    """Whether a case's windows may stop before their budget: its last SETTLED_WINDOWS per-call figures lie within
    SETTLED of their median, so more windows would move the case's figure (the median of all of them) by less than
    the noise between runs. A candidate whose windows disagree is timed for the whole budget, as before."""
    last = per_call[-SETTLED_WINDOWS:]
    if len(last) < SETTLED_WINDOWS or not all(math.isfinite(x) for x in last):
        return False
    middle = statistics.median(last)
    return middle > 0 and (max(last) - min(last)) <= SETTLED * middle


def _mix(secret: int, seed: int, case_seed: int | None = None) -> int:
    text = f"{secret}:{seed}" if case_seed is None else f"{secret}:{case_seed}:{seed}"
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:7], "little")


def _triton_version() -> str:
    """Triton's version without importing it (the measurer has no use for Triton itself)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("triton")
    except PackageNotFoundError:
        return "unknown"


def _build_triton_driver() -> None:
    """Triton compiles a small C module (its CUDA driver utilities) on first use. Built here, by a process that runs
    no candidate code, into a cache the parent copies into each runner's own (a runner never writes it)."""
    try:
        import triton

        triton.runtime.driver.active.utils  # noqa: B018 - building it is the point
    except Exception:  # noqa: BLE001 - a runner then builds its own, only slower
        pass


def _uuid() -> str:
    """The card's UUID as nvidia-smi prints it (GPU-...), which names it across processes, lanes and hosts."""
    try:
        return f"GPU-{torch.cuda.get_device_properties(0).uuid}"
    except Exception:  # noqa: BLE001 - a torch without the field: the name alone then
        return ""


class Channel:
    """Signed JSON lines to the parent."""

    def __init__(self, fd: int, key: bytes):
        self.fd, self.key = fd, key

    def send(self, message: dict) -> None:
        payload = json.dumps(message, default=str).encode()
        mac = hmac.new(self.key, payload, hashlib.sha256).hexdigest().encode()
        data = mac + b" " + payload + b"\n"
        while data:
            data = data[os.write(self.fd, data):]

    def rung(self, name, ok, reason=None, seconds=0.0, **figures):
        self.send({"kind": "rung", "name": name, "ok": bool(ok), "reason": reason, "seconds": round(seconds, 4),
                   "metrics": figures})


class Held(Channel):
    """Messages kept back, to go to the parent later in order (or never)."""

    def __init__(self):
        self.messages: list[dict] = []

    def send(self, message: dict) -> None:
        self.messages.append(message)

    def replay(self, channel: Channel) -> None:
        for message in self.messages:
            channel.send(message)


class Measurer:
    def __init__(self, job: dict, channel: Channel, links: dict, grant_fd: int):
        self.job, self.ch = job, channel
        self.grant_fd = grant_fd
        self.runner_pgid_by_name: dict[str, int] = {}  # each runner's process group (its own session)
        self.quiet_waits: list[float] = []  # seconds each timed section waited for the card to be quiet
        self.quiet_probe = None  # the tiny tensor wait_quiet launches its kernel on
        self.holding = False  # whether this evaluation holds the card's lease now
        self.mode = job["mode"]
        self.problem = load_problem(job["problem"])
        self.reference = reference_for(self.problem)
        self.device = torch.device("cuda", 0) if self.mode == "gpu" else torch.device("cpu")
        self.secret = int(job["secret"])
        self.pool = Pool("gpu" if self.mode == "gpu" else "cpu", job["shm"])
        # without a GPU the compile-only runner's calls go on beside the interpreter's: buffers of its own
        self.callers = {name: Caller(name, link, Pool("cpu", job["shm"]) if name == "compile" and self.mode != "gpu"
                                     else self.pool, self.device) for name, link in links.items()}
        self.ready: dict = {}
        self.timer = None
        self.baselines: dict = {}
        self.peaks: dict | None = None
        self.plans: dict = {}  # benchmark case -> calls per window and the window's calibrated fixed cost
        self.first: dict = {}
        self.prepare_split: dict = {}  # seconds of the set-up's parts, for the record
        self.ahead: dict = {}  # compiling ahead (precompile_start): when it started, the parts still to take, records

    # -- inputs and references ---------------------------------------------------------------------------------------
    def inputs(self, case, seed: int, device=None):
        """The problem's inputs for this case and seed (an Inputs: leaves, and the structure where the format keeps
        one), from the seed mixed with the evaluation's secret."""
        return self.reference.generate(case, _mix(self.secret, seed, case.seed), device or self.device)


    # -- the card's timing lease (harness/lease.py) ------------------------------------------------------------------
    @contextlib.contextmanager
    def lease(self):
        """Work whose figures a verdict is made of: under the card's lease, every other evaluation on the card stopped,
        and (GPU) once the card is quiet."""
        self.ch.send({"kind": "lease", "act": "take"})
        while True:
            try:
                grant = os.read(self.grant_fd, 1)
            except InterruptedError:
                continue
            if not grant:
                raise Fail("the harness could not grant the card's timing lease (its parent closed the pipe)")
            break
        try:
            self.holding = True
            if self.mode == "gpu":  # b"q": other evaluations on the card were stopped for it
                self.quiet_waits.append(self.wait_quiet() if grant == b"q" else 0.0)
            yield
        finally:
            self.holding = False
            self.ch.send({"kind": "lease", "act": "give"})

    def timing(self):
        """The lease for a measurement, unless this evaluation holds it already."""
        return contextlib.nullcontext() if self.holding else self.lease()

    def wait_quiet(self) -> float:
        """Wait until no other process's GPU work runs on the card: a tiny kernel of this process's, launched and
        waited for, takes QUIET_PROBE_MS or less QUIET_STREAK times in a row (another context's kernel on the card
        holds it up). The evaluations stopped for this lease cannot queue more; what they had queued is waited
        for, and after QUIET_WAIT_S they are evicted. This evaluation's own runners are stopped while it probes (an
        honest runner has no work between calls). Returns the seconds waited."""
        started = time.perf_counter()
        if self.quiet_probe is None:
            self.quiet_probe = torch.zeros(1, device=self.device)
        probe = self.quiet_probe
        streak, evicted = 0, False
        self._signal_runners(signal.SIGSTOP)
        try:
            while streak < QUIET_STREAK:
                began = time.perf_counter()
                probe.add_(1)
                torch.cuda.synchronize()
                streak = streak + 1 if (time.perf_counter() - began) * 1e3 <= QUIET_PROBE_MS else 0
                if streak == 0 and time.perf_counter() - started > QUIET_WAIT_S * (2 if evicted else 1):
                    if evicted:
                        raise Fail(f"the card stayed busy for {time.perf_counter() - started:.0f} s after every other "
                                   "evaluation on it was stopped and evicted: work this candidate queued outside its "
                                   "calls, or another program on the GPU")
                    self.ch.send({"kind": "lease", "act": "evict"})
                    evicted = True
        finally:
            self._signal_runners(signal.SIGCONT)
        return round(time.perf_counter() - started, 4)

    def _signal_runners(self, signum: int) -> None:
        for pgid in self.runner_pgid_by_name.values():
            try:
                os.killpg(pgid, signum)
            except (ProcessLookupError, PermissionError):
                pass

    # -- set-up, before any runner has the candidate -------------------------------------------------------------------
    def hello(self) -> None:
        for name, caller in self.callers.items():
            self.ready[name] = caller.recv("ready")
        first = next(iter(self.ready.values()))
        device = torch.cuda.get_device_name() if self.mode == "gpu" else "cpu (Triton interpreter)"
        self.ch.send({"kind": "device", "mode": self.mode, "device": device, "torch": torch.__version__,
                      "triton": _triton_version(), "jail": first["jail"], "uuid": _uuid() if self.mode == "gpu" else ""})

    @property
    def device_key(self) -> str:
        name = torch.cuda.get_device_name() if self.mode == "gpu" else "cpu"
        return f"{name}|torch {torch.__version__}|triton {_triton_version()}|peaks v3"

    @property
    def baseline_key(self) -> str:
        digest = hashlib.sha256(self.problem.reference_path.read_bytes()).hexdigest()[:12]
        return f"{self.device_key}|{self.problem.name}|{digest}"

    def prepare_gpu(self) -> None:
        from . import peaks
        from .timing import GpuTimer

        caller = self.callers["gpu"]
        began = time.perf_counter()
        caller.connect_gpu()
        _build_triton_driver()
        self.timer = GpuTimer(self.device, budget_s=float(self.job.get("bench_budget_s", 0.4)))
        self.prepare_split["connect"] = time.perf_counter() - began
        # every figure of the set-up is a timing; with all of them kept from earlier evaluations there is none
        with self.lease() if self._calibrations_missing() else contextlib.nullcontext():
            self._calibrate(time.perf_counter() - began)
        self.pool.trim()
        torch.cuda.empty_cache()

    @property
    def kept_plans(self) -> dict:
        """The window's calibrations kept for this card model, problem and --per-gpu (harness/ladder.py)."""
        return (self.job.get("plans") or {}).get(self.plan_key) or {}

    def _fresh(self, entry, stamp: str = "checked") -> bool:
        """Whether a kept calibration was measured (or re-checked) within the job's recheck_s: an older one is
        measured again, and the two merged, rather than believed for good."""
        try:
            return time.time() - float(entry[stamp]) < float(self.job.get("recheck_s", RECHECK_S))
        except (KeyError, TypeError, ValueError):
            return False

    def _calibrations_missing(self) -> bool:
        kept = self.kept_plans
        baselines = (self.job.get("baselines") or {}).get(self.baseline_key, {})
        return (not self._fresh((self.job.get("peaks") or {}).get(self.device_key))
                or not isinstance(kept.get("hops_ms"), float) or not self._fresh(kept, "hops_checked")
                or any(not self._fresh(kept.get(case.label))
                       or (self.reference.has_baseline and case.label not in baselines)
                       for case in self.problem.benchmarks))

    def _calibrate(self, asked: float) -> None:
        """The device's peaks (unless cached), the library baselines (unless cached), the window's switches and
        each benchmark case's plan."""
        from . import peaks

        caller = self.callers["gpu"]
        kept_peaks = (self.job.get("peaks") or {}).get(self.device_key)
        cached = self._fresh(kept_peaks)
        split = self.prepare_split
        split["lease"] = asked - split["connect"]  # waiting for the lease and the card to be quiet
        mark = time.perf_counter()
        # a peak measured while something else used the card can only come out low: each the highest seen
        self.peaks = kept_peaks if cached else peaks.highest(kept_peaks, peaks.measure(self.timer, self.device))
        split["peaks"] = time.perf_counter() - mark
        mark = time.perf_counter()
        self.ch.send({"kind": "peaks", "key": self.device_key, "cached": bool(cached),
                      "bandwidth": float(self.peaks["bandwidth"]),
                      "flops": {k: float(self.peaks["flops"][k]) for k in ("bfloat16", "float32", "float16")}})
        self.baselines = dict((self.job.get("baselines") or {}).get(self.baseline_key, {}))
        for case in self.problem.benchmarks:
            if case.label not in self.baselines and self.reference.has_baseline:
                figures = self._time_baselines([self.inputs(case, BASELINE_SEED + i) for i in range(2)])
                self.baselines[case.label] = figures
                self.ch.send({"kind": "baseline", "key": self.baseline_key, "case": case.label,
                              "torch_ms": figures.get("torch_ms"), "compile_ms": figures.get("compile_ms"),
                              "compile_error": figures.get("compile_error")})
        split["baselines"] = time.perf_counter() - mark
        # The window's calibrations are kept per card model, problem and --per-gpu, each the fastest seen (the
        # parent keeps them, harness/ladder.py): an evaluation measures only what no earlier one has.
        kept = self.kept_plans
        mark = time.perf_counter()
        kept_hops = kept.get("hops_ms") if isinstance(kept.get("hops_ms"), float) else None
        if kept_hops is not None and self._fresh(kept, "hops_checked"):
            caller.window.hops_ms = kept_hops
        else:  # measured now (again, where kept: a cost measured while the card was busy only comes out high)
            with self.timing():
                caller.window.calibrate_hops()
            self.ch.send({"kind": "plan", "key": self.plan_key, "case": None, "k": None, "one_ms": None,
                          "many_ms": None, "hops_ms": float(caller.window.hops_ms)})
            if kept_hops is not None:
                caller.window.hops_ms = min(caller.window.hops_ms, kept_hops)
        split["hops"] = time.perf_counter() - mark
        mark = time.perf_counter()
        for case in self.problem.benchmarks:
            self.plans[case.label] = self._plan(case, kept.get(case.label))
        split["plans"] = time.perf_counter() - mark

    def _time_baselines(self, samples) -> dict:
        import torch._dynamo as dynamo

        for knob in ("recompile_limit", "cache_size_limit"):
            if hasattr(dynamo.config, knob):
                setattr(dynamo.config, knob, 256)
        baseline = self.reference.baseline_for(samples[0])
        sets = [s.leaves for s in samples]
        figures = {"torch_ms": self.timer.time(baseline, sets)["ms"]}
        try:
            compiled = torch.compile(baseline, dynamic=False)
            figures["compile_ms"] = self.timer.time(compiled, sets)["ms"]
        except Exception as exc:  # noqa: BLE001 - torch.compile missing a compiler is not the candidate's fault
            figures["compile_error"] = str(exc)[:200]
        return figures

    def bound_ms(self, case) -> float:
        profile = self.reference.profile(case)
        flops_peak = self.peaks["flops"].get(profile["dtype"], max(self.peaks["flops"].values()))
        return 1e3 * max(profile["bytes"] / self.peaks["bandwidth"], profile["flops"] / flops_peak)

    @property
    def plan_key(self) -> str:
        return f"{self.baseline_key}|per-gpu {int(self.job.get('per_gpu', 1))}|plans v1"

    def _plan(self, case, kept: dict | None = None) -> dict:
        """Calls per window (a roofline-speed kernel fills TARGET_WINDOW_MS, within a share of device memory) and
        the window's fixed cost for 1 and for that many calls, measured with no candidate anywhere (or as kept from
        an earlier evaluation for the same calls per window)."""
        sample = self.inputs(case, BASELINE_SEED)
        expects = self.reference.expects(case, sample)
        self.reference.profile(case, sample)
        per_set = sum(t.numel() * t.element_size() for t in sample.leaves if isinstance(t, torch.Tensor))
        per_set += sum(nbytes_of(shape, dtype) for shape, dtype in expects)
        share = MEASURER_MEMORY_SHARE / max(1, int(self.job.get("per_gpu", 1)))  # evaluations sharing the card
        budget = share * torch.cuda.get_device_properties(self.device).total_memory
        k = max(1, min(MAX_CALLS_PER_WINDOW, math.ceil(TARGET_WINDOW_MS / max(self.bound_ms(case), 1e-4)),
                       int(budget // max(3 * per_set, 1))))
        window = self.callers["gpu"].window
        if not (isinstance(kept, dict) and kept.get("k") == k and all(isinstance(kept.get(f), float)
                                                                       for f in ("one_ms", "many_ms"))):
            kept = None  # none kept for this many calls per window
        elif self._fresh(kept):
            return {"k": k, "one_ms": kept["one_ms"], "many_ms": kept["many_ms"], "hops_ms": window.hops_ms}
        sets = [CallSet(sample.clone().leaves, expects, sample.tree)
                for _ in range(k)]  # distinct memory, as a window's inputs are (one source would sit in L2)
        with self.timing():  # a kept plan for other calls per window: measured now, under the lease
            one = window.calibrate_copies(sets[:1])
            many = window.calibrate_copies(sets) if k > 1 else one
        del sets
        self.ch.send({"kind": "plan", "key": self.plan_key, "case": case.label, "k": k, "one_ms": float(one),
                      "many_ms": float(many), "hops_ms": None})
        if kept is not None:  # re-checked: the lesser of the two
            one, many = min(one, kept["one_ms"]), min(many, kept["many_ms"])
        return {"k": k, "one_ms": one, "many_ms": many, "hops_ms": window.hops_ms}

    def fixed_ms(self, plan: dict, k: int, observed: float | None = None) -> float:
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

    # -- compiling ahead, off the card -------------------------------------------------------------------------------
    def _shapes_ahead(self) -> dict:
        """The inputs of the compile rung's calls ("tests") and of each benchmark case's first call ("benchmarks"),
        described (shape, strides, dtype; other values as they are) from the problem's generator run under
        FakeTensorMode: no memory, no data."""
        from torch._subclasses.fake_tensor import FakeTensorMode

        parts = {"tests": [(case, COMPILE_SEED) for case in self.problem.tests],
                 "benchmarks": [(case, WARM_SEED) for case in self.problem.benchmarks]}
        # A reference of its own, with the modules it imports put back after: a format that keeps what its generator
        # first made (KernelBench keeps the first model) must not keep fake tensors for the real calls.
        modules = dict(sys.modules)
        try:
            reference = reference_for(self.problem)
        finally:
            for name, module in modules.items():
                if sys.modules.get(name) is not module:
                    sys.modules[name] = module
        described: dict = {}
        for part, wanted in parts.items():
            sets = described[part] = []
            for case, seed in wanted:
                try:
                    with FakeTensorMode():
                        inputs = reference.generate(case, _mix(self.secret, seed, case.seed), self.device)
                        # the runner's inputs are contiguous copies (shared memory), whatever the generator's strides
                        descs = [{"shape": list(v.shape), "stride": list(torch.empty(v.shape, device="meta").stride()),
                                  "dtype": dtype_name(v)}
                                 if isinstance(v, torch.Tensor) else {"value": v} for v in inputs.leaves]
                    json.dumps(descs)
                except Exception:  # noqa: BLE001 - a generator that needs real data: that case compiles on the card
                    continue
                sets.append({"inputs": descs, "tree": inputs.tree})
        return described

    def precompile_start(self) -> None:
        """GPU mode: hand the candidate to the compile-only runner (no GPU device files in its jail, so it goes on
        while other evaluations hold the card's lease) with the shapes the GPU runner will call it on: the compile
        rung's first, then the benchmark's, each answered on its own (precompile_take)."""
        caller = self.callers.get("compile")
        if self.mode != "gpu" or caller is None:
            return
        started = time.perf_counter()
        if str(self.ready.get("compile", {}).get("jail", "")).startswith("landlock"):
            self.ch.send({"kind": "lease", "act": "offcard"})
        try:
            caller.send({"kind": "load", "candidate": self.job["candidate"],
                         "beside": bool(self.problem.extra.get("beside"))})
            for sets in self._shapes_ahead().values():
                caller.send({"kind": "precompile", "sets": sets, "launchers": True})
        except RunnerLost:
            return
        self.ahead = {"started": started, "pending": ["tests", "benchmarks"]}

    def precompile_take(self, part: str) -> None:
        """Before the GPU runner first calls the candidate on a part's shapes: wait (up to PRECOMPILE_WAIT_S from the
        start) for the compile-only runner's answer on that part, and copy what its Triton cache holds into the GPU
        runner's; after the last part, stop it. Both run the same candidate, and nothing the copy brings decides a
        verdict (a kernel missing or not matching is compiled by the GPU runner under its own key)."""
        if part not in self.ahead.get("pending", ()):
            return
        caller = self.callers["compile"]
        waited = time.perf_counter()
        answer = None
        try:
            while answer is None:
                # past the deadline, an answer already here is still taken (time stopped for other evaluations'
                # leases runs on this clock)
                left = max(0.0, PRECOMPILE_WAIT_S - (time.perf_counter() - self.ahead["started"]))
                if not caller.answered(left):
                    break
                message = caller.link.recv()
                if message["kind"] == "precompiled":
                    answer = message
                elif message["kind"] == "failed":
                    break
        except Exception:  # noqa: BLE001 - a runner that died or spoke nonsense: no head start
            pass
        pending = self.ahead["pending"]
        del pending[: pending.index(part) + 1]
        if answer is None:
            pending.clear()
        if not pending:
            self._signal_runner("compile", signal.SIGKILL)
        record = {"waited_s": round(time.perf_counter() - waited, 3)}
        if answer:
            record.update(seconds=answer["seconds"], sets=answer["sets"], kernels=answer["kernels"],
                          launchers=answer["launchers"])
        # what the runner has written so far (a kernel's files appear under their final names complete, the group
        # file that lists them last), whether or not it answered
        owner = os.environ.get(UID_ENV)  # the GPU runner runs as this user (harness/privilege.py): its files too
        record["files"] = compiled.copy_cache(os.path.join(os.getcwd(), "compile", "triton"),
                                              os.path.join(os.getcwd(), "gpu", "triton"), int(owner) if owner else None)
        self.ahead[part] = record

    def _signal_runner(self, name: str, signum: int) -> None:
        pgid = self.runner_pgid_by_name.get(name)
        if pgid:
            try:
                os.killpg(pgid, signum)
            except (ProcessLookupError, PermissionError):
                pass

    # -- rungs ------------------------------------------------------------------------------------------------------
    def load(self, runner: str, rung: str) -> bool:
        started = time.perf_counter()
        caller = self.callers[runner]
        caller.send({"kind": "load", "candidate": self.job["candidate"], "beside": bool(self.problem.extra.get("beside"))})
        try:
            caller.recv("loaded")
        except Fail as exc:
            self.ch.rung(rung, False, str(exc), time.perf_counter() - started, **exc.details)
            return False
        if rung == "load":
            self.ch.rung("load", True, None, time.perf_counter() - started)
        return True

    def compile_sets(self, runner: str) -> list:
        """The compile rung's calls: the test cases' inputs (made before any other rung's, in this thread)."""
        device = self.device if runner == "gpu" else torch.device("cpu")
        sets = []
        for case in self.problem.tests:
            inputs = self.inputs(case, COMPILE_SEED, device)
            sets.append(CallSet(inputs.leaves, [], inputs.tree))
        return sets

    def compile(self, runner: str, ch=None, sets=None) -> bool:
        """ch: where the rung goes (another than self.ch where it runs beside the interpreter's rungs, in a thread of
        its own: then sets are made beforehand, so that thread draws no inputs)."""
        ch = ch or self.ch
        started = time.perf_counter()
        sets = sets if sets is not None else self.compile_sets(runner)
        staged = time.perf_counter()
        try:
            report = self.callers[runner].call(sets, "compile", dump=self.job.get("dump") or False)
        except Fail as exc:
            ch.rung("compile", False, str(exc), time.perf_counter() - started, **exc.details)
            return False
        ahead = self.ahead.get("tests")
        ch.rung("compile", True, None, time.perf_counter() - started, kernels=report["kernels"],
                     compile_seconds=report["compile_seconds"], cache_hits=report["cache_hits"], fresh=report["fresh"],
                     **({"ahead": ahead} if ahead else {}),
                     split={"inputs": round(staged - started, 3), "runner_calls": report["calls_seconds"],
                            "runner_inputs": report["inputs_seconds"], "runner_describe": report["describe_seconds"]})
        error = report["error"]
        if error and ("CUDA error" in error or "illegal" in error.lower()):
            # The kernels compiled but running them broke the CUDA context; nothing more can run in the runner.
            ch.rung("run", False, f"crashed: {error}", time.perf_counter() - started)
            return False
        return True

    def check(self, runner: str, case, seeds) -> list[dict]:
        """Fresh inputs for each seed, the reference on a pristine CPU copy in float64, one call, every element."""
        device = self.device if runner == "gpu" else torch.device("cpu")
        sets, refs_all, kept = [], [], []
        for seed in seeds:
            inputs = self.inputs(case, seed, device)
            refs = self.reference.reference(inputs, on_cpu=True)
            refs_all.append(refs)
            kept.append(inputs)  # the measurer's own copy: the runner only ever sees the shared one
            # each output's shape from this input's own reference (it may depend on the seed), dtype from the problem
            dtypes = [dtype for _, dtype in self.reference.expects(case, inputs)]
            sets.append(CallSet(inputs.leaves, [(list(r.shape), d) for r, d in zip(refs, dtypes)], inputs.tree))
        try:
            outs = self.callers[runner].call(sets, "check", poison=True)
        except Fail as exc:
            raise Fail(f"{case.label}: {exc}") from None
        results = []
        for out, refs, inputs, s in zip(outs, refs_all, kept, sets):
            worst, reason = None, None
            for o, r, (_, dtype) in zip(out, refs, s.expects):
                if not metrics.all_finite(o):
                    bad = int(torch.count_nonzero(torch.logical_not(torch.isfinite(o))))
                    raise Fail(f"{case.label}: output not finite ({bad} NaN/Inf of {o.numel()})")
                tol = self.problem.tolerance_for(case, dtype)
                m = metrics.error_metrics(o.to("cpu"), r.to("cpu"), tol.floor, tol.rtol)
                reason = reason or metrics.judge(m, tol.rtol, tol.min_cosine)
                worst = metrics.worst_of(worst, m)
            reason = reason or self.reference.check(inputs, out, refs)
            worst = worst or metrics.error_metrics(torch.zeros(1), torch.zeros(1), 1.0, 0.0)
            worst["reason"] = f"{case.label}: {reason}" if reason else None
            worst["dtype"] = s.expects[0][1] if s.expects else "output"
            results.append(worst)
        return results

    def run_rung(self, runner: str) -> bool:
        started = time.perf_counter()
        try:
            for case in self.problem.tests:
                self.first[case] = self.check(runner, case, self.problem.seeds[:1])[0]
        except Fail as exc:
            self.ch.rung("run", False, str(exc), time.perf_counter() - started)
            return False
        self.ch.rung("run", True, None, time.perf_counter() - started, cases=len(self.problem.tests))
        return True

    def correctness_rung(self, runner: str) -> bool:
        started = time.perf_counter()
        per_dtype: dict = {}
        checks = 0
        try:
            for case in self.problem.tests:
                results = [self.first.pop(case)] if case in self.first else []
                if len(self.problem.seeds) > len(results):
                    results += self.check(runner, case, self.problem.seeds[len(results):])
                for m in results:
                    checks += 1
                    key = case.dtype or m["dtype"]
                    per_dtype[key] = metrics.worst_of(per_dtype.get(key), m)
                    if m["reason"]:
                        raise Fail(m["reason"])
        except Fail as exc:
            self.ch.rung("correctness", False, str(exc), time.perf_counter() - started, per_dtype=per_dtype)
            return False
        for m in per_dtype.values():
            m.pop("reason", None)
            m.pop("dtype", None)
        self.ch.rung("correctness", True, metrics.summarize(per_dtype), time.perf_counter() - started,
                     per_dtype=per_dtype, checks=checks)
        return True

    def _timed_check(self, case, outs, sets_inputs) -> None:
        """Every output of a window against its reference. The float outputs' errors are gathered on the device, one
        figure per tolerance (harness/compare.py on a GPU), and read once (a window holds up to 256 calls); only a
        window that fails is gone through output by output, for the message."""
        from . import compare

        worst: dict = {}  # (floor, rtol) -> the largest relative error of the outputs judged by it, on the device
        for out, inputs in zip(outs, sets_inputs):
            refs = self.reference.reference(inputs, on_cpu=False)
            for o, r in zip(out, refs):
                if not o.is_floating_point():
                    if not torch.equal(o, r.to(device=o.device, dtype=o.dtype)):
                        raise Fail(f"{case.label}: a timed call returned a wrong output (integers differ)")
                    continue
                tol = self.problem.tolerance_for(case, dtype_name(o))
                key = (tol.floor, tol.rtol)
                if key not in worst:
                    worst[key] = torch.zeros(1, dtype=torch.float32, device=o.device)
                if compare.fits(o, r):
                    compare.worst_into(worst[key], o, r, tol.floor)
                else:
                    torch.maximum(worst[key], metrics.max_rel_tensor(o, r, tol.floor).reshape(1), out=worst[key])
            reason = self.reference.check(inputs, out, refs)
            del refs
            if reason:
                raise Fail(f"{case.label}: a timed call returned a wrong output ({reason})")
        if not worst:
            return
        read = torch.cat(list(worst.values())).tolist()  # one wait for the device
        excess = max(float(w) - rtol for w, (_, rtol) in zip(read, worst))  # float64: no rounding; NaN stays NaN
        if any(w != w for w in read):
            excess = float("nan")
        if not excess <= 0:
            self._timed_check_each(case, outs, sets_inputs)
            raise Fail(f"{case.label}: a timed call returned a wrong output (an error of {excess:.3g} over "
                       "its tolerance)")

    def _timed_check_each(self, case, outs, sets_inputs) -> None:
        for out, inputs in zip(outs, sets_inputs):
            refs = self.reference.reference(inputs, on_cpu=False)
            for o, r in zip(out, refs):
                tol = self.problem.tolerance_for(case, dtype_name(o))
                if not o.is_floating_point():  # integers exactly, whatever their size (float32 holds 24 bits)
                    if not torch.equal(o, r.to(device=o.device, dtype=o.dtype)):
                        raise Fail(f"{case.label}: a timed call returned a wrong output (integers differ)")
                    continue
                worst = metrics.max_rel(o, r, tol.floor)
                if not worst <= tol.rtol:
                    raise Fail(f"{case.label}: a timed call returned a wrong output (max_rel={worst:.3g})")
            reason = self.reference.check(inputs, out, refs)
            del refs
            if reason:
                raise Fail(f"{case.label}: a timed call returned a wrong output ({reason})")

    def _warm(self, case) -> None:
        """One call of the case before its windows, outside the card's lease: the runner compiles the shape's
        specialization (and an autotuner tunes) while other evaluations may use the card. Its output is checked too."""
        began = time.perf_counter()
        gpu = self.mode == "gpu"
        inputs = self.inputs(case, WARM_SEED, self.device if gpu else torch.device("cpu"))
        outs = self.callers["gpu" if gpu else "interpret"].call(
            [CallSet(inputs.leaves, self.reference.expects(case, inputs), inputs.tree)], "time")
        self._timed_check(case, outs, [inputs])
        self.bench_split["warm"] += time.perf_counter() - began

    def _gpu_case(self, case, counter: list) -> dict:
        caller = self.callers["gpu"]
        plan = self.plans[case.label]
        budget_s = float(self.job.get("bench_budget_s", 0.4))

        split = self.bench_split

        def window(k: int):
            began = time.perf_counter()
            sets_inputs = []
            for _ in range(k):
                counter[0] += 1
                sets_inputs.append(self.inputs(case, BENCH_SEED + counter[0]))
            described[:] = describe(sets_inputs[0].leaves)
            expects = self.reference.expects(case, sets_inputs[0])
            sets = [CallSet(inputs.leaves, expects, inputs.tree) for inputs in sets_inputs]
            called = time.perf_counter()
            outs, figures = caller.call(sets, "time", timed=True)
            checking = time.perf_counter()
            self._timed_check(case, outs, sets_inputs)
            split["inputs"] += called - began
            split["windows"] += checking - called
            split["exchange"] += figures["exchange_ms"] / 1e3
            split["spin"] += figures["spin_ms"] / 1e3
            split["checks"] += time.perf_counter() - checking
            totals.append(figures["ms"])
            fixed = self.fixed_ms(plan, k, figures["copies_ms"] + figures["read_ms"])
            fixeds.append(fixed)
            return (figures["ms"] - fixed) / k, figures

        totals: list = []
        fixeds: list = []
        described: list = []

        # The first window compiles the shape's specialization in the runner; it is run again once the runner has
        # queued its calls in time (Window.run), so its figure estimates the call.
        started = time.perf_counter()  # the budget counts the first window too
        estimate, _ = window(min(4, plan["k"]))
        k = max(1, min(plan["k"], math.ceil(TARGET_WINDOW_MS / max(estimate, 1e-4))))
        per_call, lates, parts = [], 0, []
        while len(per_call) < 3 or (len(per_call) < 30 and time.perf_counter() - started < budget_s
                                    and not _settled(per_call)):
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
        return {"ms": ms, "windows": len(per_call), "calls_per_window": k, "window_ms": window_ms,
                "fixed_ms": round(fixed, 4), "hops_ms": round(plan["hops_ms"], 4), "spin_retries": lates,
                "calibrated_ms": round(self.fixed_ms(plan, k) - plan["hops_ms"], 4),
                "parts_ms": {name: round(statistics.median(p[i] for p in parts), 4)
                             for i, name in enumerate(("copies", "runner", "read"))},
                "spread": (quartiles[2] - quartiles[0]) / ms, "clock": "cuda-window", "inputs": described}

    def _cpu_case(self, case, counter: list) -> dict:
        caller = self.callers["interpret"]
        times = []
        started = time.perf_counter()
        budget_s = max(float(self.job.get("bench_budget_s", 0.4)), 0.2)
        while len(times) < 3 or (len(times) < 20 and time.perf_counter() - started < budget_s):
            counter[0] += 1
            inputs = self.inputs(case, BENCH_SEED + counter[0], torch.device("cpu"))
            outs, figures = caller.call([CallSet(inputs.leaves, self.reference.expects(case, inputs), inputs.tree)],
                                        "time", timed=True)
            times.append(figures["ms"])
            self._timed_check(case, outs, [inputs])
        figures = {"ms": statistics.median(times), "windows": len(times), "calls_per_window": 1,
                   "clock": "cpu-interpreter", "inputs": describe(inputs.leaves)}
        if self.reference.has_baseline:
            samples = [self.inputs(case, BASELINE_SEED + i, torch.device("cpu")) for i in range(2)]
            figures["torch_ms"] = cpu_time(self.reference.baseline_for(samples[0]), [s.leaves for s in samples],
                                           budget_s=budget_s)["ms"]
        return figures

    def benchmark_rung(self) -> bool:
        started = time.perf_counter()
        shapes, counter = [], [0]
        gpu = self.mode == "gpu"
        self.bench_split = {"warm": 0.0, "inputs": 0.0, "windows": 0.0, "checks": 0.0, "exchange": 0.0, "spin": 0.0}
        cases = list(self.problem.benchmarks if gpu else self.problem.cpu_benchmarks)
        try:
            # Every case's untimed first call, outside the lease (specializations compile, autotuners tune), then all
            # of the cases' windows under one lease: one stop of the card's other evaluations, one wait for quiet.
            for case in cases:
                self._warm(case)
            with self.lease():
                for index, case in enumerate(cases):
                    figures = self._gpu_case(case, counter) if gpu else self._cpu_case(case, counter)
                    if gpu:  # the wait for quiet, before the first case's windows
                        figures["quiet_s"] = self.quiet_waits[-1] if self.quiet_waits and not index else 0.0
                    profile = self.reference.profile(case)
                    record = {"case": case.label, "shape": dict(case.shape), "dtype": case.dtype or profile["dtype"],
                              **({"params": dict(case.params)} if case.params else {}), **figures,
                              **(self.baselines.get(case.label, {}) if gpu else {}),
                              "bytes": profile["bytes"], "flops": profile["flops"]}
                    shapes.append({k: (round(v, 6) if isinstance(v, float) and math.isfinite(v) else v)
                                   for k, v in record.items()})
        except Fail as exc:
            self.ch.rung("benchmark", False, str(exc), time.perf_counter() - started, shapes=shapes)
            return False
        extra = {}
        if gpu:  # where the rung's time went: making inputs and references, the windows, checking timed outputs
            mapped = self.callers["gpu"].mapped
            if self.ahead.get("benchmarks"):
                extra["ahead"] = self.ahead["benchmarks"]
            extra["split"] = {**{k: round(v, 3) for k, v in self.bench_split.items()},
                              "outputs_mapped": mapped.opened, "mapping_s": round(mapped.open_seconds, 3)}
        self.ch.rung("benchmark", True, None, time.perf_counter() - started, shapes=shapes,
                     clock="cuda-window" if gpu else "cpu-interpreter", **extra)
        return True

    # -- the ladder ---------------------------------------------------------------------------------------------------
    def ladder(self) -> None:
        if self.mode == "gpu":
            steps = [("load", lambda: self.load("gpu", "load")),
                     ("compile", lambda: self.precompile_take("tests") or self.compile("gpu")),
                     ("run", lambda: self.run_rung("gpu")), ("correctness", lambda: self.correctness_rung("gpu")),
                     ("benchmark", lambda: self.precompile_take("benchmarks") or self.benchmark_rung())]
            all(self._step(self.ch, name, step) for name, step in steps)
            return
        self._cpu_ladder()

    def _cpu_ladder(self) -> None:
        """Without a GPU two runners share no work: the sm_90 compile (the compile-only runner, in a thread of this
        process) goes on while the interpreter runs the run and correctness rungs. Their rungs are held until the
        compile rung is decided, and reported after it only when it passed: the parent sees the rungs in order."""
        real = self.ch
        if not self._step(real, "load", lambda: self.load("compile", "load")):
            return
        sets = self.compile_sets("compile")
        decided: dict = {}
        beside = threading.Thread(target=lambda: decided.update(
            ok=self._step(real, "compile", lambda: self.compile("compile", real, sets))), daemon=True)
        beside.start()
        held = Held()
        self.ch = held
        try:
            ok = self._step(held, "run", lambda: self.load("interpret", "run") and self.run_rung("interpret")) \
                and self._step(held, "correctness", lambda: self.correctness_rung("interpret"))
        finally:
            self.ch = real
            beside.join()
        if decided.get("ok"):
            held.replay(real)
            if ok:
                self._step(real, "benchmark", self.benchmark_rung)

    def _step(self, ch, name: str, step) -> bool:
        """One rung: whether it passed; its failure (a lost runner, a refusal, a crash) said on ch."""
        try:
            return bool(step())
        except RunnerLost as exc:
            if exc.runner in self.callers:
                self.callers[exc.runner].release()
            ch.send({"kind": "runner_lost", "rung": name, "runner": exc.runner, "detail": str(exc)})
        except Fail as exc:
            ch.rung(name, False, str(exc))
        except torch.OutOfMemoryError as exc:
            ch.rung(name, False, f"out of device memory while measuring: {short_error(exc)}")
        except Exception as exc:  # noqa: BLE001 - e.g. a CUDA context the runner's kernel broke
            ch.rung(name, False, f"crashed: {short_error(exc)}", log=traceback.format_exc()[-4000:])
        return False


def _read_job(fd: int) -> dict:
    chunks = []
    while True:
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(fd)
    return json.loads(b"".join(chunks))


def main(argv) -> int:
    started = time.time()
    mode = argv[3]
    grant_fd = int(argv[4])  # the card's timing lease: a byte from the parent when it is this evaluation's
    specs = [spec.split(":") for spec in argv[5:]]  # per runner: name, read fd, write fd, pid
    lifeline.watch(pgids=[int(pid) for *_, pid in specs])  # the runners die with the parent too
    if mode == "gpu":
        torch.cuda.init()
        torch.empty(1, device="cuda")
        from torch._subclasses.fake_tensor import FakeTensorMode

        with FakeTensorMode():  # its first use imports seconds of modules: paid here, before the job (_shapes_ahead)
            torch.randn(2, 2, device="cuda")
    warm_s = time.time() - started
    job = _read_job(int(argv[1]))
    job_at = time.time()
    channel = Channel(int(argv[2]), bytes.fromhex(job["key"]))
    links = {name: Link(int(read_fd), int(write_fd), RUNNER) for name, read_fd, write_fd, _ in specs}
    sys.setrecursionlimit(10000)
    measurer = Measurer(job, channel, links, grant_fd)
    measurer.runner_pgid_by_name = {name: int(pid) for name, *_, pid in specs}
    try:
        prepare_started = time.perf_counter()
        measurer.hello()
        if mode == "gpu":
            # compiling ahead overlaps the set-up, unless the set-up times anything: the peaks, baselines and plans
            # are measured before any runner has imported the candidate
            calibrating = measurer._calibrations_missing()
            if not calibrating:
                measurer.precompile_start()
            measurer.prepare_gpu()
            if calibrating:
                measurer.precompile_start()
        runner_warm = max(float(r["warm_s"]) for r in measurer.ready.values())
        channel.send({"kind": "setup", "job_at": job_at, "warm_s": round(warm_s, 3), "runner_warm_s": runner_warm,
                      "prepare_s": round(time.perf_counter() - prepare_started, 3),
                      "prepare_split": {k: round(v, 3) for k, v in measurer.prepare_split.items()}})
        measurer.ladder()
    except RunnerLost as exc:
        channel.send({"kind": "runner_lost", "rung": "load", "runner": exc.runner, "detail": str(exc)})
    except Fail as exc:
        channel.rung("load", False, f"the runner failed to start: {exc}")
    except Exception as exc:  # noqa: BLE001 - e.g. device memory another process holds: not the candidate's doing
        channel.rung("load", False, f"the harness could not prepare the device before loading the candidate: "
                                    f"{short_error(exc)}", log=traceback.format_exc()[-4000:])
    finally:
        for link in links.values():
            try:
                link.send({"kind": "quit"})
            except Closed:
                pass
        measurer.pool.trim()
        channel.send({"kind": "done"})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
