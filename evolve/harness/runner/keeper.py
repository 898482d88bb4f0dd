"""The runner's keeper: `python -S keeper.py RUNNER_ARGV...`, the parent of a runner, runs no candidate code.

It makes itself the subreaper of everything beneath it (PR_SET_CHILD_SUBREAPER), so a process the runner starts stays
its descendant even when it leaves its session, drops the evaluation's token and loses its parent: the keeper's tree
is the evaluation (harness/shared/processes.py), and it dies with it. The keeper starts the runner, reaps whatever ends
beneath it, and when the runner ends or the parent is gone (its lifeline closes) kills the whole tree, then ends as
the runner did (the same exit code, or the same signal), so its parent reads the runner's end from the keeper's.
Where the parent names a user (EVOLVE_RUNNER_UID: it runs as root, harness/shared/privilege.py), the forked child gives
up root before the runner's interpreter starts; the keeper itself stays root, and runs nothing the runner wrote.
Before it starts the runner the keeper joins the evaluation's cgroup (EVOLVE_RUNNER_CGROUP, harness/parent/cgroup.py)
and makes the namespaces the parent names (EVOLVE_RUNNER_NAMESPACES: IPC and PID, and a user namespace where evolve is
not root): the runner is the first process of a PID namespace of its own, so it can name no process outside it (no
signal, prlimit, priority or affinity of another evaluation's or evolve's processes), and whatever it starts dies with
it; its System V objects live in an IPC namespace that ends with it. Where the parent asked for any of these and the
keeper cannot have it, no runner starts.
Started as a script (no package import), it costs a bare interpreter's start-up; forked by the fork server
(harness/parent/forkserver.py), it runs the runner's main in the forked child instead of starting an interpreter.
"""
import ctypes
import os
import select
import signal
import sys

PR_SET_CHILD_SUBREAPER = 36
PR_SET_DUMPABLE = 4
LIFELINE_ENV = "EVOLVE_LIFELINE"  # as harness/shared/lifeline.py names it
UID_ENV = "EVOLVE_RUNNER_UID"  # as harness/shared/privilege.py names it
READ_ANY_ENV = "EVOLVE_RUNNER_READS_ANY"  # as harness/shared/privilege.py names it
CGROUP_ENV = "EVOLVE_RUNNER_CGROUP"  # the cgroup.procs files of the evaluation's cgroup, joined by os.pathsep
NAMESPACES_ENV = "EVOLVE_RUNNER_NAMESPACES"  # which namespaces the runner gets: "ipc,pid" or "user,ipc,pid"
CLONE = {"ipc": 0x08000000, "pid": 0x20000000, "user": 0x10000000}
DROP_FAILED = 126


def _load(name: str):
    """A module of harness/shared/ by its path (this script imports no package)."""
    import importlib.util

    shared = os.path.join(os.path.dirname(os.path.dirname(__file__)), "shared")
    spec = importlib.util.spec_from_file_location(f"evolve_{name}", os.path.join(shared, f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv, run=None) -> int:
    """Keep argv[1:] (an interpreter to exec), or, given `run`, call it in the forked child and exit with its code."""
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        print(f"keeper: no subreaper ({os.strerror(ctypes.get_errno())})", file=sys.stderr)
        return 125
    lifeline = os.environ.get(LIFELINE_ENV)
    why = _enter(libc)
    if why is not None:
        print(f"keeper: {why}", file=sys.stderr)
        return DROP_FAILED
    runner = os.fork()
    if runner == 0:
        try:
            uid = os.environ.get(UID_ENV)
            why = _own_proc(libc)
            if why is None and uid:
                why = _load("privilege").drop(int(uid), os.environ.get(READ_ANY_ENV) == "1")
            if why is not None:
                os.write(2, f"keeper: {why}\n".encode())
                os._exit(DROP_FAILED)
            if run is None:
                os.execv(argv[1], argv[1:])
            if uid:  # as exec would leave it: the runner's /proc/self stays its own
                libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)
            exit_with(run)
        finally:
            os._exit(127)
    processes = _load("processes")
    status = None
    while status is None:
        if lifeline is not None:
            ready, _, _ = select.select([int(lifeline)], [], [], 0.2)
            if ready and not os.read(int(lifeline), 1):  # the parent is gone
                break
        else:
            select.select([], [], [], 0.2)
        while True:  # reap: the runner's end, and any orphan that ended beneath it
            try:
                pid, code = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            if pid == runner:
                status = code
    processes.kill_tree([os.getpid()])  # everything beneath the keeper (it spares itself)
    _reap()
    if status is None:
        return 137
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        if number not in (signal.SIGKILL, signal.SIGSTOP):  # no handler can be set for these (EINVAL)
            signal.signal(number, signal.SIG_DFL)
        os.kill(os.getpid(), number)
    return os.waitstatus_to_exitcode(status) if not os.WIFSIGNALED(status) else 128 + os.WTERMSIG(status)


def _enter(libc) -> str | None:
    """Join the evaluation's cgroup and make the runner's namespaces, as the parent asked. None, or why not."""
    for procs in filter(None, os.environ.get(CGROUP_ENV, "").split(os.pathsep)):
        try:
            with open(procs, "w") as f:
                f.write(str(os.getpid()))
        except OSError as exc:
            return f"the evaluation's cgroup could not be joined ({exc})"
    names = [n for n in os.environ.get(NAMESPACES_ENV, "").split(",") if n]
    if "user" in names:  # this user, mapped to itself: the rest may then be made without root
        uid, gid = os.geteuid(), os.getegid()
        if libc.unshare(CLONE["user"]) != 0:
            return f"no user namespace ({os.strerror(ctypes.get_errno())})"
        try:
            for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
                with open(f"/proc/self/{name}", "w") as f:
                    f.write(text)
        except OSError as exc:
            return f"the user namespace could not be mapped ({exc})"
    flags = 0
    for name in names:
        flags |= CLONE[name] if name != "user" else 0
    if flags and libc.unshare(flags) != 0:
        return f"no {' and '.join(n for n in names if n != 'user')} namespace ({os.strerror(ctypes.get_errno())})"
    return None


def _own_proc(libc) -> str | None:
    """In the runner, the first of its PID namespace: a /proc of that namespace, in a mount namespace of its own
    (the host's /proc names other processes by numbers that mean others here: tools that read /proc/PID of their
    own, cuobjdump among them, would read a stranger's). None, or why not."""
    if "pid" not in os.environ.get(NAMESPACES_ENV, "").split(","):
        return None
    CLONE_NEWNS, MS_REC, MS_PRIVATE = 0x00020000, 0x4000, 1 << 18
    MS_NOSUID, MS_NODEV, MS_NOEXEC = 2, 4, 8
    if libc.unshare(CLONE_NEWNS) != 0:
        return f"no mount namespace ({os.strerror(ctypes.get_errno())})"
    if libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None) != 0:  # nothing mounted here reaches the host
        return f"the mounts could not be made private ({os.strerror(ctypes.get_errno())})"
    if libc.mount(b"proc", b"/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None) != 0:
        return f"no /proc of its own ({os.strerror(ctypes.get_errno())})"
    return None


def exit_with(run) -> None:
    """Run `run` in this process and end it with its code, however it ends (the interpreter is not left)."""
    code = 1
    try:
        code = run()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:  # noqa: BLE001 - said on stderr, which the parent reads
        import traceback

        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001
                pass
        os._exit(code if isinstance(code, int) else 0)


def _reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, 0)
        except ChildProcessError:
            return


if __name__ == "__main__":
    sys.exit(main(sys.argv))
