"""The evaluation pipeline: candidates evaluated on lanes, one per GPU.

A lane runs one evaluation at a time on its card; a card has one lane, or several with `--per-gpu N`. Evaluations
sharing a card run their compile, run and correctness rungs side by side, and take the card's timing lease for the
work a verdict's figures come from (harness/parent/lease.py): while one holds it, the others are stopped, so a benchmark
never shares its card with another candidate's work. What runs beside it: the model calls, and evaluations' processes
starting up (imports and a CUDA context, no candidate code). An evaluation evicted for another's lease (work it had
queued kept the card busy) goes back to the front of the queue, as a lane fault does, without the card's check.
The pipeline keeps at most `depth` candidates between submit and collect, so proposals are not asked for far ahead of
the lanes.

A lane whose evaluation fails for the harness's reasons (the evaluation raised, or the device could not be prepared
before the candidate was loaded: a card that fell off the bus, a broken driver) is a faulted lane: its candidate goes
back to the front of the queue for another lane (or this one once it is healthy again), and the lane checks its card
(`probe`) before it takes work again, retiring after repeated failed checks. A candidate's own crash (an illegal
address that poisons its CUDA context) is its verdict, not a lane fault: every evaluation starts processes of its own.

Lanes are threads of this process by default; a lane is anything with `name`, `evaluate(job)` and `probe()`, so other
kinds of lanes (actors on a cluster) fit the same queue.
"""
from __future__ import annotations

import itertools
import queue
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from .harness.parent.lease import Evicted

FAULT_PREFIXES = ("the harness could not prepare the device", "the runner failed to start")
MAX_ATTEMPTS = 3  # lanes a candidate may fault before it is reported as not evaluated
PROBE_BACKOFF_S = (1.0, 5.0, 20.0)  # waits before a faulted lane's checks; after the last fails the lane retires


class LaneFault(Exception):
    """An evaluation that failed for the lane's reasons, not the candidate's."""


def harness_fault(verdict) -> str | None:
    """Why a verdict is the harness's failure rather than the candidate's (None when it is the candidate's). Only a
    failure before the measurer reported its set-up counts: it sends that (signed) before the runner loads the
    candidate, so a reason the candidate's code sends later, whatever its words, stays the candidate's failure."""
    failure = verdict.failure if verdict is not None else None
    if failure is not None and failure.name == "load" and not verdict.setup \
            and (failure.reason or "").startswith(FAULT_PREFIXES):
        return failure.reason
    if failure is not None and failure.metrics.get("evaluate_again"):  # set by harness/parent/generator_fault.py
        return failure.reason
    return None


@dataclass(frozen=True)
class Retiming:
    """The key of a job that times an archived kernel again rather than a new candidate: a duel's incumbent beside
    the challenger `of`, or a file of the end-of-run re-timing."""
    purpose: str  # "duel" or "retime"
    of: int | str

    def __str__(self) -> str:
        return f"{self.purpose} {self.of}"


@dataclass
class Job:
    cand_id: int | Retiming  # the candidate's id, or the re-timing it is
    path: Path
    seq: int
    lane: str | None = None  # only this lane may take it (a re-timing that must share a card with another)
    attempts: int = 0
    faults: list = field(default_factory=list)  # lane fault reasons so far


@dataclass(frozen=True)
class Done:
    cand_id: int | Retiming
    verdict: object | None  # harness Verdict; None when no lane could evaluate it
    seconds: float  # the lane's time for it
    lane: str
    error: str | None = None  # why there is no verdict


