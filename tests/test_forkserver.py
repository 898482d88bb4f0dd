"""An evaluation's processes forked from the fork server (harness/parent/forkserver.py): the same processes, holding the
same descriptors, limits and verdicts as processes started on their own, and nothing waits on a server that is gone."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from test_privilege import _root_only, needs_root
from test_trust import MINI

from evolve.harness import EvalOptions, evaluate
from evolve.harness.parent import forkserver
from evolve.harness.parent.sandbox import EvaluationProcesses


def _parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def _descriptors_once_set_up(pid: int, expected: int) -> int:
    """How many descriptors the process holds, once it holds `expected` (a forked child closes the server's
    shortly after the fork returns) or 30 s have passed."""
    deadline = time.monotonic() + 30
    while True:
        count = len(os.listdir(f"/proc/{pid}/fd"))
        if count == expected or time.monotonic() > deadline:
            return count
        time.sleep(0.05)


def _servers() -> set:
    return {server.proc.pid for server in forkserver.SERVERS._servers.values() if not server.gone}


def test_an_evaluations_processes_are_forked_with_only_what_they_are_given(tmp_path):
    """Each process is the server's child, in a session of its own, holding stdin, stdout, stderr and the descriptors
    the crew passed it (nothing of the server's)."""
    crew = EvaluationProcesses("cpu", str(tmp_path / "cache"))
    try:
        assert set(crew.procs) == {"compile", "interpret", "measurer"}
        servers = _servers()
        assert len(servers) == 2  # the interpreter's imports read other thread settings: a server of its own
        measurer = crew.procs["measurer"].pid
        # stdin, stdout, stderr, the job, the messages, the lifeline, the lease's grant, two pipes per runner
        assert _descriptors_once_set_up(measurer, 3 + 4 + 2 * 2) == 3 + 4 + 2 * 2
        for name in ("compile", "interpret"):  # a keeper: stdin, stdout, stderr, the runner's two pipes, the lifeline
            assert _descriptors_once_set_up(crew.procs[name].pid, 3 + 3) == 3 + 3, name
        for name, proc in crew.procs.items():  # (set up by now: the session is made before the descriptors)
            assert isinstance(proc, forkserver.Forked), name
            assert _parent(proc.pid) in servers and os.getsid(proc.pid) == proc.pid, name
    finally:
        crew.discard()
    for proc in crew.procs.values():
        assert proc.wait(timeout=30) is not None


def test_a_forked_evaluation_gives_the_verdict_a_started_one_gives(tmp_path):
    """The mini problem's seed, forked and started on its own: every rung passes both ways, under the same jail."""
    opts = EvalOptions(cache_dir=str(tmp_path / "cache"), timeout_s=300, device="cpu")
    started = evaluate(MINI / "seeds" / "softmax_rows.py", MINI, EvalOptions(**{**opts.__dict__, "fork_server": False}))
    forked = evaluate(MINI / "seeds" / "softmax_rows.py", MINI, opts)
    assert started.ok and forked.ok, [(r.name, r.reason) for r in (*started.rungs, *forked.rungs)]
    assert [(r.name, r.status) for r in started.rungs] == [(r.name, r.status) for r in forked.rungs]
    import re

    same = lambda jail: re.sub(r"uid \d+", "uid N", jail)  # noqa: E731 - each evaluation has a user of its own
    assert same(forked.jail) == same(started.jail)


def test_nothing_waits_on_a_server_that_is_gone(tmp_path):
    """A server killed while its children run: they are still waited for and killed, and the next crew starts (from
    a new server, or on its own)."""
    crew = EvaluationProcesses("cpu", str(tmp_path / "cache"))
    for pid in _servers():
        os.kill(pid, signal.SIGKILL)
    try:
        time.sleep(0.5)
        assert all(proc.poll() is None for proc in crew.procs.values())  # the evaluation's processes live on
    finally:
        crew.discard()
    assert all(proc.wait(timeout=30) is not None for proc in crew.procs.values())
    again = EvaluationProcesses("cpu", str(tmp_path / "cache"))
    try:
        assert again.alive()
    finally:
        again.discard()


def test_the_server_ends_with_its_parent(tmp_path):
    """The server reads its parent's end of the socket: when the parent dies (SIGKILL, no clean-up), it exits."""
    script = ("import os, sys\n"
              "from evolve.harness.parent import sandbox, forkserver\n"
              "crew = sandbox.EvaluationProcesses('cpu', sys.argv[1])\n"
              "print(' '.join(str(s.proc.pid) for s in forkserver.SERVERS._servers.values()), flush=True)\n"
              "os.kill(os.getpid(), 9)\n")
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path / "cache")], capture_output=True, text=True,
                          timeout=300)
    pids = [int(p) for p in done.stdout.split()]
    assert pids, done.stderr
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and any(Path(f"/proc/{pid}").exists() for pid in pids):
        time.sleep(0.2)
    assert not any(Path(f"/proc/{pid}").exists() and _state(pid) != "Z" for pid in pids)


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"


