"""Every evaluation a world of its own: a user no other evaluation has, a cgroup that counts and limits all its
runners cause, IPC and PID namespaces of its own (harness/parent/isolation.py). Each candidate here runs with the static
check off, as a candidate that walked around it would; where this machine lacks a mechanism, its test skips and says
which."""
import itertools
import os
from dataclasses import replace
from pathlib import Path

import pytest
from test_isolation import candidate, failed

from evolve.harness import evaluate

from evolve.harness.parent import isolation
from evolve.harness.shared import privilege
ROOT = Path(__file__).resolve().parents[1]
SOFTMAX = ROOT / "tests" / "adversarial" / "problem"
HERE = isolation.here()
needs_cgroup = pytest.mark.skipif(bool(HERE.cgroups.missing), reason=f"no cgroup here: {HERE.cgroups.missing}")
needs_namespaces = pytest.mark.skipif(not HERE.namespaces, reason=f"no namespaces here: {HERE.namespaces_missing}")
needs_users = pytest.mark.skipif(not HERE.users.drop_root, reason="only root hands each evaluation a user")


@needs_namespaces
def test_a_runner_can_name_no_process_outside_its_evaluation(tmp_path, options):
    """prlimit on another evaluation's runner once let one evaluation kill another (RLIMIT_CPU); it is asked here of
    every process the runner can see in /proc (reading a limit is allowed exactly where setting one is). A runner
    that reaches any process but itself returns an unwritten output, and fails."""
    path = candidate(tmp_path, '''
        import os, resource

        def reached():
            me = {os.getpid(), int(os.readlink("/proc/self"))}
            count = 0
            for name in os.listdir("/proc"):
                if name.isdigit() and int(name) not in me:
                    try:
                        resource.prlimit(int(name), resource.RLIMIT_CPU)
                        count += 1
                    except OSError:
                        pass
            return count

        REACHED = reached()

        def custom_kernel(x):
            out = launch(x)
            return torch.empty_like(x) if REACHED else out
    ''')
    verdict = evaluate(path, SOFTMAX, replace(options, static_check=False))
    assert verdict.ok, [(r.name, r.reason) for r in verdict.rungs]
    assert "IPC and PID namespaces of its own" in verdict.jail


@needs_cgroup
@needs_namespaces
def test_system_v_memory_counts_and_ends_with_the_evaluation(tmp_path, options):
    """A System V segment filled and detached is held by no process: /proc's reads never counted it (3 GB passed
    under --max-memory 2) and it outlived the evaluation. The cgroup counts it; the IPC namespace ends with it."""
    size = 1_500_000_000 + 4096 * 7  # a size no other segment has
    path = candidate(tmp_path, f'''
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        libc.shmat.restype = ctypes.c_void_p
        segment = libc.shmget(0, {size}, 0o600)
        for start in range(0, {size}, 1 << 26):  # a slice at a time: never much of it mapped, so never resident
            address = libc.shmat(segment, None, 0)
            ctypes.memset(address + start, 1, min(1 << 26, {size} - start))
            libc.shmdt(ctypes.c_void_p(address))

        def custom_kernel(x):
            return launch(x)
    ''')
    verdict = evaluate(path, SOFTMAX, replace(options, static_check=False, max_rss_gb=1.0))
    assert "more than 1 GB of host memory" in failed(verdict).reason
    with open("/proc/sysvipc/shm") as f:
        assert not [line for line in f if f" {size} " in line]


@needs_cgroup
def test_memory_held_only_in_a_socket_counts(tmp_path, options):
    """memfds filled, sent over a socket to nobody and closed: no process holds one open, so /proc's reads never saw
    them (3.3 GB for a minute under --max-memory 2, and the evaluation passed). Their pages are the cgroup's."""
    path = candidate(tmp_path, '''
        import os, socket
        ends = socket.socketpair()
        for _ in range(20):  # 75 MB at a time, each memfd open for moments only: never much of it seen open
            fd = os.memfd_create("held")
            for _ in range(75):
                os.write(fd, b"1" * (1 << 20))
            socket.send_fds(ends[0], [b"x"], [fd])
            os.close(fd)

        def custom_kernel(x):
            return launch(x)
    ''')
    verdict = evaluate(path, SOFTMAX, replace(options, static_check=False, max_rss_gb=1.0))
    assert "more than 1 GB of host memory" in failed(verdict).reason


