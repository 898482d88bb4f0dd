"""The fork server: a process that has torch and Triton imported and forks an evaluation's processes from there, so
each evaluation does not import them again (about 5 s of CPU a process, three processes an evaluation).
`python -c "$ENTRY" SOCKET_FD` (the package imports this module, so it is not run with -m).

It runs no candidate code and reads nothing a runner wrote: it imports, says it is ready, then only forks on its
parent's request. A request is descriptors (SCM_RIGHTS): a nameless file that says the role (the measurer, or a
runner under its keeper), the arguments, environment, folder, limits and descriptor numbers the child gets, as
subprocess.Popen would give them, then the child's stdout, stderr and descriptors. The server never reads that file:
the child does, so no evaluation's folders, token or descriptors are ever in the memory a later child inherits, and
nothing secret is in it at all (the measurer's key comes in its job). The child makes a session of its own, puts the
descriptors at the numbers asked and closes every other, takes the environment and limits, and runs the role's main
as `python -m` would. The server reaps its children and tells the parent how each ended; it exits when the parent's
end of the socket closes.

What the imports read from the environment once (OpenMP's and OpenBLAS's thread counts, set when torch loads them)
is fixed per server: the parent starts one server per such setting (IMPORT_TIME).
"""
from __future__ import annotations

import atexit
import json
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

ENTRY = "import sys; from evolve.harness.parent import forkserver; sys.exit(forkserver.main(sys.argv))"
IMPORT_TIME = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "TRITON_INTERPRET")
MAX_MESSAGE = 1 << 20
MAX_FDS = 32
READY_WAIT_S = 180.0  # a cold torch import on a loaded machine
REPLY_WAIT_S = 60.0  # a fork: then the server is taken for gone and the parent starts processes itself


class ServerUnavailable(Exception):
    """The server is not running (or stopped answering); the caller starts the process itself."""


# -- the server ---------------------------------------------------------------------------------------------------
def _import_everything() -> None:
    """What the measurer and the runners import before they serve, and the modules their first uses of torch import
    (seconds each under load): paid once, here. CUDA stays uninitialised, or no forked child could use it."""
    import importlib

    import torch  # noqa: F401
    from torch.utils import _pytree  # noqa: F401

    from ...lang import DEFAULT, get
    from ..measurer import (ahead, calibration, checks, compare, cpu_mode, exchange, gpu_mode,  # noqa: F401
                            measurer, peaks, timing)
    from ..runner import jailed_child, keeper, runner  # noqa: F401
    from ..runner.static import check  # noqa: F401
    from ..shared import compiled, cuda_ipc, metrics, wire  # noqa: F401
    from . import verdict  # noqa: F401

    # the default language's runner side and what its first launch imports (another language's are imported by its
    # runners: whether a package's import leaves CUDA untouched, which every fork needs, is known for this one)
    for name in get(DEFAULT).warm_modules:
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    # Fake tensors (the measurer's shapes ahead) are not used here: their first use asks CUDA about the devices, and
    # anything that starts the CUDA driver in this process breaks every child forked after it. The measurer pays
    # their first use itself, after its own CUDA init (measurer._warm_gpu).
    if _fork_poisoned():
        raise RuntimeError("an import initialised CUDA: forked children could not use the card")


def _fork_poisoned() -> bool:
    """Whether a child forked now would find CUDA unusable: torch's own "Cannot re-initialize CUDA in forked
    subprocess", or a CUDA driver something else initialised in this process (cudaErrorInitializationError). Asked
    of a child, since only a child sees it; where this machine has an NVIDIA device the child uses it for real."""
    import torch

    if torch.cuda.is_initialized():
        return True
    device_here = os.path.exists("/dev/nvidiactl") and os.environ.get("CUDA_VISIBLE_DEVICES", "x") != ""
    pid = os.fork()
    if pid == 0:
        if torch.cuda._is_in_bad_fork():
            os._exit(1)
        if device_here:
            try:
                torch.zeros(1, device="cuda").add_(1)
                torch.cuda.synchronize()
            except BaseException:  # noqa: BLE001 - any failure here is one every forked child would meet
                os._exit(1)
        os._exit(0)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) != 0


def serve(sock: socket.socket) -> int:
    _import_everything()
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)  # a handler, so the wake-up byte is written
    _send(sock, {"ready": os.getpid()})
    while True:
        try:
            ready, _, _ = select.select([sock, wake_r], [], [])
        except InterruptedError:
            continue
        if wake_r in ready:
            os.read(wake_r, 4096)
        _reap(sock)
        if sock in ready:
            try:
                data, fds, _, _ = socket.recv_fds(sock, MAX_MESSAGE, MAX_FDS)
            except OSError:
                return 0
            if not data:
                return 0  # the parent is gone
            pid = os.fork()
            if pid == 0:
                _become(fds, sock, (wake_r, wake_w))  # never returns
            for fd in fds:
                os.close(fd)
            _send(sock, {"id": json.loads(data)["id"], "pid": pid})  # all the server reads of a request