@needs_root
def test_a_forked_runner_gives_up_root_as_a_started_one_does(tmp_path):
    """The keeper's child, forked rather than started, drops every id before the runner's main runs; it cannot read
    a root-only file nor take root back, and its /proc/self is its own (dumpable, as after an exec)."""
    secret = _root_only(tmp_path)
    script = f"""
import ctypes, os, sys
from evolve.harness.runner import keeper
from evolve.harness.shared import privilege
os.environ[privilege.UID_ENV] = str(privilege.UNPRIVILEGED)

def runner():
    print(os.getresuid(), os.getresgid(), os.getgroups())
    print(ctypes.CDLL(None).prctl(3, 0, 0, 0, 0), len(os.listdir('/proc/self/fd')) > 2)
    for attempt in (lambda: os.setuid(0), lambda: open({str(secret)!r}).read()):
        try:
            attempt()
        except (PermissionError, OSError):
            print('refused')
    return 3

sys.exit(keeper.main(['keeper', 'unused'], run=runner))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 3, done.stderr
    assert done.stdout.splitlines() == ["(65534, 65534, 65534) (65534, 65534, 65534) []", "1 True",
                                        "refused", "refused"]


def test_a_forked_runner_gets_the_priority_and_limits_asked(tmp_path):
    """A runner forked with a priority and a file-size limit (the compile-ahead runner's) runs under both, its
    keeper too, as one started with them does."""
    from evolve.harness.parent.sandbox import RUNNER_FILE_BYTES, _env, _server_env

    folder = tmp_path / "compile"
    (folder / "tmp").mkdir(parents=True)
    to_runner_r, to_runner_w = os.pipe()
    from_runner_r, from_runner_w = os.pipe()
    env = _env("token", folder, {"TMPDIR": str(folder / "tmp"), "CUDA_VISIBLE_DEVICES": ""})
    server = forkserver.SERVERS.get(env, lambda: _server_env(env))
    assert server is not None
    with open(tmp_path / "out", "wb") as out, open(tmp_path / "err", "wb") as err:
        keeper = server.spawn("runner", [to_runner_r, from_runner_w, "compile", folder, tmp_path, "triton"],
                              env, folder, (to_runner_r, from_runner_w), out, err, RUNNER_FILE_BYTES, 19)
    os.close(to_runner_r)
    os.close(from_runner_w)
    try:
        assert os.read(from_runner_r, 1)  # its first message: the runner is up, waiting for the measurer
        own = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[16])
        for pid in (keeper.pid, *[p for p, parent in _all_parents().items() if parent == keeper.pid]):
            stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            assert int(stat[16]) == min(own + 19, 19)
            limits = Path(f"/proc/{pid}/limits").read_text()
            assert f"Max file size             {RUNNER_FILE_BYTES}" in limits
    finally:
        os.close(to_runner_w)  # the runner reads the end and exits, its keeper with it
        os.close(from_runner_r)
        assert keeper.wait(timeout=60) is not None


def _all_parents() -> dict:
    from evolve.harness.shared.processes import parents

    return parents()


def _memory_holds(pid: int, needle: bytes) -> bool:
    """Whether the process's writable memory holds the bytes (its heap, stacks and anonymous maps)."""
    found = False
    with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", 0) as mem:
        for line in maps:
            fields = line.split()
            if "rw" not in fields[1] or (len(fields) > 5 and not fields[5].startswith("[")):
                continue  # read-only, or a file's own pages
            start, end = (int(x, 16) for x in fields[0].split("-"))
            if end - start > 1 << 30:
                continue
            try:
                mem.seek(start)
                found = found or needle in mem.read(end - start)
            except (OSError, ValueError, OverflowError):
                continue
    return found


def test_the_server_never_holds_what_a_request_says(tmp_path):
    """A request's environment, folders and descriptors are read by the child alone: a later child, which inherits the
    server's memory, finds no earlier evaluation's token there (the measurer, which was given it, holds it)."""
    crew = EvaluationProcesses("cpu", str(tmp_path / "cache"))
    try:
        measurer = crew.procs["measurer"].pid
        _descriptors_once_set_up(measurer, 3 + 4 + 2 * 2)
        token = crew.token.encode()
        assert _memory_holds(measurer, token)  # the scan finds it where it is
        assert not any(_memory_holds(pid, token) for pid in _servers())
    finally:
        crew.discard()


def test_the_servers_imports_leave_forks_able_to_use_cuda(monkeypatch):
    # a fork after anything in the process has started CUDA cannot use the card: the server's imports never ask
    # (no fake tensor is made there), and it checks a child before it serves (a server that finds it so exits, so
    # the processes start as interpreters)
    import torch

    asked = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: asked.append(1) or False)
    forkserver._import_everything()
    assert asked == [] and not forkserver._fork_poisoned()


def test_where_a_card_is_the_check_forks_a_child_that_uses_it(monkeypatch):
    """On a machine with an NVIDIA device the child the server checks makes a tensor on the card: a CUDA driver
    something else started in the server (torch would not know) shows there. Here, with no card, that child fails,
    as a poisoned one would."""
    import os

    real = os.path.exists
    monkeypatch.setattr(os.path, "exists", lambda path: path == "/dev/nvidiactl" or real(path))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    assert forkserver._fork_poisoned()
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")  # no card visible to this process: nothing to use
    assert not forkserver._fork_poisoned()


def test_a_server_that_fails_to_start_is_tried_again_less_and_less_often(monkeypatch):
    now, starts = [1000.0], []

    def failing(env, cwd):
        starts.append(now[0])
        raise forkserver.ServerUnavailable("it could not start")

    monkeypatch.setattr(forkserver, "ForkServer", failing)
    monkeypatch.setattr(forkserver.time, "monotonic", lambda: now[0])
    servers = forkserver.Servers()
    for at in (0, 30, 61, 150, 182, 300, 423, 20000, 20900, 20960, 22759, 22760):  # back off 60, 120 ... 1800 s
        now[0] = 1000.0 + at
        assert servers.get({}, dict) is None
    assert [t - 1000.0 for t in starts] == [0, 61, 182, 423, 20000, 20960, 22760]
