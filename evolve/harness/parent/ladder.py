"""`evaluate`: one candidate up the rung ladder; the verdict is decided here, in the parent.

The candidate runs in a jailed runner process; a measurer process that never imports it makes the inputs, reads the
outputs back, compares and times them, and reports to this process over a signed pipe (harness/parent/sandbox.py). This
module applies the problem's policy, computes the roofline from the measured peaks, and marks the rungs after the
first failure as skipped. Nothing the runner says reaches it except through the measurer's checks.
"""
from __future__ import annotations

import math
import os
import secrets
import shutil
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from ...defaults import EVAL_TIMEOUT_S, MAX_MEMORY_GB
from ...lang import get as get_language
from ...lang import missing as missing_language
from ..measurer import peaks as peak_cache
from ..runner import jail
from ..runner.static.check import screen, summary
from ..shared import compiled
from ..shared.formats import load_problem
from ..shared.protocol import SHAPE_ROW
from ..shared.roofline import ROOFLINE_CEILING, bound_seconds, fitness_of
from ..shared.wire import Malformed, check
from . import device_share, generator_fault
from .check_file import check_file
from .lease import FIRST_CALIBRATION, Evicted
from .problem_facts import cannot_run_here
from .sandbox import STARTED_AHEAD, EvaluationProcesses, runners
from .verdict import RUNGS, BenchmarkRow, RungResult, Verdict

GONE_WAIT_S = 60.0  # an evaluation's processes ending (a CUDA context takes seconds to let go)

# What had not returned when an evaluation ran out of time, by the rung it was on (the reason a model reads).
_NEVER_ENDS = "a kernel that waits at a barrier or a warp shuffle some of its threads never reach runs until the limit"
UNFINISHED = {
    "compile": f"its first calls (its kernels compiled and run once) had not returned; {_NEVER_ENDS}",
    "run": f"its calls on the test inputs had not returned; {_NEVER_ENDS}",
    "correctness": "its outputs on the test inputs had not all been checked",
    "benchmark": "its timed calls had not finished",
}



def default_cache_dir() -> Path:
    return Path.home() / ".cache" / "evolve"


@dataclass(frozen=True)
class EvalOptions:
    device: str = "auto"  # auto | cuda | cpu
    timeout_s: float = EVAL_TIMEOUT_S
    max_rss_gb: float = MAX_MEMORY_GB
    bench_budget_s: float = 0.4
    dump_dir: str | None = None
    static_check: bool = True  # off only to test the sandbox's dynamic defences on their own
    cache_dir: str = field(default_factory=lambda: str(default_cache_dir()))
    keep_work: bool = False
    prewarm: bool = False  # start the next evaluation's child while this one runs (for loops over many candidates)
    gpu: str | None = None  # the card to use, as CUDA_VISIBLE_DEVICES names it; None: the first visible
    sass: bool = True  # with dump_dir: the SASS too (cuobjdump, ~0.3 s a kernel, in the evaluation's own time)
    per_gpu: int = 1  # evaluations sharing the card at once (parent/lease.py): with prewarm, as many started ahead
    threads: int = 0  # CPU threads for each of an evaluation's processes (0: torch's default, every core)
    fork_server: bool = True  # fork the processes from one with torch imported (parent/forkserver.py), not start them
    language: str | None = None  # the candidate language (evolve/lang), one the problem accepts; None: its first
    last_rung: str = "benchmark"  # the last rung climbed ("compile", "correctness"): the rest skipped (agent tools)
    bench_cases: tuple[str, ...] = ()  # the benchmark cases timed, by label (none: all); fewer give no fitness
    race_below: float | None = None  # stop timing once the best possible fitness is below this (measurer/race.py)


def gpu_available() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except Exception:  # noqa: BLE001 - a broken torch install means no GPU for us
        return False


def on_gpu(device: str) -> bool:
    """Whether an evaluation asked for on `device` (auto, cuda, cpu) runs in GPU mode."""
    return device == "cuda" or (device == "auto" and gpu_available())


def device_name(device: str) -> str:
    """The name a run records for where it evaluates: the card's, or the interpreter's."""
    if not on_gpu(device):
        return "cpu (Triton interpreter)"
    import torch

    return torch.cuda.get_device_name()


