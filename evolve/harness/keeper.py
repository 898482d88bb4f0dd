"""The runner's keeper: `python -S keeper.py RUNNER_ARGV...`, the parent of a runner, runs no candidate code.

It makes itself the subreaper of everything beneath it (PR_SET_CHILD_SUBREAPER), so a process the runner starts stays
its descendant even when it leaves its session, drops the evaluation's token and loses its parent: the keeper's tree
is the evaluation (harness/processes.py), and it dies with it. The keeper starts the runner, reaps whatever ends
beneath it, and when the runner ends or the parent is gone (its lifeline closes) kills the whole tree, then ends as
the runner did (the same exit code, or the same signal), so its parent reads the runner's end from the keeper's.
Where the parent names a user (EVOLVE_RUNNER_UID: it runs as root, harness/privilege.py), the forked child gives up
root before the runner's interpreter starts; the keeper itself stays root, and runs nothing the runner wrote.
Started as a script (no package import), it costs a bare interpreter's start-up; forked by the fork server
(harness/forkserver.py), it runs the runner's main in the forked child instead of starting an interpreter.
"""
import ctypes
import os
import select
import signal
import sys

PR_SET_CHILD_SUBREAPER = 36
PR_SET_DUMPABLE = 4
LIFELINE_ENV = "EVOLVE_LIFELINE"  # as harness/lifeline.py names it
UID_ENV = "EVOLVE_RUNNER_UID"  # as harness/privilege.py names it
DROP_FAILED = 126


def _load(name: str):
    """A module of harness/ by its path (this script imports no package)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"evolve_{name}", os.path.join(os.path.dirname(__file__),
                                                                                 f"{name}.py"))
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
    runner = os.fork()
    if runner == 0:
        try:
            uid = os.environ.get(UID_ENV)
            why = _load("privilege").drop(int(uid)) if uid else None
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