def _reap(sock: socket.socket) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        _send(sock, {"exit": pid, "code": os.waitstatus_to_exitcode(status)})


def _send(sock: socket.socket, message: dict) -> None:
    try:
        sock.send(json.dumps(message).encode())
    except OSError:
        pass  # the parent is gone: the next receive ends the server


def _become(fds: list, sock: socket.socket, own: tuple) -> None:
    """In the forked child: the process the request (its first descriptor) asks for, then its role's main; never
    returns."""
    from ..runner import keeper

    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        sock.close()
        for fd in own:
            os.close(fd)
        os.setsid()
        with os.fdopen(fds[0], "rb") as said:
            request = json.loads(said.read())
        _place(fds[1:], request["fds"])
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        tempfile.tempdir = None  # taken from TMPDIR again
        limit(request["file_bytes"], request["nice"])
        sys.path[0] = request["cwd"]  # as `python -m` run there, with the child's PYTHONPATH
        added = [p for p in request["env"].get("PYTHONPATH", "").split(os.pathsep) if p and p not in sys.path]
        sys.path[1:1] = added
    except BaseException:  # noqa: BLE001 - said on the child's stderr, which the parent reads
        import traceback

        traceback.print_exc()
        os._exit(127)
    keeper.exit_with(lambda: _run(request["role"], request["args"]))


def _place(fds: list, numbers: list) -> None:
    """stdin from /dev/null, stdout and stderr the first two descriptors, the rest at the numbers asked; every other
    descriptor closed."""
    import fcntl

    high = max([*numbers, *fds, 2]) + 1
    moved = [fcntl.fcntl(fd, fcntl.F_DUPFD, high) for fd in fds]  # out of the way of the numbers asked
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(moved[0], 1)
    os.dup2(moved[1], 2)
    for fd, number in zip(moved[2:], numbers):
        os.dup2(fd, number)  # inheritable, as pass_fds leaves them
    keep = sorted({0, 1, 2, *numbers})
    for low, above in zip(keep, [*keep[1:], os.sysconf("SC_OPEN_MAX")]):
        os.closerange(low + 1, above)


def limit(file_bytes: int | None, nice: int = 0) -> None:
    """A runner's limits, in the process itself: no core file, files up to file_bytes, and the priority lowered by
    `nice` (which an unprivileged process cannot take back); nothing for the measurer (file_bytes None)."""
    import resource

    if file_bytes is None:
        return
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_FSIZE, (file_bytes, file_bytes))
    if nice:
        os.nice(nice)


def _run(role: str, args: list) -> int:
    if role == "measurer":
        from ..measurer import measurer

        sys.argv = [measurer.__file__, *args]
        return measurer.main(sys.argv)
    if role == "jailed":
        from ..runner import jailed_child

        sys.argv = [jailed_child.__file__, *args]
        return jailed_child.main(sys.argv)
    from ..runner import keeper, runner

    def start_runner() -> int:
        sys.argv = [runner.__file__, *args]
        return runner.main(sys.argv)

    return keeper.main([keeper.__file__, sys.executable, "-m", "evolve.harness.runner.runner", *args], run=start_runner)


def main(argv) -> int:
    sock = socket.socket(fileno=int(argv[1]))
    return serve(sock)


# -- the parent's side --------------------------------------------------------------------------------------------
class Forked:
    """A child of the server, as much of subprocess.Popen as an evaluation's processes need."""

    def __init__(self, server: "ForkServer", pid: int):
        self.server, self.pid, self.returncode = server, pid, None
        self._lock = threading.Lock()
        try:  # its end can be seen should the server go; one that has ended already has it reported
            self._pidfd = os.pidfd_open(pid)
        except (AttributeError, OSError):
            self._pidfd = None

    def poll(self):
        with self._lock:  # threads may wait on it together: its descriptor is closed once, by one of them
            if self.returncode is None:
                self.returncode = self.server.exit_code(self.pid, self._pidfd)
                if self.returncode is not None and self._pidfd is not None:
                    os.close(self._pidfd)
                    self._pidfd = None
            return self.returncode

    def wait(self, timeout: float | None = None):
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise subprocess.TimeoutExpired(f"forked process {self.pid}", timeout)
            self.server.wait_for_exit(min(0.2, left) if left is not None else 0.2)
        return self.returncode