def _versions() -> dict:
    import torch
    import triton

    return {"torch": torch.__version__, "triton": triton.__version__}


def evaluate(candidate, problem_dir, options: EvalOptions = EvalOptions(), on_rung=None) -> Verdict:
    """Evaluate one candidate file against one problem folder.

    on_rung(RungResult) is called as each rung is decided (for live progress).
    """
    if options.last_rung not in RUNGS[:-1]:
        raise ValueError(f"last_rung {options.last_rung!r}: one of {', '.join(RUNGS[:-1])}")
    evaluation = _Evaluation(Path(candidate).resolve(), load_problem(problem_dir), options, on_rung)
    if evaluation.screen() and evaluation.inputs_here():
        evaluation.run()
    return evaluation.verdict()


@dataclass
class _MeasurerReport:
    """What the measurer said of itself, for the verdict."""
    device: str | None = None
    versions: dict = field(default_factory=dict)
    jail: str | None = None
    uuid: str | None = None
    setup: list = field(default_factory=list)  # its set-up records, with the parent's own figures added
    peaks: dict | None = None  # the card's peaks as it measured or took them
    lost: dict | None = None  # the runner it lost, and at which rung


class _Evaluation:
    """One candidate's evaluation as the parent sees it: the rungs decided so far, one verdict per rung, and what
    the measurer said."""

    def __init__(self, candidate: Path, problem, options: EvalOptions, on_rung=None):
        self.candidate, self.problem, self.options, self.on_rung = candidate, problem, options, on_rung
        self.mode = "gpu" if on_gpu(options.device) else "cpu"
        self.language = options.language or problem.languages[0]
        self.secret = secrets.randbits(62)
        self.cache = Path(options.cache_dir)
        self.trusted = jail.abi_version() > 0  # caches persist only where no runner can write them
        self.rungs: dict[str, RungResult] = {}  # decided so far, by name
        self.said = _MeasurerReport()
        self.crew: EvaluationProcesses | None = None
        self.share: device_share.DeviceShare | None = None  # its runners' share of the card's memory, where counted
        self.work: tuple = ()  # the crew's folder, kept for a look (EvalOptions.keep_work)
        self.first = None  # the card's first calibration turn, where this evaluation waits for or takes it
        self.generator_failure: RungResult | None = None  # the rung the problem's generator failed, not yet judged
        self.spawned = self.ran = 0.0  # when the job went to the crew, and when its verdict was in
        self.calibration_wait_s = 0.0  # waited for the card's first evaluation in this process to calibrate
        self.began = time.time()

    def decide(self, rung: RungResult) -> None:
        if rung.name in self.rungs:
            return  # one verdict per rung
        self.rungs[rung.name] = rung
        if self.on_rung:
            self.on_rung(rung)

    # -- what the measurer says, as it says it ----------------------------------------------------------------------
    def on_message(self, message: dict) -> None:
        handle = {"rung": self._rung, "skip": self._skip, "device": self._device, "setup": self._setup,
                  "peaks": self._peaks, "baseline": self._baseline, "plan": self._plan}.get(message["kind"])
        if handle is not None:
            handle(message)
        elif message["kind"] == "runner_lost":
            self.said.lost = message

    def _rung(self, message: dict) -> None:
        figures = dict(message["metrics"]) if isinstance(message["metrics"], dict) else {}
        for decided_here in ("problem_fault", "evaluate_again"):  # whose fault a failure is, only this process says
            figures.pop(decided_here, None)
        party = getattr(self.crew, "party", None)
        if party is not None:  # the part of the rung's seconds this parent saw it stopped (--per-gpu)
            now = time.monotonic()
            stopped = party.stopped_between(now - max(message["seconds"], 0.0), now)
            if stopped > 0:
                figures["stopped_s"] = round(stopped, 3)
        rung = RungResult(message["name"], "ok" if message["ok"] else "failed", message["reason"], message["seconds"],
                          figures)
        if "generator_failed" in figures:  # whose fault, decided once the candidate's processes are gone
            self.generator_failure = self.generator_failure or rung
        else:
            self.decide(rung)

    def _skip(self, message: dict) -> None:
        self.decide(RungResult(message["name"], "skipped", message["reason"]))

    def _device(self, message: dict) -> None:
        self.said.device = message["device"]
        self.said.versions = {"torch": message["torch"], "triton": message["triton"]}
        self.said.jail = message["jail"]
        self.said.uuid = message["uuid"] or None

    def _setup(self, message: dict) -> None:
        if self.first is not None:  # its calibrations are kept: the card's other evaluations may start
            self.first.set()
        self.said.setup.append({"mode": self.mode, "wait_s": round(message["job_at"] - self.spawned, 3),
                                "warm_s": message["warm_s"], "runner_warm_s": message["runner_warm_s"],
                                "prepare_s": message["prepare_s"], "gpu": self.options.gpu,
                                **({"prepare_split": message["prepare_split"]}
                                   if isinstance(message["prepare_split"], dict) else {})})

    def _peaks(self, message: dict) -> None:
        self.said.peaks = message
        if not message["cached"]:  # measured, or re-checked: each peak the highest seen, and when
            kept = _load(self.cache, self.trusted, "peaks.json").get(message["key"])
            measured = {"bandwidth": message["bandwidth"], "flops": message["flops"]}
            _store(self.cache, self.trusted, message["key"],
                   {**peak_cache.highest(kept, measured), "checked": time.time()})

    def _baseline(self, message: dict) -> None:
        entry = dict(_load(self.cache, self.trusted, "baselines.json").get(message["key"]) or {})
        entry[message["case"]] = {k: message[k] for k in ("torch_ms", "compile_ms", "compile_error")
                                  if message[k] is not None}
        _store(self.cache, self.trusted, message["key"], entry, "baselines.json")

    def _plan(self, message: dict) -> None:
        entry = dict(_load(self.cache, self.trusted, "plans.json").get(message["key"]) or {})
        _store(self.cache, self.trusted, message["key"], _fastest_plan(entry, message), "plans.json")

    # -- the rungs ----------------------------------------------------------------------------------------------------
    def screen(self) -> bool:
        """The static check, in a checker process of its own (harness/parent/check_file.py: resolving the names a file
        writes imports library modules); whether it passed."""
        problem, options = self.problem, self.options
        started = time.perf_counter()
        try:
            language, entry = self.language, problem.extra.get("entry", "custom_kernel(*inputs)")
            allowed = problem.extra.get("allow_modules", ())
            absent = language in problem.languages and missing_language(get_language(language))
            if language not in problem.languages:
                problems = [f"{problem.name} accepts candidates in {', '.join(problem.languages)}, not {language}"]
            elif absent:  # no check can resolve its names, and no runner could load it
                problems = [absent]
            elif options.static_check:
                problems = check_file(self.candidate, problem.forbid_calls, problem.forbid_modules, allowed, language,
                                      entry, fork=options.fork_server)
            else:  # only what no candidate passes without, so the defences behind the check are tested alone
                problems = screen(self.candidate, strict=False, language=language, entry=entry)
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - the checker must not take the parent down
            problems = [f"the static check could not judge the file: {type(exc).__name__}: {exc}"[:500]]
        if problems:
            self.decide(RungResult("load", "failed", summary(problems), time.perf_counter() - started,
                                   {"violations": problems}))
        return not problems

    def inputs_here(self) -> bool:
        """Whether this machine can make the problem's inputs; a foreign problem that makes them on CUDA, on a
        machine without a GPU, is told in one line before any process starts."""
        reason = cannot_run_here(self.problem) if self.mode == "cpu" else None
        if reason:
            self.decide(RungResult("load", "failed", reason, 0.0))
        return not reason

    def run(self) -> None:
        """The rest of the ladder in the crew's processes; a rung they left undecided is failed with the reason."""
        options = self.options
        if not runners(self.mode, get_language(self.language).without_gpu):
            self.decide(RungResult("load", "skipped", f"no GPU: {self.language} kernels can be neither run nor "
                                                      "compiled without one; evaluate on a GPU (--device cuda)"))
            for name in RUNGS[1:-1]:  # nothing of this language runs on a CPU: no process is started
                self.decide(RungResult(name, "skipped", "no GPU: not run (the load rung says why)"))
            return
        # Processes started ahead are used only by evaluations that ask for them (evolve run's loop): any other
        # evaluation starts its own, so its verdict does not depend on what ran before it in this process.
        made = (self.mode, str(self.cache), options.gpu, options.threads, options.fork_server, self.language)
        crew = self.crew = STARTED_AHEAD.take(*made) if options.prewarm else EvaluationProcesses(*made)
        try:
            result = self._run_crew(crew)
        finally:
            if self.first is not None:
                self.first.set()
            discarding = time.time()
            if options.keep_work:
                self.work = (str(crew.work),)
            else:
                crew.discard()
            if self.said.setup and self.ran:  # the parent's own time before the job and after the verdict
                self.said.setup[-1]["before_s"] = round(self.spawned - self.began, 3)
                self.said.setup[-1]["after_s"] = round(time.time() - self.ran, 3)
                self.said.setup[-1]["discard_s"] = round(time.time() - discarding, 3)  # killing its processes
        if self.generator_failure is not None:
            crew.wait_gone(GONE_WAIT_S)  # what the candidate held is free before its inputs are made without it
            self.decide(generator_fault.judged(self.generator_failure, self.problem.path, self.mode == "gpu",
                                               options.gpu, options.fork_server))
        pending = [name for name in RUNGS[:-1] if name not in self.rungs]
        if pending and not any(r.failed for r in self.rungs.values()):
            self._undecided(result, pending)
        self._not_charged_for_neighbours()

    def _undecided(self, result, pending: list) -> None:
        """The first rung the crew left undecided, failed with why the evaluation ended."""
        options = self.options
        lost = self.said.lost
        if lost is not None and result.finished:
            reason = result.death(options.timeout_s, options.max_rss_gb, lost["runner"])
            rung = lost["rung"] if lost["rung"] in pending else pending[0]
        elif not result.finished:
            reason, rung = result.death(options.timeout_s, options.max_rss_gb), pending[0]
            if result.timed_out and rung in UNFINISHED:
                reason += f": {UNFINISHED[rung]}"
        else:
            reason, rung = "the evaluation ended without deciding this rung", pending[0]
        self.decide(RungResult(rung, "failed", reason, result.seconds))

    def _not_charged_for_neighbours(self) -> None:
        """A failure while another evaluation on the card held more than its share of its memory is evaluated
        again (harness/parent/device_share.py); a problem's own fault stays one."""
        failed = next((self.rungs[name] for name in RUNGS if name in self.rungs and self.rungs[name].failed), None)
        why = self.share.neighbour_over() if self.share is not None and failed is not None else None
        if why and not failed.metrics.get("problem_fault"):
            self.rungs[failed.name] = replace(failed, reason=f"{failed.reason}; {why}",
                                              metrics={**failed.metrics, "evaluate_again": True})

    def _run_crew(self, crew):
        """Hand the crew the candidate and its job; its result. Nothing an earlier evaluation's runner wrote is handed
        on: every evaluation of a source starts from the same runner-visible state, so none can tell a first
        evaluation from a re-timing or an audit."""
        problem, options, cache, trusted, mode = self.problem, self.options, self.cache, self.trusted, self.mode
        shutil.copyfile(self.candidate, crew.candidate_path())
        os.chmod(crew.candidate_path(), 0o644)  # a runner that gave up root reads it too
        for name, path in problem.beside_files().items():  # files the format lets a candidate import (GPU MODE task.py)
            shutil.copyfile(path, crew.candidate_path().parent / name)
            os.chmod(crew.candidate_path().parent / name, 0o644)
        driver = cache / "triton-driver"
        if trusted and mode == "gpu" and driver.is_dir():  # built by a measurer, never by a runner
            compiled.copy_cache(str(driver), str(crew.compiled_cache()), crew.runner_uid)
        if mode == "gpu" and options.per_gpu > 1:  # the card's calibrations measured once, not per evaluation
            turn_began = time.monotonic()
            self.first = FIRST_CALIBRATION.turn((str(cache), options.gpu, str(problem.path)), options.timeout_s)
            self.calibration_wait_s = time.monotonic() - turn_began
        job = {"mode": mode, "language": self.language, "problem": str(problem.path),
               "candidate": str(crew.candidate_path()),
               "secret": self.secret, "bench_budget_s": options.bench_budget_s, "per_gpu": options.per_gpu,
               "dump": (True if options.sass else "files") if options.dump_dir else False,
               "last_rung": options.last_rung, "bench_cases": list(options.bench_cases),
               "race_below": options.race_below,
               "peaks": _load(cache, trusted, "peaks.json"),
               "baselines": _load(cache, trusted, "baselines.json"),
               "plans": _load(cache, trusted, "plans.json")}
        self.spawned = time.time()
        if options.prewarm:  # the next evaluation's processes start up while this one runs
            STARTED_AHEAD.prepare(mode, str(cache), options.gpu, options.per_gpu, options.threads, options.fork_server,
                           self.language)
        if self.share is None and mode == "gpu" and device_share.SNAPSHOTS.available() is None:
            self.share = device_share.DeviceShare(crew.work.name, options.per_gpu)
        result = crew.run(job, options.timeout_s, options.max_rss_gb, self.on_message, self.share)
        self.ran = time.time()
        setup = self.said.setup
        if crew.party is not None and setup:  # time stopped for other evaluations' leases, for the record
            setup[-1]["stopped_s"] = round(crew.party.stopped_s, 3)
            setup[-1]["memory_poll_s"] = round(result.memory_poll_s, 3)
            setup[-1]["memory_read_s"] = round(result.memory_read_s, 3)
        if setup:  # the waits for the card, which say nothing of how long the candidate's own evaluation takes
            setup[-1]["card_wait_s"] = round(result.card_wait_s + self.calibration_wait_s, 3)
        if crew.party is not None and crew.party.evicted:
            raise Evicted("stopped and evicted so that another evaluation on the card could be timed (work "
                          "queued before the stop kept the card busy)")
        if options.dump_dir:
            _copy_dumps(crew.work, Path(options.dump_dir))
        return result

    def verdict(self) -> Verdict:
        """The ladder in order (a rung after a failure skipped), with the roofline where every rung passed."""
        rungs, mode, said = self.rungs, self.mode, self.said
        shapes, fitness = (), None
        if all(r.ok for r in rungs.values()) and "benchmark" in rungs:
            roofline, shapes, fitness = _roofline(rungs["benchmark"], said.peaks, mode,
                                                  {case.label: case.weight for case in self.problem.benchmarks})
            partial = _partial(self.options, rungs["benchmark"]) if not roofline.failed else None
            if partial:  # a figure over some of the cases never ranks a kernel
                roofline, fitness = RungResult("roofline", "skipped", partial, 0.0, roofline.metrics), None
            self.decide(roofline)
        failed, ladder = False, []
        for name in RUNGS:
            carried = not failed and ladder and ladder[-1].status == "skipped" and ladder[-1].reason  # a mode's skip
            why = carried or ("skipped: an earlier rung failed" if failed or rungs else "skipped")
            rung = rungs.get(name) or RungResult(name, "skipped", why)
            ladder.append(rung)
            failed = failed or rung.failed
        return Verdict(problem=self.problem.name, candidate=str(self.candidate), mode=mode,
                       # no measurer reported a device (the static check rejected the file, or it died first): the
                       # mode, not a name remembered from another verdict
                       device=said.device or ("cuda" if mode == "gpu" else "cpu"),
                       rungs=tuple(ladder), fitness=fitness, shapes=shapes, secret=self.secret,
                       versions=said.versions or _versions(), setup=tuple(said.setup),
                       jail=_jail_note(said.jail or (f"landlock ABI {jail.abi_version()}" if self.trusted else "none"),
                                       self.crew, self.share),
                       work=self.work, gpu=said.uuid)