class ThreadLane:
    """A GPU (or the CPU) of this host: the harness's evaluate with the lane's card, in a thread of this process."""

    def __init__(self, name: str, gpu: str | None, evaluate_fn, problem, options, probe_fn=None):
        """options: the harness's EvalOptions, or a function (job, gpu) -> EvalOptions for options per candidate."""
        self.name, self.gpu = name, gpu
        self._evaluate, self.problem, self._probe = evaluate_fn, problem, probe_fn  # a Problem, or its path
        self._options = options if callable(options) else (lambda job, gpu: replace(options, gpu=gpu))

    def evaluate(self, job: Job):
        verdict = self._evaluate(job.path, self.problem, self._options(job, self.gpu))
        reason = harness_fault(verdict)
        if reason:
            raise LaneFault(reason)
        return verdict

    def probe(self) -> bool:
        return self._probe(self.gpu) if self._probe else True

    def reset(self) -> None:
        """After a fault: processes started ahead for this card may hold a broken context."""
        from .harness.parent.sandbox import STARTED_AHEAD

        STARTED_AHEAD.drop(gpu=self.gpu)


class Pipeline:
    """submit() candidates while room(); collect() their results as lanes finish them."""

    def __init__(self, lanes: list, depth: int | None = None, on_event=None, sleep=time.sleep, clock=time.monotonic):
        if not lanes:
            raise ValueError("a pipeline needs at least one lane")
        self.lanes = list(lanes)
        self.depth = depth or len(self.lanes)
        self._on_event = on_event or (lambda event: None)
        self._events: queue.SimpleQueue = queue.SimpleQueue()  # from lane threads, handed over in collect()
        self._sleep, self.clock = sleep, clock
        self._seq = itertools.count()
        self._queue: list[Job] = []  # waiting for a lane, oldest first
        self._cond = threading.Condition()
        self._done: queue.Queue[Done] = queue.Queue()
        self._inside: dict[int, Job] = {}  # submitted, not yet collected
        self._retired: dict[str, str] = {}
        self._closed = False
        self.busy: dict[str, list[tuple[float, float]]] = {lane.name: [] for lane in self.lanes}  # lease intervals
        self._threads = [threading.Thread(target=self._lane_loop, args=(lane,), daemon=True,
                                          name=f"evolve-lane-{lane.name}") for lane in self.lanes]
        for thread in self._threads:
            thread.start()

    # -- the caller's side ------------------------------------------------------------------------------------------
    def room(self) -> bool:
        with self._cond:
            return len(self._inside) < self.depth and len(self._retired) < len(self.lanes)

    @property
    def dead(self) -> str | None:
        """Why no lane is left to evaluate anything, or None (the lanes' last events are handed over here too)."""
        self._flush()
        with self._cond:
            if len(self._retired) < len(self.lanes):
                return None
            return "; ".join(f"{name}: {why}" for name, why in self._retired.items())

    @property
    def inside(self) -> list[int]:
        """Candidates submitted and not yet collected, in submission order."""
        with self._cond:
            return [job.cand_id for job in sorted(self._inside.values(), key=lambda j: j.seq)]

    def submit(self, cand_id, path: Path, lane: str | None = None, beyond_depth: bool = False) -> None:
        """Queue a candidate file; lane: only that lane takes it (after what it is evaluating now); beyond_depth: work
        a verdict asked for (a re-timing), which may take one place more than the depth."""
        job = Job(cand_id, Path(path), next(self._seq), lane)
        with self._cond:
            if self._closed or len(self._retired) == len(self.lanes):
                raise RuntimeError("the pipeline is closed" if self._closed else "no evaluation lane is left")
            if len(self._inside) >= self.depth and not beyond_depth:
                raise RuntimeError(f"the pipeline is full ({self.depth} candidates): collect first")
            self._inside[cand_id] = job
            self._queue.append(job)
            self._cond.notify_all()

    def collect(self, timeout: float | None = None) -> Done | None:
        """The next finished candidate (in the order lanes finish them); None after timeout, or when nothing is in.
        The lanes' events (faults, checks) reach on_event here, in the caller's thread."""
        with self._cond:
            if not self._inside:
                return None
        try:
            done = self._done.get(timeout=timeout)
        except queue.Empty:
            return None
        finally:
            self._flush()
        with self._cond:
            self._inside.pop(done.cand_id, None)
        return done

    def emit(self, event: dict) -> None:
        self._events.put(event)

    def _flush(self) -> None:
        while True:
            try:
                event = self._events.get_nowait()
            except queue.Empty:
                return
            self._on_event(event)

    def close(self) -> None:
        """Stop taking work; evaluations running finish in their threads (their processes die with this one)."""
        with self._cond:
            self._closed = True
            self._queue.clear()
            self._cond.notify_all()

    # -- the lanes --------------------------------------------------------------------------------------------------
    def _take(self, lane) -> Job | None:
        """The oldest job this lane may take (it waits for one); None once closed."""
        with self._cond:
            while True:
                if self._closed:
                    return None
                for job in self._queue:
                    if job.lane in (None, lane.name):
                        self._queue.remove(job)
                        return job
                self._cond.wait(timeout=0.5)

    def _lane_loop(self, lane) -> None:
        while (job := self._take(lane)) is not None:
            began = self.clock()
            try:
                verdict = lane.evaluate(job)
            except Exception as exc:  # noqa: BLE001 - LaneFault, or the harness itself raising
                self.busy[lane.name].append((began, self.clock()))
                reason = str(exc) if isinstance(exc, LaneFault) else f"{type(exc).__name__}: {exc}"
                self._fault(lane, job, reason[:500])
                if isinstance(exc, Evicted):
                    continue  # nothing is wrong with the card: another evaluation on it needed it quiet
                if not self._recover(lane):
                    return
                continue
            ended = self.clock()
            self.busy[lane.name].append((began, ended))
            self._done.put(Done(job.cand_id, verdict, ended - began, lane.name))

    def _fault(self, lane, job: Job, reason: str) -> None:
        job.attempts += 1
        job.faults.append(f"{lane.name}: {reason}")
        self.emit({"kind": "lane_fault", "lane": lane.name, "candidate": job.cand_id, "reason": reason,
                   "requeued": job.attempts < MAX_ATTEMPTS})
        if job.attempts >= MAX_ATTEMPTS:
            self._done.put(Done(job.cand_id, None, 0.0, lane.name,
                                error=f"not evaluated: {job.attempts} lanes failed it ({'; '.join(job.faults)})"))
            return
        with self._cond:
            if not self._closed:
                self._queue.insert(0, job)  # first in line again: it was taken first
            self._cond.notify_all()

    def _recover(self, lane) -> bool:
        """Check a faulted lane's card before it takes work again; False when the lane retires."""
        try:
            lane.reset()
        except Exception:  # noqa: BLE001 - nothing to reset
            pass
        for wait in PROBE_BACKOFF_S:
            self._sleep(wait)
            if self._closed:
                return False
            try:
                if lane.probe():
                    self.emit({"kind": "lane_back", "lane": lane.name})
                    return True
            except Exception:  # noqa: BLE001 - a probe that raises is a failed check
                pass
        with self._cond:
            self._retired[lane.name] = "its card failed every check"
            for job in self._queue:
                if job.lane == lane.name:
                    job.lane = None  # its card is gone: any lane may take it
            retired_all = len(self._retired) == len(self.lanes)
            stranded = list(self._queue) if retired_all else []
            if retired_all:
                self._queue.clear()
        self.emit({"kind": "lane_retired", "lane": lane.name})
        for job in stranded:  # no lane is left to take them
            self._done.put(Done(job.cand_id, None, 0.0, lane.name,
                                error="not evaluated: every lane's card failed its checks"))
        return False


