"""A card's timing lease: several evaluations may share a card, one at a time times work on it, and while it does
every other evaluation on the card is stopped.

With `evolve run --per-gpu N` up to N evaluations run on one card at once; their compile, run and correctness rungs
go side by side. Work whose figures a verdict is made of (the measurer's calibrations and each benchmark case's
windows) runs under the card's lease. The measurer asks its parent for it on its signed channel and waits on a pipe
only the parent writes; the parent grants it in the order asked and, for as long as it is held, stops (SIGSTOP) every
process of every other evaluation on the card: each process group of its crew, and any process still carrying its
evaluation's token (one that left the group), as the kill at the end of an evaluation finds them. A stopped process
queues no more GPU work; what it had queued before may still run, so the measurer holding the lease waits until the
card is quiet before it times anything (harness/measurer/timing_lease.py) and, if it does not become quiet, asks for the
stopped evaluations to be evicted: they are killed and their candidates evaluated again later (`Evicted`). Time spent
stopped does not count against an evaluation's wall-clock limit.

Only evaluations whose job has started take part (a crew started ahead runs no candidate code and is not stopped).
The lease lives in the parent process; lanes are threads of it, one lease per card (`card_lease`). Another process
on the machine cannot be stopped by it, so a card is also held against other evolve processes (`card_lock`): while
this one has an evaluation on a card, another's evaluations on that card wait for it, and the other way round. Two
processes with work for one card take turns of CARD_TURN_S.
"""
from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import secrets
import select
import signal
import tempfile
import threading
import time
from collections import deque
from pathlib import Path

from evolve.harness.parent.card_queue import CardQueue


class Evicted(Exception):
    """The evaluation was stopped and killed so that another on its card could be timed: not the candidate's
    failure, to be evaluated again."""


def find_strays(parties) -> dict:
    """For each party, the processes outside its process groups that are its own: beneath its keepers (harness/
    keeper.py: one that left its session and dropped its token is still there) or carrying its evaluation's token,
    found in one pass over /proc: {party: [pid, ...]}."""
    from ..shared.processes import parents, tree

    needles = {f"EVOLVE_EVAL_TOKEN={p.token}".encode(): p for p in parties}
    groups = {pgid for p in parties for pgid in p.pgids + p.offcard}
    table = parents()
    found: dict = {p: [] for p in parties}
    for party in parties:
        for pid in tree(party.pgids, table) - set(party.pgids):
            try:
                if os.getpgid(pid) not in groups:
                    found[party].append(pid)
            except (ProcessLookupError, PermissionError):
                continue
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        pid = int(entry.name)
        try:
            if os.getpgid(pid) in groups:
                continue  # stopped with its group
            environ = (entry / "environ").read_bytes()
        except (OSError, ProcessLookupError):
            continue
        for needle, party in needles.items():
            if needle in environ and pid not in found[party]:
                found[party].append(pid)
    return found