def _jail_note(jail_status: str, crew, share=None) -> str:
    """The runner's jail as it said, the user it ran as as its parent decided (harness/shared/privilege.py), and its
    share of the card's memory (harness/parent/device_share.py)."""
    note = f"{jail_status}; {crew.user}" if crew is not None else jail_status
    return f"{note}; {share.note()}" if share is not None else note


_MEMORY: dict = {}  # caches kept in this process only, where a runner could write the files


def _load(cache: Path, trusted: bool, name: str) -> dict:
    if not trusted:
        return dict(_MEMORY.get(name, {}))
    return _read_json(cache / name)


def _store(cache: Path, trusted: bool, key: str, value: dict, name: str = "peaks.json") -> None:
    if not trusted:
        _MEMORY.setdefault(name, {})[key] = value
        return
    peak_cache.store(cache, key, value, name)


def _fastest_plan(entry: dict, message: dict) -> dict:
    """A card model's window calibrations with one more measured: each the fastest seen (a case's plan only for the
    same calls per window), stamped with when it was measured. The lesser of two measurements of the measurer's own part
    of a window is never flattering: a window's fixed cost subtracted is at most what the card has been seen to need."""
    entry = dict(entry)
    if not all(math.isfinite(message[f]) and message[f] > 0 for f in ("hops_ms", "one_ms", "many_ms")
               if message[f] is not None):
        return entry  # no calibration: nothing to keep
    if message["case"] is None:
        seen = entry.get("hops_ms")
        entry["hops_ms"] = message["hops_ms"] if not isinstance(seen, float) else min(seen, message["hops_ms"])
        entry["hops_checked"] = time.time()  # when it was last measured (measurer/calibration.py re-checks old ones)
        return entry
    old = entry.get(message["case"])
    new = {"k": message["k"], "one_ms": message["one_ms"], "many_ms": message["many_ms"], "checked": time.time()}
    if isinstance(old, dict) and old.get("k") == new["k"]:
        new = {**new, "one_ms": min(old["one_ms"], new["one_ms"]), "many_ms": min(old["many_ms"], new["many_ms"])}
    entry[message["case"]] = new
    return entry


