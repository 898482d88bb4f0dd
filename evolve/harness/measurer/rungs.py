"""The rungs both measuring modes climb (harness/measurer/gpu_mode.py, harness/measurer/cpu_mode.py): load, compile,
run, correctness and benchmark, each said on the signed channel. A mode says how it prepares, which runner it checks and
times, how it times one benchmark case, and in which order its rungs run."""
from __future__ import annotations

import abc
import math
import time
import traceback

import torch

from ..shared import metrics
from ..shared.formats import load_problem
from ..shared.seeds import WARM_SEED
from ..shared.wire import short_error
from . import drawn_shapes
from .checks import Checks
from .exchange import Caller, Fail, Pool, ProblemFault, RunnerLost
from .inputs import InputMaker
from .problem_link import reference_for
from .race import Race
from .timing_lease import TimingLease


RUNGS = ("load", "compile", "run", "correctness", "benchmark")  # the rungs measured here, in order


class Measurer(abc.ABC):
    mode = ""  # "gpu" or "cpu", as the parent asked
    runner = ""  # the runner whose calls are checked and timed
    clock = ""  # what timed them, as the benchmark rung records it

    def __init__(self, job: dict, channel, links: dict, grant_fd: int, runner_pgids: dict, device: torch.device):
        self.job, self.ch, self.device = job, channel, device
        self.problem = load_problem(job["problem"])
        self.reference = reference_for(self.problem, device)  # a foreign problem's runs in a jailed process
        self.secret = int(job["secret"])
        self.pool = Pool("gpu" if device.type == "cuda" else "cpu", job["shm"])
        self.callers = {name: Caller(name, link, self._pool_for(name), device) for name, link in links.items()}
        for caller in self.callers.values():  # GPU MODE: the task's check, not a dtype, judges a float output
            caller.any_float = bool(self.problem.extra.get("any_float_output"))
        self.maker = InputMaker(self.problem, self.reference, self.secret, device)
        self.checks = Checks(self.problem, self.reference, self.maker)
        self.drawn = drawn_shapes.draw(self.problem, self.secret)  # checked besides the listed test shapes
        self.lease = TimingLease(channel, grant_fd, device, runner_pgids)
        self.ready: dict = {}  # each runner's hello
        self.first: dict = {}  # the run rung's check of each test case, the correctness rung's first
        self.prepare_split: dict = {}  # seconds of the set-up's parts, for the record
        self.bench_split: dict = {}

    def _pool_for(self, name: str) -> Pool:
        return self.pool

    # -- what a mode says ---------------------------------------------------------------------------------------------
    @abc.abstractmethod
    def device_name(self) -> str:
        """Each mode's own."""

    def prepare(self) -> None:
        """Set-up before any runner has the candidate."""

    @abc.abstractmethod
    def ladder(self) -> None:
        """Each mode's own."""

    @abc.abstractmethod
    def benchmark_cases(self) -> list:
        """Each mode's own."""

    @abc.abstractmethod
    def time_case(self, case, counter: list, index: int) -> dict:
        """Each mode's own."""

    def benchmark_extra(self) -> dict:
        """What the benchmark rung records beside its cases."""
        return {}

    def ahead_record(self, part: str) -> dict | None:
        """What compiling ahead brought to a part (GPU mode), for the rung's record."""
        return None

    # -- set-up -------------------------------------------------------------------------------------------------------
    def hello(self) -> None:
        for name, caller in self.callers.items():
            self.ready[name] = caller.recv("ready")
        first = next(iter(self.ready.values()))
        from .calibration import triton_version

        self.ch.send({"kind": "device", "mode": self.mode, "device": self.device_name(), "torch": torch.__version__,
                      "triton": triton_version(), "jail": first["jail"], "uuid": self.uuid()})

    def uuid(self) -> str:
        return ""

    # -- rungs
    # ----------------------------------------------------------------------------------------------------------
    def load(self, runner: str, rung: str) -> bool:
        started = time.perf_counter()
        caller = self.callers[runner]
        caller.send({"kind": "load", "candidate": self.job["candidate"],
                     "beside": bool(self.problem.extra.get("beside"))})
        try:
            caller.recv("loaded")
        except Fail as exc:
            self.ch.rung(rung, False, str(exc), time.perf_counter() - started, **exc.details)
            return False
        if rung == "load":
            self.ch.rung("load", True, None, time.perf_counter() - started)
        return True

    def compile(self, runner: str, ch=None, sets=None) -> bool:
        """ch: where the rung goes (another than self.ch where it runs beside the interpreter's rungs, in a thread of
        its own: then sets are made beforehand, so that thread draws no inputs)."""
        ch = ch or self.ch
        started = time.perf_counter()
        sets = sets if sets is not None else self.maker.compile_sets(self.device)
        staged = time.perf_counter()
        try:
            report = self.callers[runner].call(sets, "compile", dump=self.job.get("dump") or False)
        except Fail as exc:
            ch.rung("compile", False, str(exc), time.perf_counter() - started, **exc.details)
            return False
        ahead = self.ahead_record("tests")
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

    def run_rung(self) -> bool:
        started = time.perf_counter()
        try:
            for case in self.problem.tests:
                self.first[case] = self.checks.correctness(self.callers[self.runner], case, self.problem.seeds[:1],
                                                           self.device)[0]
        except Fail as exc:
            self.ch.rung("run", False, str(exc), time.perf_counter() - started)
            return False
        self.ch.rung("run", True, None, time.perf_counter() - started, cases=len(self.problem.tests))
        return True

    def correctness_rung(self) -> bool:
        started = time.perf_counter()
        per_dtype: dict = {}
        checks = 0
        drawn = {"drawn": [case.label for case in self.drawn]} if self.drawn else \
            {"listed_only": drawn_shapes.why_none(self.problem)}
        try:
            for case in self.problem.tests:
                results = [self.first.pop(case)] if case in self.first else []
                if len(self.problem.seeds) > len(results):
                    results += self.checks.correctness(self.callers[self.runner], case,
                                                       self.problem.seeds[len(results):], self.device)
                checks += self._judged(case, results, per_dtype)
            for case in self.drawn:
                try:
                    results = self.checks.correctness(self.callers[self.runner], case, self.problem.seeds[:1],
                                                      self.device)
                    checks += self._judged(case, results, per_dtype)
                except Fail as exc:
                    raise Fail(f"{exc} (a shape drawn for this evaluation from the problem's [accepts]: a kernel must "
                               "be right on every shape the problem accepts, not only the listed ones)") from None
        except Fail as exc:
            self.ch.rung("correctness", False, str(exc), time.perf_counter() - started, per_dtype=per_dtype, **drawn)
            return False
        for m in per_dtype.values():
            m.pop("reason", None)
            m.pop("dtype", None)
        self.ch.rung("correctness", True, metrics.summarize(per_dtype), time.perf_counter() - started,
                     per_dtype=per_dtype, checks=checks, **drawn)
        return True

    @staticmethod
    def _judged(case, results: list, per_dtype: dict) -> int:
        """The checks' worst figures folded into per_dtype; how many there were. Fail with the first reason."""
        for m in results:
            key = case.dtype or m["dtype"]
            per_dtype[key] = metrics.worst_of(per_dtype.get(key), m)
            if m["reason"]:
                raise Fail(m["reason"])
        return len(results)

    def _warm(self, case) -> None:
        """One call of the case before its windows, outside the card's lease: the runner compiles the shape's
        specialization (and an autotuner tunes) while other evaluations may use the card. Its output is checked too."""
        began = time.perf_counter()
        inputs, call_set = self.maker.call_set(case, WARM_SEED)
        outs = self.callers[self.runner].call([call_set], "time")
        self.checks.timed(case, outs, [inputs])
        self.bench_split["warm"] += time.perf_counter() - began

    def benchmark_rung(self) -> bool:
        started = time.perf_counter()
        shapes, counter = [], [0]
        self.bench_split = {"warm": 0.0, "inputs": 0.0, "windows": 0.0, "checks": 0.0, "exchange": 0.0, "spin": 0.0}
        cases = self.benchmark_cases()
        raced = None
        try:
            cases = self._asked_cases(cases)
            profiles = {case.label: self.reference.profile(case) for case in cases}  # bytes, flops: before the lease
            race = self._race(cases, profiles)
            cases = race.order(cases) if race is not None else cases
            # Every case's untimed first call, outside the lease (specializations compile, autotuners tune), then all
            # of the cases' windows under one lease: one stop of the card's other evaluations, one wait for quiet.
            for case in cases:
                self._warm(case)
            with self.lease.hold():
                for index, case in enumerate(cases):
                    figures = self.time_case(case, counter, index)
                    profile = profiles[case.label]
                    record = {"case": case.label, "shape": dict(case.shape), "dtype": case.dtype or profile["dtype"],
                              **({"params": dict(case.params)} if case.params else {}), **figures,
                              "bytes": profile["bytes"], "flops": profile["flops"]}
                    shapes.append({k: (round(v, 6) if isinstance(v, float) and math.isfinite(v) else v)
                                   for k, v in record.items()})
                    if race is not None and race.lost(case.label, figures["ms"]):
                        raced = race.record()
                        break
        except Fail as exc:
            self.ch.rung("benchmark", False, str(exc), time.perf_counter() - started, shapes=shapes)
            return False
        self.ch.rung("benchmark", True, None, time.perf_counter() - started, shapes=shapes, clock=self.clock,
                     **({"raced": raced} if raced else {}), **self.benchmark_extra())
        return True

    def peaks(self) -> dict | None:
        """The card's peaks, where the mode has a roofline (GPU)."""
        return None

    def _race(self, cases: list, profiles: dict) -> Race | None:
        """The race the job sets (EvalOptions.race_below), where there is a roofline to race against."""
        below, peaks = self.job.get("race_below"), self.peaks()
        if below is None or not peaks or self.job.get("bench_cases"):
            return None
        return Race(float(below), peaks, profiles, cases)

    def _asked_cases(self, cases: list) -> list:
        """The cases the job asks for by label (every one where it names none)."""
        asked = [str(label) for label in self.job.get("bench_cases") or ()]
        unknown = [label for label in asked if label not in {case.label for case in cases}]
        if unknown:
            raise Fail(f"no benchmark case {unknown[0]!r}; the cases are: {', '.join(c.label for c in cases)}")
        return [case for case in cases if case.label in asked] if asked else cases

    def _past_last(self, ch, name: str) -> bool:
        """Whether the job stops before this rung (EvalOptions.last_rung); if so, it and every later one skipped."""
        last = self.job.get("last_rung") or RUNGS[-1]
        if name not in RUNGS or last not in RUNGS or RUNGS.index(name) <= RUNGS.index(last):
            return False
        for later in RUNGS[RUNGS.index(name):]:
            ch.skip(later, f"not asked for: the evaluation stopped after the {last} rung")
        return True

    def _memory_note(self) -> str:
        """The card's memory, for an out-of-memory reason: a case's inputs and outputs live in the measurer, in the
        shared buffers and in the runner at once, so a case needs several times its own size."""
        try:
            free, total = torch.cuda.mem_get_info(self.device)
        except Exception:  # noqa: BLE001 - no card, or a context a kernel broke
            return ""
        return f" ({free / 2**30:.1f} of {total / 2**30:.1f} GiB free on the card)"

    def step(self, ch, name: str, step) -> bool:
        """One rung: whether it passed; its failure (a lost runner, a refusal, a crash) said on ch."""
        if self._past_last(ch, name):
            return False
        try:
            if self.device.type == "cuda":  # the rung before's cached blocks: the runner and the shared slabs need them
                torch.cuda.empty_cache()
            return bool(step())
        except RunnerLost as exc:
            if exc.runner in self.callers:
                self.callers[exc.runner].release()
            ch.send({"kind": "runner_lost", "rung": name, "runner": exc.runner, "detail": str(exc)})
        except ProblemFault as exc:  # whose fault, the parent decides (ladder.py)
            ch.rung(name, False, str(exc), generator_failed=exc.details)
        except Fail as exc:
            ch.rung(name, False, str(exc))
        except torch.OutOfMemoryError as exc:
            ch.rung(name, False, f"out of device memory while measuring{self._memory_note()}: {short_error(exc)}")
        except Exception as exc:  # noqa: BLE001 - e.g. a CUDA context the runner's kernel broke
            ch.rung(name, False, f"crashed: {short_error(exc)}", log=traceback.format_exc()[-4000:])
        return False