class LeaseSide:
    """One evaluation's side of the lease: its processes (to stop and continue), its grant pipe, the time it spent
    stopped. A crew makes one when its job starts."""

    def __init__(self, name: str, pgids, token: str, grant_fd: int | None):
        self.name, self.pgids, self.token, self.grant_fd = name, list(pgids), token, grant_fd
        self.stopped_at: float | None = None
        self.stopped_s = 0.0
        self.stops: list[tuple[float, float]] = []  # (from, to) on the monotonic clock, each stop that has ended
        self.strays: list[int] = []  # processes outside its groups that carry its token, stopped with it
        self.offcard: list[int] = []  # groups jailed off every GPU (a compile-only runner): never stopped
        self.evicted = False
        self.kill = None  # set by the crew: kills every process of the evaluation

    def stop(self) -> None:
        self.stop_groups()
        self.stop_strays(find_strays([self])[self])

    def stop_groups(self) -> None:
        """SIGSTOP its process groups (first: a stopped process can no longer leave its group)."""
        from .warden import WARDEN

        WARDEN.watch(self.token, self.pgids)  # a stopped process cannot act on its lifeline: the warden does
        for pgid in self.pgids:
            try:
                os.killpg(pgid, signal.SIGSTOP)
            except (ProcessLookupError, PermissionError):
                pass
        self.stopped_at = time.monotonic()

    def stop_strays(self, pids: list[int]) -> None:
        self.strays = list(pids)
        for pid in self.strays:
            try:
                os.kill(pid, signal.SIGSTOP)
            except (ProcessLookupError, PermissionError):
                pass

    def resume(self) -> None:
        for pid in self.strays:
            try:
                os.kill(pid, signal.SIGCONT)
            except (ProcessLookupError, PermissionError):
                pass
        for pgid in self.pgids:
            try:
                os.killpg(pgid, signal.SIGCONT)
            except (ProcessLookupError, PermissionError):
                pass
        if self.stopped_at is not None:
            now = time.monotonic()
            self.stopped_s += now - self.stopped_at
            self.stops.append((self.stopped_at, now))
            del self.stops[:-10000]
        self.stopped_at = None

    def stopped_between(self, start: float, end: float) -> float:
        """Seconds stopped between two moments of the monotonic clock (the current stop included)."""
        spans = self.stops + ([(self.stopped_at, time.monotonic())] if self.stopped_at is not None else [])
        return sum(max(0.0, min(end, b) - max(start, a)) for a, b in spans)

    def stopped_so_far(self) -> float:
        """Seconds stopped, the current stop included."""
        current = time.monotonic() - self.stopped_at if self.stopped_at is not None else 0.0
        return self.stopped_s + current

    def grant(self, alone: bool) -> None:
        """b"g": the lease, no other evaluation on the card; b"q": the lease, others stopped (wait for quiet)."""
        if self.grant_fd is not None:
            try:
                os.write(self.grant_fd, b"g" if alone else b"q")
            except OSError:
                pass  # its measurer is gone: the crew's own loop finds out


class CardLease:
    """The lease of one card, shared by the evaluations running on it (threads of this process)."""

    def __init__(self, key):
        self.key = key
        self._lock = threading.Lock()
        self._parties: list[LeaseSide] = []
        self._holder: LeaseSide | None = None
        self._waiting: deque[LeaseSide] = deque()
        self.grants = 0  # for the record: how many times it was granted, and for how long in all
        self.held_s = 0.0
        self._since = 0.0
        self.log: list[tuple[str, str]] = []  # (event, party name), the last 1000, for tests and diagnosis

    def _note(self, event: str, party: LeaseSide) -> None:
        self.log.append((event, party.name))
        del self.log[:-1000]

    @property
    def holder(self) -> str | None:
        with self._lock:
            return self._holder.name if self._holder else None

    def join(self, party: LeaseSide) -> None:
        """An evaluation's job starts on this card; it is stopped at once if another holds the lease."""
        with self._lock:
            self._parties.append(party)
            if self._holder is not None:
                party.stop()
                self._note("stop", party)

    def leave(self, party: LeaseSide) -> None:
        """An evaluation ends (however): whatever it held or waited for goes to the next."""
        with self._lock:
            if party in self._parties:
                self._parties.remove(party)
            if party in self._waiting:
                self._waiting.remove(party)
            if party.stopped_at is not None:
                party.resume()
            if party.stopped_s or party.evicted:
                from .warden import WARDEN

                WARDEN.forget(party.token)
            if self._holder is party:
                self._release()

    def offcard(self, party: LeaseSide, pgid: int) -> None:
        """One of the party's process groups cannot reach any GPU (its measurer saw it jailed without the device files
        before it ran candidate code): it goes on working while the party is stopped."""
        with self._lock:
            if pgid not in party.pgids:
                return
            party.pgids.remove(pgid)
            party.offcard.append(pgid)
            if party.stopped_at is not None:
                try:
                    os.killpg(pgid, signal.SIGCONT)
                except (ProcessLookupError, PermissionError):
                    pass
            self._note("offcard", party)

    def request(self, party: LeaseSide) -> None:
        with self._lock:
            if party not in self._parties or party is self._holder or party in self._waiting:
                return
            if self._holder is None:
                self._grant(party)
            else:
                self._waiting.append(party)

    def release(self, party: LeaseSide) -> None:
        with self._lock:
            if self._holder is party:
                self._release()

    def evict(self, party: LeaseSide) -> int:
        """The holder found the card busy with work the stopped evaluations had queued: kill them (their candidates
        are evaluated again). Returns how many were evicted."""
        with self._lock:
            if self._holder is not party:
                return 0
            victims = [p for p in self._parties if p is not party and p.stopped_at is not None]
        for victim in victims:
            victim.evicted = True
            if victim.kill is not None:
                victim.kill()
            self._note("evict", victim)
        return len(victims)

    def _grant(self, party: LeaseSide) -> None:
        self._holder = party
        self.grants += 1
        self._since = time.monotonic()
        others = [other for other in self._parties if other is not party and other.stopped_at is None]
        for other in others:
            other.stop_groups()
        found = find_strays(others) if others else {}  # then one pass over /proc for all of them
        for other in others:
            other.stop_strays(found[other])
            self._note("stop", other)
        if party.stopped_at is not None:
            party.resume()
        self._note("grant", party)
        party.grant(alone=len(self._parties) == 1)

    def _release(self) -> None:
        self._note("release", self._holder)
        self.held_s += time.monotonic() - self._since
        self._holder = None
        for other in self._parties:
            if other.stopped_at is not None:
                other.resume()
                self._note("resume", other)
        if self._waiting:
            self._grant(self._waiting.popleft())