DUMP_FILE_BYTES = 64 << 20  # one compiler artifact copied out of a runner's folder, at most


def _copy_dumps(work: Path, dest: Path) -> None:
    """The compiler artifacts a runner wrote in its own folder, copied by name: every step through a descriptor that
    follows no link and blocks on nothing (a runner can put a link or a named pipe anywhere in its folder), regular
    files of a bounded size only."""
    work_fd = os.open(work, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for name in sorted(os.listdir(work_fd)):
            runner_fd = compiled._open_folder(name, work_fd)
            if runner_fd is not None:
                _copy_dump_folder(runner_fd, dest)
                os.close(runner_fd)
    finally:
        os.close(work_fd)


def _copy_dump_folder(runner_fd: int, dest: Path) -> None:
    folder_fd = compiled._open_folder("dump", runner_fd)
    if folder_fd is not None:
        try:
            for name in sorted(os.listdir(folder_fd)):
                fd = compiled._open_plain(name, DUMP_FILE_BYTES, folder_fd) if compiled.SAFE_NAME.match(name) else None
                if fd is None:
                    continue
                dest.mkdir(parents=True, exist_ok=True)
                with os.fdopen(fd, "rb") as src, open(dest / name, "wb") as out:
                    shutil.copyfileobj(src, out)
        finally:
            os.close(folder_fd)


def _read_json(path: Path) -> dict:
    import json

    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def _roofline(bench: RungResult, peaks: dict | None, mode: str, weight_of: dict | None = None) \
        -> tuple[RungResult, tuple, float | None]:
    """The roofline rung from the benchmark's rows and the measured peaks, with the per-shape table and fitness
    (weight_of: each case's weight by label, where the problem gives them)."""
    weight_of = weight_of or {}
    rows = bench.metrics.get("shapes", [])
    try:
        for row in rows if isinstance(rows, list) and rows else [None]:
            check({k: row.get(k) for k in SHAPE_ROW} if isinstance(row, dict) else row, SHAPE_ROW, "shape row")
            if row["ms"] <= 0:
                raise Malformed("shape row: a time must be positive")
    except Malformed as exc:
        return RungResult("roofline", "failed", f"the benchmark's figures are unreadable: {exc}"), (), None
    if mode != "gpu":
        return (RungResult("roofline", "skipped", "no GPU: interpreter times are not GPU performance, so there is no "
                                                  "roofline or fitness"), tuple(_shape_row(row, None) for row in rows),
                None)
    if not peaks:
        return RungResult("roofline", "failed", "no device peaks were measured"), (), None
    shapes = tuple(_shape_row(row, peaks) for row in rows)
    fractions = [s["roofline_fraction"] for s in shapes]
    over = [s for s in shapes if s["roofline_fraction"] > ROOFLINE_CEILING]
    metrics = {"peaks": {"bandwidth": peaks["bandwidth"], "flops": peaks["flops"]}, "fractions": fractions}
    if over:
        worst = max(over, key=lambda s: s["roofline_fraction"])
        return RungResult("roofline", "failed", f"{worst['case']}: {worst['roofline_fraction']:.2f} of roofline is "
                                                f"above {ROOFLINE_CEILING}: a measurement error or a cheat, not a "
                                                "record", 0.0, metrics), shapes, None
    weights = [weight_of.get(s["case"], 1.0) for s in shapes]
    fitness = fitness_of(fractions, weights)
    mean = "geomean" if len(set(weights)) <= 1 else "geomean, weighted by how often each runs,"
    return RungResult("roofline", "ok", f"fitness {fitness:.2f} ({mean} fraction of roofline over {len(fractions)} "
                                        "benchmark shapes)", 0.0, {**metrics, "fitness": fitness}), shapes, fitness


def _input_record(value) -> bool:
    """A list of per-leaf descriptions as formats.base.describe writes them, and nothing else."""
    if not isinstance(value, list) or len(value) > 64:
        return False
    for leaf in value:
        if not isinstance(leaf, dict):
            return False
        if set(leaf) == {"shape", "dtype"}:
            if not (isinstance(leaf["shape"], list) and len(leaf["shape"]) <= 8 and isinstance(leaf["dtype"], str)
                    and all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in leaf["shape"])):
                return False
        elif set(leaf) == {"value"}:
            if not (leaf["value"] is None or isinstance(leaf["value"], (bool, int, float, str))):
                return False
        elif set(leaf) != {"type"}:
            return False
    return True


