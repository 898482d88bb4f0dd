"""A card's timing lease (harness/parent/lease.py): granted in the order asked, every other evaluation on the card
stopped while it is held (its process groups and any process that left them with its token), stopped time not counted
against an evaluation's limit, evicted evaluations killed, the warden killing stopped evaluations whose parent died,
two evaluations on one card taking turns, processes waiting for a card served longest waiting first, and (GPU) a
busy neighbour neither slowing a timed candidate nor holding the card for long."""
import json
import os
import signal
import stat
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest

from evolve.harness import EvalOptions, evaluate
from evolve.harness.parent import lease
from evolve.harness.parent.lease import CardLease, LeaseSide, card_lease

ROOT = Path(__file__).resolve().parents[1]
SOFTMAX = ROOT / "tests" / "adversarial" / "problem"  # the softmax problem with small test shapes
CASES = ROOT / "tests" / "adversarial" / "cases"
LOOP = "import time\nwhile True: time.sleep(0.01)"


RUNNING = "SRD"  # not stopped: asleep, running, or in a disk wait (a process just started, on a loaded machine)


def state(pid: int) -> str:
    """The process's state letter from /proc (T: stopped), or '' once it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return ""


def wait_for(predicate, timeout=10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return predicate()


class Evaluation:
    """Stand-in processes of one evaluation: a process in a session of its own, a grant pipe, a token."""

    def __init__(self, name: str, stray: bool = False):
        self.token = f"token-{name}-{os.getpid()}"
        env = {**os.environ, "EVOLVE_EVAL_TOKEN": self.token}
        self.proc = subprocess.Popen([sys.executable, "-c", LOOP], env=env, start_new_session=True)
        # a process that left the group (its own session) but still carries the token
        self.stray = subprocess.Popen([sys.executable, "-c", LOOP], env=env, start_new_session=True) if stray else None
        self.grant_r, grant_w = os.pipe()
        os.set_blocking(self.grant_r, False)
        self.party = LeaseSide(name, [self.proc.pid], self.token, grant_w)
        self.party.kill = self.kill

    def granted(self) -> bool:
        try:
            self.grant = os.read(self.grant_r, 1)
            return self.grant in (b"g", b"q")
        except BlockingIOError:
            return False

    def kill(self) -> None:
        for proc in filter(None, (self.proc, self.stray)):
            proc.kill()

    def close(self) -> None:
        self.kill()
        for proc in filter(None, (self.proc, self.stray)):
            proc.wait()
        os.close(self.grant_r)
        os.close(self.party.grant_fd)


@pytest.fixture
def evaluations():
    made = []

    def make(name, **kw):
        made.append(Evaluation(name, **kw))
        return made[-1]

    yield make
    for e in made:
        e.close()


def test_the_lease_goes_in_order_and_stops_everyone_else(evaluations):
    lease = CardLease("card")
    a, b, c = evaluations("a"), evaluations("b", stray=True), evaluations("c")
    for e in (a, b, c):
        lease.join(e.party)
    states = [state(pid) for pid in (a.proc.pid, b.proc.pid, c.proc.pid, b.stray.pid)]
    assert all(s and s in RUNNING for s in states), states  # once failed on a loaded machine: say which state

    lease.request(a.party)
    assert a.granted() and lease.holder == "a" and a.grant == b"q"  # others were stopped: wait for quiet
    assert wait_for(lambda: state(b.proc.pid) == "T" and state(b.stray.pid) == "T" and state(c.proc.pid) == "T")
    assert state(a.proc.pid) in RUNNING

    lease.request(c.party)  # asked while a holds it (its message was on the way before the stop): it waits
    lease.request(b.party)
    assert not c.granted() and not b.granted()
    time.sleep(0.2)
    lease.release(a.party)
    assert c.granted() and lease.holder == "c" and not b.granted()  # in the order asked
    assert wait_for(lambda: state(a.proc.pid) == "T" and state(b.proc.pid) == "T" and state(c.proc.pid) in RUNNING)
    assert b.party.stopped_so_far() >= 0.2 and a.party.stopped_so_far() < b.party.stopped_so_far()

    late = evaluations("late")
    lease.join(late.party)  # a job that starts while the lease is held is stopped at once
    assert wait_for(lambda: state(late.proc.pid) == "T")

    lease.leave(c.party)  # the holder's evaluation ends however it ends: the next in line gets the lease
    assert b.granted() and lease.holder == "b"
    assert wait_for(lambda: state(b.proc.pid) in RUNNING and state(b.stray.pid) in RUNNING and state(a.proc.pid) == "T")
    lease.leave(b.party)
    assert lease.holder is None
    lone = CardLease("another card")
    lone.join(a.party)
    lone.request(a.party)
    assert a.granted() and a.grant == b"g"  # alone on its card: nothing to wait for
    lone.leave(a.party)
    assert wait_for(lambda: all(state(e.proc.pid) in RUNNING for e in (a, late)))  # nobody holds it: all run
    assert a.party.stopped_at is None and a.party.stopped_s > 0


def test_trusted_work_holding_the_lease_stops_every_evaluation_until_it_lets_go(evaluations):
    """An agent's profile holds the card as a timing does (lease.holding): the evaluations on the card stand still
    while it runs, waits its turn behind a holder, and they go on after it, however it ended."""
    key = ("gpu", "holding-test")
    a, b = evaluations("a"), evaluations("b")
    shared = card_lease(key)
    shared.join(a.party)
    shared.join(b.party)
    with lease.holding(key, "agent-profile", timeout_s=5):
        assert shared.holder == "agent-profile"
        assert wait_for(lambda: state(a.proc.pid) == "T" and state(b.proc.pid) == "T")
    assert wait_for(lambda: state(a.proc.pid) in RUNNING and state(b.proc.pid) in RUNNING)
    shared.request(a.party)  # an evaluation holds it: the trusted work waits, and gives up past its time
    assert a.granted()
    with pytest.raises(TimeoutError, match="did not come within"):
        with lease.holding(key, "agent-profile", timeout_s=0.3):
            pass
    with pytest.raises(RuntimeError):
        with lease.holding(("gpu", "holding-test-2"), "agent-profile", timeout_s=5):
            raise RuntimeError("the profile failed")
    assert card_lease(("gpu", "holding-test-2")).holder is None  # let go however it ended
    shared.leave(a.party)
    shared.leave(b.party)


def test_eviction_kills_the_stopped_evaluations_only_at_the_holders_request(evaluations):
    lease = CardLease("card")
    a, b, c = evaluations("a"), evaluations("b"), evaluations("c")
    for e in (a, b, c):
        lease.join(e.party)
    lease.request(a.party)
    assert lease.evict(b.party) == 0  # only the holder may ask
    assert lease.evict(a.party) == 2
    assert b.party.evicted and c.party.evicted and not a.party.evicted
    assert wait_for(lambda: state(b.proc.pid) in ("", "Z") and state(c.proc.pid) in ("", "Z"))
    assert state(a.proc.pid) in RUNNING


def test_the_warden_kills_stopped_evaluations_when_their_parent_dies(tmp_path):
    """A stopped process cannot act on its lifeline; the warden, told what was stopped, kills it when the parent
    is gone (kill -9 here)."""
    pids = tmp_path / "pids"
    parent = subprocess.Popen([sys.executable, "-c", f"""