_LEASES: dict = {}
_LEASES_LOCK = threading.Lock()


def card_lease(key) -> CardLease:
    """The lease of a card (key: its name as the lanes give it, with the evaluation mode), made on first use."""
    with _LEASES_LOCK:
        if key not in _LEASES:
            _LEASES[key] = CardLease(key)
        return _LEASES[key]


@contextlib.contextmanager
def holding(key, name: str, timeout_s: float):
    """The card's timing lease held by trusted work of this process that is not an evaluation (an agent's profile):
    every evaluation on the card is stopped while it is held, as for another's timing. TimeoutError past timeout_s."""
    read_fd, write_fd = os.pipe()
    party = LeaseSide(name, [], secrets.token_hex(8), write_fd)
    lease = card_lease(key)
    lease.join(party)
    try:
        lease.request(party)
        if not select.select([read_fd], [], [], timeout_s)[0]:
            raise TimeoutError(f"the card's lease did not come within {timeout_s:.0f} s")
        os.read(read_fd, 1)
        yield
    finally:
        lease.leave(party)
        os.close(read_fd)
        os.close(write_fd)


def all_leases() -> list[CardLease]:
    """Every card's lease made in this process (for the record: grants, time held)."""
    with _LEASES_LOCK:
        return list(_LEASES.values())


class CardBusy(Exception):
    """Another process held the card for longer than an evaluation waits for it; str() says who and what to do."""


LOCK_WAIT_S = 900.0  # the longest an evaluation waits for another process to let go of its card
LOCK_NOTE_S = 60.0  # how often a wait for the card is said again
CARD_TURN_S = 60.0  # while another process waits for the card, this one keeps it this long, then lets it go
KEEP_S = 2.0  # a process with no evaluation on the card keeps it this long for its next (its turn goes on)
HEAD_GRACE_S = 2.0  # a card left free this long by the first in the queue goes to the next (the first may be stopped)
CONTENDED_S = 0.05  # an acquire that took longer waited: for the card, its turn, or a sibling waiting for either