class ForkServer:
    """One server, started with the environment its imports read (harness/parent/sandbox.py builds it)."""

    def __init__(self, env: dict, cwd: str):
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.sock = ours
        self._stderr = tempfile.TemporaryFile()
        self.proc = subprocess.Popen([sys.executable, "-c", ENTRY, str(theirs.fileno())],
                                     pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=self._stderr, cwd=cwd, env=env,
                                     start_new_session=True)
        theirs.close()
        self._lock = threading.Lock()  # one request at a time
        self._changed = threading.Condition()
        self._replies: dict[int, int] = {}
        self._exits: dict[int, int] = {}
        self._count = 0
        self.gone = False
        self.sock.settimeout(READY_WAIT_S)
        try:
            hello = json.loads(self.sock.recv(MAX_MESSAGE) or b"null")
        except (OSError, ValueError):
            hello = None
        if not isinstance(hello, dict) or "ready" not in hello:
            self.close()
            raise ServerUnavailable(f"the fork server did not start{self._said()}")
        self.sock.settimeout(None)
        threading.Thread(target=self._read, daemon=True, name="evolve-forkserver").start()

    def _said(self) -> str:
        self._stderr.seek(0)
        lines = self._stderr.read().decode(errors="replace").strip().splitlines()
        return f": {lines[-1][:300]}" if lines else ""

    def _read(self) -> None:
        while True:
            try:
                data = self.sock.recv(MAX_MESSAGE)
            except OSError:
                data = b""
            with self._changed:
                if not data:
                    self.gone = True
                    self._changed.notify_all()
                    return
                message = json.loads(data)
                if "exit" in message:
                    self._exits[message["exit"]] = message["code"]
                else:
                    self._replies[message["id"]] = message["pid"]
                self._changed.notify_all()

    def spawn(self, role: str, args: list, env: dict, cwd: str, pass_fds, stdout, stderr, file_bytes: int | None,
              nice: int = 0) -> Forked:
        """Fork a measurer, a keeper with its runner, or a jailed child (harness/parent/jailed.py);
        ServerUnavailable if it cannot."""
        request = {"role": role, "args": [str(a) for a in args], "env": env, "cwd": str(cwd), "fds": list(pass_fds),
                   "file_bytes": file_bytes, "nice": nice}
        said = os.memfd_create("evolve-request")  # read by the child alone
        try:
            with os.fdopen(os.dup(said), "wb") as out:
                out.write(json.dumps(request).encode())
            os.lseek(said, 0, os.SEEK_SET)
            with self._lock:
                if self.gone:
                    raise ServerUnavailable("the fork server has ended")
                self._count += 1
                ident = self._count
                try:
                    socket.send_fds(self.sock, [json.dumps({"id": ident}).encode()],
                                    [said, stdout.fileno(), stderr.fileno(), *pass_fds])
                except OSError as exc:
                    raise ServerUnavailable(f"the fork server could not be asked ({exc})") from None
                pid = self._reply(ident)
        finally:
            os.close(said)
        if pid is None:
            self.close()
            raise ServerUnavailable("the fork server did not answer")
        return Forked(self, pid)

    def _reply(self, ident: int) -> int | None:
        """The pid the server answers a request with (None when it is gone or silent for REPLY_WAIT_S)."""
        deadline = time.monotonic() + REPLY_WAIT_S
        with self._changed:
            while ident not in self._replies and not self.gone and time.monotonic() < deadline:
                self._changed.wait(deadline - time.monotonic())
            return self._replies.pop(ident, None)

    def exit_code(self, pid: int, pidfd: int | None):
        with self._changed:
            if pid in self._exits:
                return self._exits.pop(pid)
            gone = self.gone
        if gone and (pidfd is None or select.select([pidfd], [], [], 0)[0]):
            return -signal.SIGKILL  # ended after the server did: how is not known
        return None

    def wait_for_exit(self, seconds: float) -> None:
        with self._changed:
            self._changed.wait(seconds)

    def close(self) -> None:
        self.gone = True
        try:  # shut down first: a close alone leaves the socket open while the reader thread waits in recv on it
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        try:
            self.sock.close()  # the server reads its end and exits
        except OSError:
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._stderr.close()


class Servers:
    """The parent's fork servers, one per setting of what the imports read, each started on first use; all closed at
    interpreter exit. A server that failed to start is tried again after RETRY_S, then after twice as long each time it
    fails again (up to RETRY_MAX_S): its start holds up every evaluation's."""

    RETRY_S = 60.0
    RETRY_MAX_S = 1800.0

    def __init__(self):
        self._servers: dict[tuple, ForkServer] = {}
        self._failed: dict[tuple, tuple[float, int]] = {}  # key -> when it last failed to start, failures in a row
        self._lock = threading.Lock()
        atexit.register(self.clear)

    def get(self, env: dict, server_env) -> ForkServer | None:
        """The server for a child's environment `env`; `server_env()` is the environment one is started with."""
        key = tuple(env.get(name) for name in IMPORT_TIME)
        with self._lock:  # held while one starts: the others would only start another
            server = self._servers.get(key)
            if server is not None and not server.gone:
                return server
            when, failures = self._failed.get(key, (0.0, 0))
            if failures and time.monotonic() - when < min(self.RETRY_S * 2 ** (failures - 1), self.RETRY_MAX_S):
                return None
            try:
                self._servers[key] = server = ForkServer(server_env(), os.path.dirname(os.path.dirname(_PACKAGE)))
            except (ServerUnavailable, OSError):
                self._failed[key] = (time.monotonic(), failures + 1)
                return None
            self._failed.pop(key, None)
            return server

    def clear(self) -> None:
        with self._lock:
            servers, self._servers = list(self._servers.values()), {}
        for server in servers:
            server.close()


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # evolve/harness
SERVERS = Servers()