import os, subprocess, sys, time
from evolve.harness.parent.lease import CardLease, LeaseSide
env = {{**os.environ, "EVOLVE_EVAL_TOKEN": "tok-warden-test"}}
procs = [subprocess.Popen([sys.executable, "-c", {LOOP!r}], env=env, start_new_session=True) for _ in range(2)]
lease = CardLease("card")
holder = LeaseSide("holder", [procs[0].pid], "tok-holder", None)
other = LeaseSide("other", [procs[1].pid], "tok-warden-test", None)
lease.join(holder); lease.join(other); lease.request(holder)
open({str(pids)!r}, "w").write(" ".join(str(p.pid) for p in procs))
time.sleep(60)
"""], env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert wait_for(lambda: pids.exists() and pids.read_text().strip(), timeout=20)
        holder_pid, other_pid = (int(p) for p in pids.read_text().split())
        assert wait_for(lambda: state(other_pid) == "T")
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait()
        assert wait_for(lambda: state(other_pid) in ("", "Z"), timeout=10)  # the stopped one is killed
    finally:
        parent.kill()
        for pid in (holder_pid, other_pid) if pids.exists() and pids.read_text().strip() else ():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


@pytest.fixture
def options(tmp_path):
    return EvalOptions(device="cpu", cache_dir=str(tmp_path / "cache"), timeout_s=300)


def test_time_spent_stopped_does_not_count_against_the_limit(options):
    """An evaluation stopped for longer than its limit (another holds the card's lease) still gets its verdict."""
    lease = card_lease(("cpu", None))
    holder = LeaseSide("holder", [], "tok-holder", None)
    lease.join(holder)
    lease.request(holder)
    # stopped 32 s from its job's start with a limit of 30 s: counted, the stop alone would time it out; the limit
    # leaves room for the evaluation's own seconds on a loaded machine (about 11 s alone, near 20 s beside the rest of
    # the suite). The 32 s count from the stop, not from here: starting the processes takes seconds of its own.
    before = len(lease.log)

    def free_after_the_stop():
        while not any(event == "stop" for event, _ in lease.log[before:]):
            time.sleep(0.05)
        time.sleep(32.0)
        lease.leave(holder)

    threading.Thread(target=free_after_the_stop, daemon=True).start()
    started = time.monotonic()
    verdict = evaluate(CASES / "no_launch.py", SOFTMAX, replace(options, timeout_s=30.0))
    assert time.monotonic() - started >= 32.0  # it waited for the lease
    failure = verdict.failure
    assert failure.name == "compile" and "no Triton kernel launched" in failure.reason  # not "timed out"
    assert verdict.setup[-1]["stopped_s"] >= 30.0  # the record says how long it was stopped


@pytest.mark.slow
def test_two_evaluations_on_one_card_take_turns(options):
    """Two evaluations at once on one card (--per-gpu 2): both verdicts as alone, and every grant of the lease to one
    came with the other stopped if it was still running."""
    lease = card_lease(("cpu", None))
    first = len(lease.log)
    verdicts = {}

    def run(name):
        verdicts[name] = evaluate(CASES / "honest_control.py", SOFTMAX, replace(options, per_gpu=2))

    threads = [threading.Thread(target=run, args=(name,)) for name in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(v.ok for v in verdicts.values()), {k: v.failure for k, v in verdicts.items()}
    log = lease.log[first:]
    grants = [name for event, name in log if event == "grant"]
    parties = set(grants)
    assert len(parties) == 2  # both timed under the lease, all of a rung's cases in one grant
    assert len(load_cpu_cases()) > 1 and all(grants.count(p) == 1 for p in parties)
    stops = [name for event, name in log if event == "stop"]
    assert stops  # the two overlapped: one was stopped while the other timed
    holder = None
    for event, name in log:  # never a grant while another holds it
        if event == "grant":
            assert holder is None
            holder = name
        elif event == "release":
            assert holder == name
            holder = None
    # the record: how long each was stopped, and the part of each rung's seconds that was (within the evaluation's;
    # not their sum: without a GPU the compile rung runs beside the run and correctness rungs, so a stop in that
    # stretch is part of both)
    for verdict in verdicts.values():
        assert all(r.metrics.get("stopped_s", 0.0) <= verdict.setup[-1]["stopped_s"] + 0.01 for r in verdict.rungs)
    assert max(v.setup[-1]["stopped_s"] for v in verdicts.values()) > 0


def test_the_time_stopped_inside_a_span_is_what_overlaps_it():
    party = LeaseSide("p", [], "tok-span", None)
    party.stops = [(10.0, 12.0), (15.0, 16.0)]
    assert party.stopped_between(0.0, 20.0) == 3.0
    assert party.stopped_between(11.0, 15.5) == 1.5
    assert party.stopped_between(12.0, 15.0) == 0.0
    party.stopped_at = time.monotonic() - 2.0  # a stop going on now counts up to now
    assert 1.9 < party.stopped_between(time.monotonic() - 3.0, time.monotonic()) < 2.5


def load_cpu_cases():
    from evolve.harness import load_problem

    return load_problem(SOFTMAX).cpu_benchmarks


NEIGHBOURS = ROOT / "tests" / "data" / "neighbours"


def _alone_and_beside(neighbour: Path, cache: str):
    """The honest control timed alone, then with a neighbour on the card (--per-gpu 2) started first."""
    options = EvalOptions(device="cuda", cache_dir=cache, timeout_s=300, per_gpu=2)
    alone = evaluate(CASES / "honest_control.py", SOFTMAX, options)
    results = {}

    def neighbour_run():
        try:
            results["neighbour"] = evaluate(neighbour, SOFTMAX, replace(options, static_check=False))
        except Exception as exc:  # noqa: BLE001 - Evicted is one outcome
            results["neighbour"] = exc

    thread = threading.Thread(target=neighbour_run)
    thread.start()
    time.sleep(8.0)  # the neighbour's candidate is imported and busy on the card
    beside = evaluate(CASES / "honest_control.py", SOFTMAX, options)
    thread.join()
    return alone, beside, results["neighbour"]


def _close(alone, beside, tolerance=0.05):
    assert alone.ok and beside.ok, (alone.failure, beside.failure)
    ratios = [b["ms"] / a["ms"] for a, b in zip(alone.shapes, beside.shapes)]
    assert all(abs(r - 1) <= tolerance for r in ratios), ratios


@pytest.mark.gpu
def test_a_neighbour_busy_on_the_card_does_not_slow_a_timed_candidate(tmp_path):
    """A neighbour keeps the GPU busy from a thread for as long as it runs: it is stopped while the control times,
    so the control's figures are its figures alone."""
    alone, beside, _ = _alone_and_beside(NEIGHBOURS / "noisy.py", str(tmp_path / "cache"))
    _close(alone, beside)


@pytest.mark.gpu
def test_a_neighbour_with_a_long_kernel_queued_is_waited_for_then_evicted(tmp_path):
    """A neighbour queued a minute of GPU work before anyone could stop it: the control waits for the card to be
    quiet, has the neighbour evicted after 10 s, and times alone."""
    from evolve.harness.parent.lease import Evicted

    alone, beside, neighbour = _alone_and_beside(NEIGHBOURS / "long_kernel.py", str(tmp_path / "cache"))
    _close(alone, beside)
    assert isinstance(neighbour, Evicted), neighbour
    waited = [beside.setup[0]["prepare_split"]["lease"]] + [row.get("quiet_s") or 0.0 for row in beside.shapes]
    assert max(waited) >= 10.0, waited  # it waited out the 10 s before the eviction


HOLD = ("import sys, time\nfrom evolve.harness.parent.lease import card_lock\nlock = card_lock('gpu', sys.argv[1])\n"
        "lock.acquire()\nprint('held', flush=True)\ntime.sleep(float(sys.argv[2]))\nlock.release()\n")
PROBE = ("import fcntl, os, sys\nfrom evolve.harness.parent.lease import card_lock\n"
         "fd = os.open(card_lock('gpu', sys.argv[1]).path, os.O_RDWR)\n"
         "try:\n    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)\n    print('free')\n"
         "except BlockingIOError:\n    print('held')\n")


def test_a_card_is_held_against_another_evolve_process(caplog):
    """Another process cannot be stopped for this one's lease, so a GPU evaluation first holds its card against
    other processes: it waits while one has an evaluation there, and says which process that is."""
    from evolve.harness.parent.lease import card_lock

    card = f"test-{os.getpid()}-{time.monotonic_ns()}"
    other = subprocess.Popen([sys.executable, "-c", HOLD, card, "1.5"], stdout=subprocess.PIPE, text=True,
                             cwd=ROOT)
    assert other.stdout.readline().strip() == "held"
    lock = card_lock("gpu", card)
    with caplog.at_level("WARNING", logger="evolve"):
        waited = lock.acquire()
    assert waited >= 0.8, waited
    assert f"evolve pid {other.pid}" in caplog.text
    other.wait()
    assert lock.acquire() == 0.0  # a second evaluation of this process shares the hold
    lock.release()

    def probe():
        return subprocess.run([sys.executable, "-c", PROBE, card], capture_output=True, text=True, cwd=ROOT,
                              check=True).stdout.strip()

    assert probe() == "held"  # one evaluation of this process is still on the card
    lock.release()
    assert probe() == "held"  # kept a moment for this process's next evaluation
    assert wait_for(lambda: probe() == "free", timeout=lease.KEEP_S + 3)
    again = subprocess.Popen([sys.executable, "-c", HOLD, card, "1.0"], stdout=subprocess.PIPE, text=True, cwd=ROOT)
    assert again.stdout.readline().strip() == "held"
    caplog.clear()
    with caplog.at_level("WARNING", logger="evolve"):
        assert lock.acquire() >= 0.5
    assert "in use by" not in caplog.text  # said once: with two runs taking turns, a wait comes every minute
    again.wait()
    lock.release()
    lock._let_go_unless_kept(lock.kept)
    remove_card(lock)


def test_every_evaluation_of_a_process_that_waited_for_the_card_says_how_long():
    """Evaluations of one process wait for the card together: the first in the card's flock, the others behind it for
    the lock's condition. Each reports its wait (the run's budget leaves the waits out of its estimate of the next
    evaluation), not only the first."""
    from evolve.harness.parent.lease import card_lock

    card = f"test-{os.getpid()}-{time.monotonic_ns()}"
    other = subprocess.Popen([sys.executable, "-c", HOLD, card, "1.5"], stdout=subprocess.PIPE, text=True, cwd=ROOT)
    assert other.stdout.readline().strip() == "held"
    lock = card_lock("gpu", card)
    waits = []
    lanes = [threading.Thread(target=lambda: waits.append(lock.acquire())) for _ in range(3)]
    for lane in lanes:
        lane.start()
    for lane in lanes:
        lane.join(30)
    other.wait()
    assert len(waits) == 3 and min(waits) >= 0.8, waits  # before: 1.5 s for the first, 0.0 for the other two
    for _ in waits:
        lock.release()
    lock._let_go_unless_kept(lock.kept)
    remove_card(lock)


TURNS = ("import sys, threading, time\nfrom evolve.harness.parent import lease\nlease.CARD_TURN_S = 0.5\n"
         "lock = lease.card_lock('gpu', sys.argv[1])\nend = time.monotonic() + float(sys.argv[2])\nwaits = []\n"
         "def lane():\n    while time.monotonic() < end:\n        waits.append(lock.acquire())\n"
         "        time.sleep(0.2)\n        lock.release()\n"
         "lock.acquire()\nprint('held', flush=True)\nlanes = [threading.Thread(target=lane) for _ in range(2)]\n"
         "for t in lanes:\n    t.start()\n    time.sleep(0.1)\nlock.release()\n"
         "for t in lanes:\n    t.join()\nprint(max(waits), len(waits), flush=True)\n")


def test_two_processes_with_work_for_one_card_take_turns():
    """A process whose lanes keep the card busy lets it go once its turn is over and another process waits for it,
    then gets it back: the second run on a card is not kept waiting for the first's whole run."""
    from evolve.harness.parent.lease import card_lock

    card = f"test-{os.getpid()}-{time.monotonic_ns()}"
    busy = subprocess.Popen([sys.executable, "-c", TURNS, card, "8"], stdout=subprocess.PIPE, text=True, cwd=ROOT)
    assert busy.stdout.readline().strip() == "held"
    lock = card_lock("gpu", card)
    waited = lock.acquire()
    assert 0.3 <= waited < 4.0, waited  # its turn of 0.5 s, its lanes' end, the handover: not the other's 8 s
    time.sleep(0.5)
    lock.release()
    most, calls = busy.stdout.readline().split()
    assert busy.wait(timeout=30) == 0
    assert float(most) >= 0.5 and int(calls) > 10, (most, calls)  # it waited for this turn, and went on after it
    assert stat.S_IMODE(lock.queue.folder.stat().st_mode) == 0o700  # a runner running as nobody cannot look in
    assert not list(lock.queue.folder.iterdir())  # each waiter took its ticket away
    remove_card(lock)


TAKES = ("import json, sys, threading, time\nfrom evolve.harness.parent import lease\n"
         "lease.CARD_TURN_S = float(sys.argv[3])\nlock = lease.card_lock('gpu', sys.argv[1])\n"
         "end = float(sys.argv[2])\ntakes = set()\n"
         "def lane():\n    while time.monotonic() < end:\n        lock.acquire()\n        takes.add(lock.held_since)\n"
         "        time.sleep(0.2)\n        lock.release()\n"
         "lock.acquire()\ntakes.add(lock.held_since)\nprint('held', flush=True)\n"
         "lanes = [threading.Thread(target=lane) for _ in range(2)]\n"
         "for t in lanes:\n    t.start()\nlock.release()\n"
         "for t in lanes:\n    t.join()\nprint(json.dumps(sorted(takes)), flush=True)\n")


def test_processes_waiting_for_a_card_take_it_longest_waiting_first():
    """Three runs with work for one card: each turn goes to the process that has waited longest, so none is passed
    over while two others trade the card."""
    from evolve.harness.parent.lease import card_lock

    card = f"test-{os.getpid()}-{time.monotonic_ns()}"
    tickets = card_lock("gpu", card).queue.folder
    end = time.monotonic() + 11.0
    runs = {}
    for name, turn in (("a", 4.0), ("b", 0.5), ("c", 0.5)):  # b and c queue, in that order, within a's first turn
        runs[name] = subprocess.Popen([sys.executable, "-c", TAKES, card, str(end), str(turn)], stdout=subprocess.PIPE,
                                      text=True, cwd=ROOT)
        if name == "a":
            assert runs[name].stdout.readline().strip() == "held"
        else:
            assert wait_for(lambda: tickets.is_dir() and len(list(tickets.iterdir())) == "_bc".index(name))
    takes = []
    for name, run in runs.items():
        lines = run.communicate(timeout=60)[0].splitlines()
        takes += [(at, name) for at in json.loads(lines[-1])]
        assert run.returncode == 0
    order = "".join(name for _, name in sorted(takes))
    assert len(order) >= 6 and order[:6] == "abcabc", order  # a queued behind c when its turn ended
    remove_card(card_lock("gpu", card))


def test_a_process_that_died_waiting_holds_no_place_in_the_queue(tmp_path):
    from evolve.harness.parent.card_queue import CardQueue

    folder = tmp_path / "card 0.queue"
    join = ("import sys, time\nfrom pathlib import Path\nfrom evolve.harness.parent.card_queue import CardQueue\n"
            "assert CardQueue(Path(sys.argv[1])).join()\nprint('queued', flush=True)\ntime.sleep(60)\n")
    older = subprocess.Popen([sys.executable, "-c", join, str(folder)], stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        assert older.stdout.readline().strip() == "queued"
        queue = CardQueue(folder)
        assert queue.anyone() and queue.join()
        assert not queue.first()  # the older waiter goes first while it lives
        assert stat.S_IMODE((folder / queue.name).stat().st_mode) == 0o200
        os.mkfifo(folder / "00000000000000000000-1")  # not a ticket: never opened so that it blocks
        assert not queue.first()
    finally:
        older.kill()
        older.wait()
    (folder / "00000000000000000000-1").unlink()
    assert queue.first() and not queue.anyone()
    assert [p.name for p in folder.iterdir()] == [queue.name]  # its ticket was removed
    queue.leave()
    assert not list(folder.iterdir())


def test_evaluations_without_a_gpu_hold_nothing():
    from evolve.harness.parent.lease import card_lock

    lock = card_lock("cpu", None)
    assert lock.acquire() == 0.0 and not hasattr(lock, "path")
    lock.release()


def test_a_group_jailed_off_the_card_goes_on_while_its_evaluation_is_stopped(evaluations):
    """The compile-only runner's group, once its measurer says it is jailed without the GPU's device files: continued
    at once if its evaluation is stopped, then never stopped again, and never taken for a stray; the rest of the
    evaluation is stopped as before."""
    lease = CardLease("card")
    a, b = evaluations("a"), evaluations("b")
    compiler = subprocess.Popen([sys.executable, "-c", LOOP], env={**os.environ, "EVOLVE_EVAL_TOKEN": b.token},
                                start_new_session=True)
    try:
        b.party.pgids.append(compiler.pid)
        for e in (a, b):
            lease.join(e.party)
        lease.request(a.party)
        assert a.granted()
        assert wait_for(lambda: state(b.proc.pid) == "T" and state(compiler.pid) == "T")
        lease.offcard(b.party, compiler.pid)
        assert wait_for(lambda: state(compiler.pid) in RUNNING) and state(b.proc.pid) == "T"
        assert b.party.offcard == [compiler.pid] and compiler.pid not in b.party.pgids
        lease.release(a.party)
        assert wait_for(lambda: state(b.proc.pid) in RUNNING)
        lease.request(a.party)  # stopped again: the jailed group is not, neither as a group nor as a stray
        assert a.granted()
        assert wait_for(lambda: state(b.proc.pid) == "T")
        time.sleep(0.2)
        assert state(compiler.pid) in RUNNING and b.party.strays == []
        lease.offcard(a.party, 12345678)  # not one of its groups: nothing changes
        assert a.party.offcard == [] and a.party.pgids == [a.proc.pid]
        lease.leave(a.party)
        lease.leave(b.party)
    finally:
        compiler.kill()
        compiler.wait()


def test_evaluations_sharing_a_card_wait_for_the_first_to_calibrate():
    """The first evaluation of a problem on a card goes ahead; the others wait until its set-up is done (or it
    ends), then go together; after RENEW_S one of them goes first again, since kept calibrations are re-checked."""
    from evolve.harness.parent.lease import FirstCalibration

    now = [0.0]
    turns = FirstCalibration(clock=lambda: now[0])
    first = turns.turn(("cache", "0", "softmax"), 30)
    assert first is not None
    assert turns.turn(("cache", "1", "softmax"), 30) is not None  # another card: its own turn
    waited, started = [], time.monotonic()

    def other():
        waited.append((turns.turn(("cache", "0", "softmax"), 30), time.monotonic() - started))

    others = [threading.Thread(target=other) for _ in range(3)]
    for t in others:
        t.start()
    time.sleep(0.5)
    assert not waited  # all three wait for the first's set-up
    first.set()
    for t in others:
        t.join(5)
    assert [w[0] for w in waited] == [None] * 3 and min(w[1] for w in waited) >= 0.5
    assert turns.turn(("cache", "0", "softmax"), 0.1) is None  # set: no wait at all
    now[0] = FirstCalibration.RENEW_S + 1
    assert turns.turn(("cache", "0", "softmax"), 0.1) is not None
    started = time.monotonic()
    assert turns.turn(("cache", "0", "softmax"), 0.3) is None and time.monotonic() - started >= 0.3  # bounded


SINGLE = ("import sys, time\nfrom evolve.harness.parent import lease\nlease.CARD_TURN_S = 30.0\n"
          "lock = lease.card_lock('gpu', sys.argv[1])\nend = time.monotonic() + float(sys.argv[2])\ntakes = set()\n"
          "lock.acquire()\nprint('held', flush=True)\nwhile time.monotonic() < end:\n"
          "    takes.add(lock.held_since)\n    lock.release()\n    time.sleep(0.3)\n    lock.acquire()\n"
          "takes.add(lock.held_since)\nlock.release()\nprint(len(takes), flush=True)\n")


def test_a_one_lane_run_keeps_its_turn_between_evaluations():
    """A process with one evaluation at a time leaves the card without one between them: its turn goes on (the card
    kept for the next), rather than passing to a waiting process after every evaluation."""
    from evolve.harness.parent.lease import card_lock

    card = f"test-{os.getpid()}-{time.monotonic_ns()}"
    one = subprocess.Popen([sys.executable, "-c", SINGLE, card, "3"], stdout=subprocess.PIPE, text=True, cwd=ROOT)
    assert one.stdout.readline().strip() == "held"
    lock = card_lock("gpu", card)
    waited = lock.acquire()
    assert waited >= 2.0, waited  # until its last evaluation, 3 s after it began
    assert one.stdout.readline().strip() == "1"  # it took the card once: never lost it in a gap
    assert one.wait(timeout=30) == 0
    lock.release()
    lock._let_go_unless_kept(lock.kept)
    remove_card(lock)


def test_a_card_left_free_by_the_first_in_the_queue_goes_to_the_next(tmp_path):
    """The first in the queue may be stopped (Ctrl-Z) or hung: a card it leaves free goes to the next waiter after
    HEAD_GRACE_S, not after the 15 minutes a wait may last."""
    from evolve.harness.parent.lease import card_lock

    card = f"test-{os.getpid()}-{time.monotonic_ns()}"
    lock = card_lock("gpu", card)
    join = ("import sys, time\nfrom evolve.harness.parent.lease import card_lock\n"
            "lock = card_lock('gpu', sys.argv[1])\nlock._open()\nassert lock.queue.join()\n"
            "print('queued', flush=True)\ntime.sleep(60)\n")
    stopped = subprocess.Popen([sys.executable, "-c", join, card], stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        assert stopped.stdout.readline().strip() == "queued"
        stopped.send_signal(signal.SIGSTOP)
        began = time.monotonic()
        waited = lock.acquire()
        assert lease.HEAD_GRACE_S <= waited < lease.HEAD_GRACE_S + 3, waited
        assert time.monotonic() - began < lease.HEAD_GRACE_S + 3
    finally:
        stopped.kill()
        stopped.wait()
    lock.release()
    lock._let_go_unless_kept(lock.kept)
    remove_card(lock)


def remove_card(lock) -> None:
    """A test card's files in the machine's card folder: its lock, who held it, its queue (left empty)."""
    for path in (lock.path, lock.holder_path):
        path.unlink(missing_ok=True)
    for ticket in lock.queue.folder.glob("*") if lock.queue.folder.is_dir() else ():
        ticket.unlink()
    if lock.queue.folder.is_dir():
        lock.queue.folder.rmdir()