class CardLock:
    """A card held by this process against other processes of the same user on the machine (an exclusive flock on a
    file named after the card), for as long as any evaluation of this process runs on it. Evaluations of one process
    share it (a count); the first waits for another process to let go of the card, saying who holds it, for at most
    LOCK_WAIT_S. Processes waiting queue for it, the longest waiting first (card_queue.py; a card the first leaves
    free for HEAD_GRACE_S goes to the next); once the holder has had the card for CARD_TURN_S and one waits, its new
    evaluations wait until those on the card end, then it lets the card go and queues in turn (runs on one card share
    it, rather than the first keeping it while its lanes stay busy). Between one evaluation and the next the holder
    keeps the card for KEEP_S, so a turn is not lost to the gap. The files are write-only (mode 0200, in 0700
    folders), so a runner that gave up root cannot open them, and its jail lets it write only in its own folders; a
    runner that kept root can flock them, but no longer than its evaluation lives (every process under a keeper dies
    with it): the most it can do is make its own process hand the card over early, or hold a place at the head of
    the queue, which costs the others HEAD_GRACE_S. Who holds it is written beside it."""

    def __init__(self, path: Path):
        self.path = path
        self.holder_path = path.with_suffix(".holder")
        self.queue = CardQueue(path.with_suffix(".queue"))
        self.count = 0
        self.fd: int | None = None
        self.held_since = 0.0
        self.handing_over = False  # the turn is over: new evaluations wait for the card to be let go, then for it
        self.kept = 0  # acquires so far: a release's timer lets the card go only if none came after it
        self.said_wait = False
        # acquirers of this process queue here while the first waits for the card; releases wake a handover
        self._cond = threading.Condition()

    def _open(self) -> int:
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        if self.path.parent.stat().st_uid != os.getuid():  # made by someone else: not a lock of ours
            raise PermissionError(f"{self.path.parent} belongs to another user")
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, 0o200)
        os.fchmod(fd, 0o200)  # a lock file an older evolve made readable
        return fd

    def _wait(self, fd: int) -> None:
        """Poll for the card in the queue's order (a thread waiting here never sits in a call nothing can end),
        saying so every minute."""
        log = logging.getLogger("evolve")
        began = noted = time.monotonic()
        if not self.said_wait:  # once: with turns, a wait comes round every CARD_TURN_S
            log.warning("%s is in use by %s: evaluations on it wait for their turn (two evolve processes never time "
                        "on one card at once; while both have work they take turns of %g s)", self.path.stem,
                        self._holder(), CARD_TURN_S)
            self.said_wait = True
        self.queue.join()
        free_since = None  # when this waiter, not first, first found the card free
        try:
            while True:
                time.sleep(0.25)
                now = time.monotonic()
                if self.queue.first():
                    if _flock_now(fd):
                        return
                elif _flock_now(fd):  # free, yet the first in the queue has not taken it: stopped, or hung?
                    free_since = free_since or now
                    if now - free_since >= HEAD_GRACE_S:
                        return
                    fcntl.flock(fd, fcntl.LOCK_UN)
                else:
                    free_since = None
                if now - began > LOCK_WAIT_S:
                    os.close(fd)
                    raise CardBusy(f"{self.path.stem} was held by {self._holder()} for {LOCK_WAIT_S:g} s: stop that "
                                   f"process, or give this run another card (--gpus)")
                if now - noted > LOCK_NOTE_S:
                    noted = now
                    log.warning("%s: still waiting for %s (%.0f s)", self.path.stem, self._holder(), now - began)
        finally:
            self.queue.leave()

    def _holder(self) -> str:
        try:
            fd = os.open(self.holder_path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            return "another process"
        try:
            text = os.read(fd, 200).decode(errors="replace").strip()
        except OSError:
            text = ""
        finally:
            os.close(fd)
        return "".join(c for c in text if c.isprintable()) or "another process"

    def acquire(self) -> float:
        """Hold the card; returns the seconds spent waiting for another process to let go of it (CardBusy past
        LOCK_WAIT_S), or for this process's turn to end and come round again."""
        began = time.monotonic()
        with self._cond:  # held by another evaluation of this process while it waits for the card
            if (self.fd is not None and not self.handing_over and time.monotonic() - self.held_since >= CARD_TURN_S
                    and self.queue.anyone()):
                self.handing_over = True
                logging.getLogger("evolve").info("%s: another evolve process waits for it; this one lets it go when "
                                                 "its evaluations there end", self.path.stem)
            while self.handing_over and self.count:
                self._cond.wait()
            if self.handing_over:  # let go (now, if it was kept between evaluations): it queues behind the waiting
                self._let_go()
                self.handing_over = False
            if self.fd is None:
                self._take()
            self.count += 1
            self.kept += 1  # a release before this acquire no longer lets the card go
            waited = time.monotonic() - began
            return waited if waited > CONTENDED_S else 0.0

    def _take(self) -> None:
        """The card's flock, waited for as long as another process holds it."""
        try:
            fd = self._open()
        except OSError as exc:
            logging.getLogger("evolve").warning(
                "%s cannot be held against other processes (%s): run one evolve per card", self.path, exc)
            return
        if self.queue.anyone() or not _flock_now(fd):  # those waiting go first
            self._wait(fd)
        try:
            with open(self.holder_path.with_suffix(f".{os.getpid()}"), "w") as f:
                f.write(f"evolve pid {os.getpid()}")
            os.replace(f.name, self.holder_path)
        except OSError:
            pass
        self.fd, self.held_since = fd, time.monotonic()

    def release(self) -> None:
        """The end of one evaluation on the card. The last lets the card go KEEP_S later if no evaluation of this
        process came meanwhile (between one evaluation and the next its turn goes on); at once when handing over."""
        with self._cond:
            self.count -= 1
            if self.count or self.fd is None:
                return
            if self.handing_over:
                self._let_go()
                return
            kept = self.kept
            timer = threading.Timer(KEEP_S, self._let_go_unless_kept, (kept,))
            timer.daemon = True
            timer.start()

    def _let_go_unless_kept(self, kept: int) -> None:
        with self._cond:
            if self.count == 0 and self.kept == kept:
                self._let_go()

    def _let_go(self) -> None:
        """Unlock the card (with _cond held)."""
        if self.fd is not None:
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None
        self._cond.notify_all()


def _flock_now(fd: int) -> bool:
    """An exclusive flock if no other process holds one."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False


class _NoLock:
    """Evaluations without a GPU: the interpreter's figures are labelled host time, and nothing is held."""

    def acquire(self) -> float:
        return 0.0

    def release(self) -> None:
        pass


_LOCKS: dict = {}


def card_name(gpu: str | None, environ=os.environ) -> str:
    """A lane's card as CUDA_VISIBLE_DEVICES names it to a child (None: the first this process sees)."""
    visible = [d.strip() for d in environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if d.strip()]
    return gpu if gpu is not None else visible[0] if visible else "0"


def card_lock(mode: str, gpu: str | None):
    """The machine-wide hold on a card (GPU evaluations only)."""
    if mode != "gpu":
        return _NoLock()
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in card_name(gpu))
    path = Path(tempfile.gettempdir()) / f"evolve-cards-{os.getuid()}" / f"card {safe}.lock"
    with _LEASES_LOCK:
        if path not in _LOCKS:
            _LOCKS[path] = CardLock(path)
        return _LOCKS[path]


