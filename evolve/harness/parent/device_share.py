"""Each evaluation's share of the card's memory, counted by the trusted side.

The driver keeps, per card, the memory each process holds (NVML's running compute processes). The parent reads it
(libnvidia-ml through ctypes: no process of candidate code says anything) and sums it over the evaluation's
processes: its cgroup's, else the trees under its keepers. Their share is the card's memory over the evaluations
that share the card (--per-gpu); the measurer's inputs and references are the problem's, not counted. An evaluation
over its share is killed and the rung it was on fails with the figures. A failure of an evaluation that ran while
another on the same card was seen over its share is not charged to it: it is evaluated again. Memory held for less
than a poll (sandbox.MEMORY_POLL_S) is seen only by chance.

Where the driver names none of an evaluation's processes (a container whose PID namespace hides them from it), the
evaluation is said to be uncounted rather than counted as holding nothing.
"""
from __future__ import annotations

import ctypes
import threading
import time
from dataclasses import dataclass

NVML_LIBRARY = "libnvidia-ml.so.1"
SNAPSHOT_AGE_S = 0.1  # the polls of evaluations side by side share one read of the driver's table
SIGHTINGS_KEPT_S = 3600.0
NVML_INSUFFICIENT_SIZE = 7


class _ProcessInfo(ctypes.Structure):  # nvmlProcessInfo_t (v2), what nvmlDeviceGetComputeRunningProcesses_v3 fills
    _fields_ = [("pid", ctypes.c_uint), ("used", ctypes.c_ulonglong), ("gpu_instance", ctypes.c_uint),
                ("compute_instance", ctypes.c_uint)]


class _Memory(ctypes.Structure):  # nvmlMemory_t
    _fields_ = [("total", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong), ("used", ctypes.c_ulonglong)]


@dataclass(frozen=True)
class Card:
    total: int  # bytes
    held: dict  # pid -> bytes that process holds on this card


class Driver:
    """libnvidia-ml: each card's memory and what each process holds of it."""

    def __init__(self):
        self.lib = ctypes.CDLL(NVML_LIBRARY)
        _call(self.lib.nvmlInit_v2, "nvmlInit_v2")
        count = ctypes.c_uint()
        _call(self.lib.nvmlDeviceGetCount_v2, "nvmlDeviceGetCount_v2", ctypes.byref(count))
        self.handles = []
        for index in range(count.value):
            handle = ctypes.c_void_p()
            _call(self.lib.nvmlDeviceGetHandleByIndex_v2, "nvmlDeviceGetHandleByIndex_v2", index, ctypes.byref(handle))
            self.handles.append(handle)

    def cards(self) -> list[Card]:
        return [Card(self._total(handle), self._held(handle)) for handle in self.handles]

    def _total(self, handle) -> int:
        memory = _Memory()
        _call(self.lib.nvmlDeviceGetMemoryInfo, "nvmlDeviceGetMemoryInfo", handle, ctypes.byref(memory))
        return int(memory.total)

    def _held(self, handle) -> dict:
        size = 64
        while True:  # the table may grow between asking its size and reading it
            count, table = ctypes.c_uint(size), (_ProcessInfo * size)()
            status = self.lib.nvmlDeviceGetComputeRunningProcesses_v3(handle, ctypes.byref(count), table)
            if status != NVML_INSUFFICIENT_SIZE:
                break
            size = max(2 * size, count.value + 16)
        if status != 0:
            raise OSError(f"nvmlDeviceGetComputeRunningProcesses_v3 returned {status}")
        held: dict = {}
        for info in table[:count.value]:
            if info.used < 1 << 62:  # NVML_VALUE_NOT_AVAILABLE is all ones: no figure, not a huge one
                held[int(info.pid)] = held.get(int(info.pid), 0) + int(info.used)
        return held


def _call(function, name: str, *args) -> None:
    status = function(*args)
    if status != 0:
        raise OSError(f"{name} returned {status}")