@needs_cgroup
def test_the_number_of_tasks_is_limited(tmp_path, options):
    """A runner that starts threads without end stops at the cgroup's pids.max; one that could start them all
    returns an unwritten output, and fails."""
    path = candidate(tmp_path, '''
        import threading
        stop = threading.Event()
        started = 0
        try:
            for _ in range(6000):
                threading.Thread(target=stop.wait, daemon=True).start()
                started += 1
        except RuntimeError:
            pass
        stop.set()
        BOUNDED = started < 6000

        def custom_kernel(x):
            out = launch(x)
            return out if BOUNDED else torch.empty_like(x)
    ''')
    verdict = evaluate(path, SOFTMAX, replace(options, static_check=False))
    assert verdict.ok, [(r.name, r.reason) for r in verdict.rungs]


@needs_users
def test_each_evaluation_has_a_user_no_other_holds(tmp_path):
    """Users are leased: one leased here, one locked by another process, and one a running process has are each
    skipped; a released one is leased again."""
    import subprocess

    users = privilege.runner_users()
    first = users.lease()
    folder = users._lock_folder()
    held = first + 1
    locker = subprocess.Popen(["python3", "-c", "import fcntl, os, sys, time\n"
                               f"fd = os.open({os.path.join(folder, str(held))!r}, os.O_RDWR | os.O_CREAT)\n"
                               "fcntl.flock(fd, fcntl.LOCK_EX); print('locked', flush=True); time.sleep(60)"],
                              stdout=subprocess.PIPE, text=True)
    running = subprocess.Popen(["sleep", "60"], user=held + 1, group=held + 1, extra_groups=[])
    try:
        assert locker.stdout.readline().strip() == "locked"
        second = users.lease()
        assert first not in (second,) and second not in (held, held + 1), (first, second)
        users.release(first)
        assert users.lease() == first
        users.release(first)
        users.release(second)
    finally:
        locker.kill()
        running.kill()
        locker.wait()
        running.wait()
    assert privilege.UID_FIRST <= first < privilege.UID_FIRST + privilege.UID_COUNT


def test_what_is_missing_is_said_with_what_it_leaves_open():
    """Where a mechanism is missing, the start of a run or an eval says which and what that leaves open."""
    from evolve.harness.parent.cgroup import Cgroups

    bare = replace(HERE, landlock=0, users=privilege.RunnerUsers(False, False, "uid 65000 cannot read /root"),
                   cgroups=Cgroups(0, {}, "not root"), namespaces=(), namespaces_missing="unshare: EPERM")
    gaps = bare.gaps()
    assert len(gaps) == 4
    assert any(g.startswith("no Landlock jail") for g in gaps)
    assert any("runners keep root (uid 65000 cannot read /root)" in g for g in gaps)
    assert any("no cgroup (not root)" in g and "System V" in g for g in gaps)
    assert any("no IPC and PID namespaces (unshare: EPERM)" in g for g in gaps)


def test_the_start_of_an_eval_says_what_is_missing(tmp_path, monkeypatch):
    """`evolve eval` (and `evolve run`) say each missing mechanism before the first rung, on stderr."""
    from click.testing import CliRunner

    from evolve.cli import cli
    from evolve.harness.parent.cgroup import Cgroups

    kept_root = replace(HERE, users=privilege.RunnerUsers(False, False, "uid 65000 cannot read /root"),
                        cgroups=Cgroups(0, {}, "not root"))
    monkeypatch.setattr(isolation, "_FOUND", [kept_root])
    bad = tmp_path / "bad.py"
    bad.write_text("import os\n\ndef custom_kernel(x):\n    return x\n")
    result = CliRunner().invoke(cli, ["eval", str(bad), str(SOFTMAX), "--cache-dir", str(tmp_path / "cache")])
    said = [line for line in result.stderr.splitlines() if line.startswith("isolation: ")]
    assert any("runners keep root (uid 65000 cannot read /root)" in line for line in said), result.stderr
    assert any("no cgroup (not root)" in line for line in said)
    assert "[load]" in result.stdout and "imports os" in result.stdout and result.exit_code == 1


def test_a_v2_cgroup_is_one_folder_for_both_controllers_and_names_never_collide(tmp_path):
    """Under cgroup v2 the memory and pids controllers share one folder per evaluation: making it twice failed every
    evaluation on a v2 host. A name left by an earlier process of the same pid is passed over."""
    from evolve.harness.parent.cgroup import Cgroups

    groups = Cgroups(2, {"memory": str(tmp_path), "pids": str(tmp_path)})
    (tmp_path / f"{os.getpid()}-{_next_number()}").mkdir()  # as if left behind
    first, second = groups.make(), groups.make()
    assert first.folders["memory"] == first.folders["pids"] != second.folders["pids"]
    assert (Path(first.folders["pids"]) / "pids.max").read_text() == "4096"


def _next_number() -> int:
    """The number the next cgroup of this process would take (without taking it)."""
    from evolve.harness.parent import cgroup

    number = next(cgroup._NUMBERS)
    cgroup._NUMBERS = itertools.count(number)
    return number