class FirstCalibration:
    """Evaluations sharing a card wait for the first of them to calibrate. Each job carries the calibrations kept when
    it starts (peaks, library baselines, window plans), and one that finds none measures them under the lease,
    stopping the others: N evaluations started together on a fresh card would measure them N times over (on the
    H200 machine with 8 per card, 90 of a run's first 140 s were such leases). So the first GPU evaluation of a
    problem on a card, in this process, goes ahead; the others wait until its set-up is done (the calibrations it
    measured are kept by then), or until it ends, or `timeout_s`. Kept calibrations are measured again once
    RENEW_S old (the measurer's RECHECK_S), so a turn is taken again after that long."""

    RENEW_S = 1800.0

    def __init__(self, clock=time.monotonic):
        self._turns: dict[tuple, tuple[threading.Event, float]] = {}
        self._lock = threading.Lock()
        self._clock = clock

    def turn(self, key: tuple, timeout_s: float) -> threading.Event | None:
        """The event to set once this evaluation's set-up is done if it goes first; None (after waiting) if not."""
        with self._lock:
            done, since = self._turns.get(key, (None, 0.0))
            if done is None or (done.is_set() and self._clock() - since > self.RENEW_S):
                done = threading.Event()
                self._turns[key] = (done, self._clock())
                return done
        done.wait(timeout_s)
        return None


FIRST_CALIBRATION = FirstCalibration()