def _partial(options: EvalOptions, bench: RungResult) -> str | None:
    """Why the benchmark timed only some cases (the ones asked for, or a race lost), or None."""
    if options.bench_cases:
        return "only the cases asked for were timed: advice, not a verdict"
    raced = bench.metrics.get("raced")
    if isinstance(raced, dict):
        return (f"raced out after {raced.get('timed')} of {raced.get('cases')} cases: its best possible fitness "
                f"{raced.get('best_possible')} is below the run's bar {raced.get('below')} (the best less its noise)")
    return None


def _shape_row(row: dict, peaks: dict | None) -> BenchmarkRow:
    out: BenchmarkRow = {"case": row["case"], "shape": row["shape"], "dtype": row["dtype"], "ms": row["ms"],
           "speedup_vs_torch": row["torch_ms"] / row["ms"] if row.get("torch_ms") and row["ms"] else None,
           "speedup_vs_compile": row["compile_ms"] / row["ms"] if row.get("compile_ms") and row["ms"] else None,
           "roofline_fraction": None, "bytes_per_s": row["bytes"] / (row["ms"] * 1e-3) if row["ms"] else None,
           "clock": row.get("clock", "cuda-window"), "windows": row.get("windows"),
           "calls_per_window": row.get("calls_per_window"), "spread": row.get("spread"),
           "spin_retries": row.get("spin_retries"), "quiet_s": row.get("quiet_s")}
    for key in ("window_ms", "fixed_ms", "calibrated_ms", "hops_ms", "parts_ms"):  # the window's parts, for the record
        if key in row:
            out[key] = row[key]
    if "params" in row and isinstance(row["params"], dict):
        out["params"] = row["params"]
    if _input_record(row.get("inputs")):  # what the calls' inputs looked like (a composite's thresholds come from it)
        out["inputs"] = row["inputs"]
    if peaks:
        bound_s = bound_seconds(row["bytes"], row["flops"], row["dtype"], peaks)
        out["roofline_fraction"] = bound_s / (row["ms"] * 1e-3)
        out["bound_ms"] = bound_s * 1e3
    return out