def probe_gpu(gpu: str | None, timeout_s: float = 60.0) -> bool:
    """A fresh process makes a CUDA context on the card and runs one kernel: whether the card works."""
    import os
    import subprocess
    import sys

    env = dict(os.environ)
    if gpu is not None:
        env["CUDA_VISIBLE_DEVICES"] = gpu
    code = "import torch; x = torch.ones(1024, device='cuda'); assert float(x.sum()) == 1024.0"
    try:
        return subprocess.run([sys.executable, "-c", code], env=env, timeout=timeout_s,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0
    except subprocess.TimeoutExpired:
        return False


def visible_gpus() -> list[str]:
    """The cards this process may use, as CUDA_VISIBLE_DEVICES would name them to a child."""
    import os

    visible = [d.strip() for d in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if d.strip()]
    if visible:
        return visible
    try:
        import torch

        return [str(i) for i in range(torch.cuda.device_count())]
    except Exception:  # noqa: BLE001 - no torch CUDA: no cards
        return []


# --per-gpu auto: lanes per card, each bound measured or reasoned. On the H200 (16 cores; benchmarks/throughput.py,
# softmax, instant proposer, once warm) 1 lane made 294 evaluations per GPU-hour, 4 lanes 1,066, 8 lanes 1,097; on
# an H100 (80 GB, 16 cores, one warm machine) 4 lanes 1,328, 6 lanes 1,721 and 1,720, 8 lanes 1,618.
AUTO_MAX_PER_GPU = 8
CORES_PER_LANE = 2  # a lane's evaluation keeps a GPU runner and a compile runner busy
# an idle crew holds about 1.9 GiB resident on the H200 machine; inputs and references twice that
HOST_GIB_PER_LANE = 4.0
CARD_GIB_PER_LANE = 13.0  # 6 lanes on an 80 GB card (each lane's window inputs get a share: measurer/calibration.py)
CARD_BYTES_PER_INPUT_BYTE = 4  # an evaluation holds its inputs, outputs and float64 references on the card at once


def _card_gib() -> float | None:
    """The smallest visible card's memory in GiB, from the driver (no CUDA context in this process), or None."""
    import shutil
    import subprocess

    if not shutil.which("nvidia-smi"):
        return None
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=memory.total", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=20).stdout
        return min(float(line) for line in out.split()) / 1024
    except (OSError, subprocess.SubprocessError, ValueError):
        return None


def auto_per_gpu(cards: int, cores: int | None = None, host_gib: float | None = None,
                 card_gib: float | None = None, input_bytes: int = 0) -> int:
    """Lanes per card for --per-gpu auto: as many as the cores, the host's memory and the card's memory allow, at
    most AUTO_MAX_PER_GPU (more measured no faster); input_bytes: one call's inputs, where they are large enough to
    bound how many evaluations a card holds side by side (today's KernelBench sizes draw 4-9 GB)."""
    import os

    cards = max(1, cards)
    cores = len(os.sched_getaffinity(0)) if cores is None else cores
    if host_gib is None:
        host_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2 ** 30
    card_gib = _card_gib() if card_gib is None else card_gib
    bounds = [AUTO_MAX_PER_GPU, cores // (CORES_PER_LANE * cards), int(host_gib // (HOST_GIB_PER_LANE * cards))]
    if card_gib is not None:
        bounds.append(int(card_gib // CARD_GIB_PER_LANE))
        if input_bytes:
            bounds.append(int(card_gib * 2**30 // (CARD_BYTES_PER_INPUT_BYTE * input_bytes)))
    return max(1, min(bounds))


def lanes_per_card(per_gpu, gpu: bool, cards, input_bytes: int = 0) -> int:
    """--per-gpu resolved: a count as given; 'auto' is one lane where evaluations use no card of this machine (no
    GPU, a cluster), else auto_per_gpu over the cards given (every visible one when none) for inputs that size."""
    if per_gpu != "auto":
        return int(per_gpu)
    return auto_per_gpu(len(cards) if cards else len(visible_gpus()), input_bytes=input_bytes) if gpu else 1


def parse_gpus(text: str | None) -> list[str] | None:
    """'0,1' -> ['0', '1']; 'all' or None -> None (every visible card)."""
    if text is None or text.strip().lower() in ("", "all"):
        return None
    gpus = [part.strip() for part in text.split(",") if part.strip()]
    for gpu in gpus:
        if not (gpu.isdigit() or gpu.startswith(("GPU-", "MIG-"))):
            raise ValueError(f"--gpus {text!r}: give card indices or UUIDs separated by commas, e.g. --gpus 0,1")
    if len(set(gpus)) != len(gpus):
        raise ValueError(f"--gpus {text!r} names a card twice")
    return gpus