class _Snapshots:
    """The driver's table, read at most every SNAPSHOT_AGE_S however many evaluations poll it."""

    def __init__(self):
        self.lock = threading.Lock()
        self.driver: Driver | None = None
        self.missing: str | None = None
        self.at, self.cards = -1.0, []

    def available(self) -> str | None:
        """None where the driver's table can be read, else why not."""
        with self.lock:
            if self.driver is None and self.missing is None:
                try:
                    self.driver = Driver()
                except (OSError, AttributeError) as exc:
                    self.missing = f"{NVML_LIBRARY}: {exc}"[:300]
            return self.missing

    def read(self) -> list[Card]:
        with self.lock:
            if time.monotonic() - self.at > SNAPSHOT_AGE_S:
                self.cards, self.at = self.driver.cards(), time.monotonic()
            return self.cards


SNAPSHOTS = _Snapshots()


@dataclass(frozen=True)
class Sighting:
    card: int  # the driver's index
    evaluation: str
    at: float  # time.monotonic()
    held: int
    share: int


class _Sightings:
    """Every evaluation this process saw over its share, for the neighbours' verdicts."""

    def __init__(self):
        self.lock, self.seen = threading.Lock(), []

    def add(self, sighting: Sighting) -> None:
        with self.lock:
            self.seen = [s for s in self.seen if sighting.at - s.at < SIGHTINGS_KEPT_S] + [sighting]

    def others(self, evaluation: str, cards: set, since: float) -> list[Sighting]:
        with self.lock:
            return [s for s in self.seen if s.evaluation != evaluation and s.card in cards and s.at >= since]


SIGHTINGS = _Sightings()


class DeviceShare:
    """One evaluation's watch over its share of the card; `read` gives the cards (the driver's, by default)."""

    def __init__(self, evaluation: str, per_gpu: int, read=None):
        self.evaluation, self.per_gpu = evaluation, max(1, int(per_gpu))
        self.read = read or SNAPSHOTS.read
        self.started = time.monotonic()
        self.cards: set = set()  # where any of its processes, the measurer included, holds memory
        self.over: Sighting | None = None
        self.polls = 0

    def check(self, counted: set, trusted: set) -> str | None:
        """Why the evaluation must stop (its runners' processes, `counted`, hold more than its share of a card), or
        None. `trusted`: its measurer, whose memory is the problem's; seen on a card, it says the driver sees us."""
        self.polls += 1
        for index, card in enumerate(self.read()):
            if any(pid in card.held for pid in counted | trusted):
                self.cards.add(index)
            held = sum(card.held.get(pid, 0) for pid in counted)
            share = card.total // self.per_gpu
            if held > share:
                self.over = Sighting(index, self.evaluation, time.monotonic(), held, share)
                SIGHTINGS.add(self.over)
                return self.reason()
        return None

    def reason(self) -> str:
        over = self.over
        split = f"over {self.per_gpu} evaluations sharing it (--per-gpu)" if self.per_gpu > 1 else "all of it"
        return (f"held {over.held / 2**30:.1f} GiB of the card's memory, over its share of {over.share / 2**30:.1f} "
                f"GiB (the card's memory {split}; counted by the driver) (killed)")

    def uncounted(self) -> bool:
        """Whether it was polled and the driver never named one of its processes: its memory went uncounted."""
        return self.polls > 0 and not self.cards

    def neighbour_over(self) -> str | None:
        """Why a failure of this evaluation is not its own: another evaluation on its card was over its share while
        it ran (None where none was, or where this one was over its own)."""
        if self.over is not None:
            return None
        seen = SIGHTINGS.others(self.evaluation, self.cards, self.started)
        if not seen:
            return None
        worst = max(seen, key=lambda s: s.held - s.share)
        return (f"another evaluation on this card held {worst.held / 2**30:.1f} GiB, over its share of "
                f"{worst.share / 2**30:.1f} GiB, while this one ran (it was stopped): the failure is not charged to "
                f"this candidate, which is evaluated again")

    def note(self) -> str:
        """What the verdict's jail says of the card's memory."""
        if self.uncounted():
            return ("device memory uncounted: the driver named none of this evaluation's processes (a PID namespace "
                    "hides them from it)")
        return f"a share of the card's memory (1/{self.per_gpu}) counted by the driver"


def gap() -> str | None:
    """What the start of a run on a card says where the driver's per-process table cannot be read."""
    missing = SNAPSHOTS.available()
    if missing is None:
        return None
    return (f"no per-process device memory ({missing}): an evaluation's card memory has no share, so one that holds "
            f"the card's memory can make the evaluations beside it fail, and they are charged for it")
