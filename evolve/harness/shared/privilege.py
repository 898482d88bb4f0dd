"""Giving up root, and a user of its own for every evaluation. A runner started by root runs as a user no other
evaluation and no measurer shares, from its first instruction: its keeper drops the ids in the forked child, before the
runner's interpreter starts, so neither evolve's runner modules nor the candidate ever run as root (no card settings
through the device files, no file of another user written, no process of another evaluation or of evolve's signalled,
limited (prlimit), reprioritised or pinned).

The users are UID_FIRST.. (Debian's reserved range below nobody, which a container's usual map of 65536 ids holds);
each evaluation leases one (`lease`) for as long as its processes live, under a lock in a folder only root may enter,
so two evolve processes on one machine never hand out the same one, and never one a running process has.

Whether the drop can work is decided once per process, by a probe: a child gives up root and checks that it can still
run this interpreter and read torch, Triton and evolve. Where it cannot (an interpreter under a folder only root may
enter, such as /root), the runner keeps one capability, CAP_DAC_READ_SEARCH (it may read any file, as root could, and
nothing more: it writes, signals and limits as its own user), and the verdict says so; only where even that cannot
start a runner do runners keep root, which every verdict and the start of every run and eval say, with the reason.
This file imports nothing but the standard library: the keeper loads it by path.
"""
from __future__ import annotations

import ctypes
import os
import sys

UNPRIVILEGED = 65534  # nobody
UID_FIRST, UID_COUNT = 65000, 500  # the runners' users, one per evaluation
UID_ENV = "EVOLVE_RUNNER_UID"  # set by the parent for the keeper: the user its runner runs as
READ_ANY_ENV = "EVOLVE_RUNNER_READS_ANY"  # set where that user keeps CAP_DAC_READ_SEARCH to read the interpreter
CAP_DAC_READ_SEARCH = 2
PR_SET_KEEPCAPS, PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE = 8, 47, 2
_CAPABILITY_VERSION_3 = 0x20080522
_DECIDED: list = []  # the RunnerUsers, once per process


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def _keep_read_any(libc) -> str | None:
    """After the ids changed with PR_SET_KEEPCAPS: CAP_DAC_READ_SEARCH alone, kept across exec (ambient)."""
    header = _CapHeader(_CAPABILITY_VERSION_3, 0)
    bit = 1 << CAP_DAC_READ_SEARCH
    data = (_CapData * 2)(_CapData(bit, bit, bit), _CapData(0, 0, 0))
    if libc.capset(ctypes.byref(header), data) != 0:
        return f"capset failed ({os.strerror(ctypes.get_errno())})"
    if libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_DAC_READ_SEARCH, 0, 0) != 0:
        return f"the ambient capability could not be raised ({os.strerror(ctypes.get_errno())})"
    libc.prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0)
    return None


def drop(uid: int = UNPRIVILEGED, read_any: bool = False) -> str | None:
    """As root: become uid for good (no groups; real, effective and saved ids), keeping CAP_DAC_READ_SEARCH alone
    where read_any. None, or why not."""
    libc = ctypes.CDLL(None, use_errno=True)
    try:
        if read_any and libc.prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) != 0:
            return f"root could not be given up (PR_SET_KEEPCAPS: {os.strerror(ctypes.get_errno())})"
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
    except (OSError, OverflowError, ValueError) as exc:  # not permitted, or no such id
        return f"root could not be given up ({exc})"
    if read_any:
        why = _keep_read_any(libc)
        if why:
            return f"root could not be given up ({why})"
    if os.getresuid() != (uid,) * 3 or os.getresgid() != (uid,) * 3 or os.getgroups():
        return "root could not be given up (the ids did not change)"
    try:
        os.setuid(0)
    except OSError:
        return None
    return "root could not be given up (it could be taken back)"


def needed_paths() -> list[str]:
    """What a runner must read to start: this interpreter, its standard library, torch, Triton and evolve."""
    import importlib.util
    import sysconfig

    paths = [os.path.realpath(sys.executable), sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["purelib"]]
    for name in ("torch", "triton", "evolve"):
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.submodule_search_locations:
            paths.extend(spec.submodule_search_locations)
    return [os.path.realpath(p) for p in paths]


_CHECK = ("import os, sys\n"  # as the process is: its effective ids and capabilities
          "for path in sys.argv[1:]:\n"
          "    if not os.access(path, os.R_OK | os.X_OK, effective_ids=True):\n"
          "        sys.exit(f'cannot read {path}')\n")


def probe(uid: int = UNPRIVILEGED, python: str = sys.executable, read_any: bool = False) -> str | None:
    """As root: whether a process that gives up root can still start a runner with python. None, or why not."""
    import subprocess

    def become():
        why = drop(uid, read_any)
        if why:
            os.write(2, f"{why}\n".encode())
            os._exit(126)

    try:
        done = subprocess.run([python, "-S", "-c", _CHECK, *needed_paths()], preexec_fn=become, capture_output=True,
                              text=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"uid {uid} cannot run {os.path.realpath(python)} ({type(exc).__name__}: {exc})"
    if done.returncode != 0:
        said = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        if "Permission denied" in said and not read_any:
            said = f"cannot run {os.path.realpath(python)} ({said})"
        return f"uid {uid} {said[:300]}"
    return None


class RunnerUsers:
    """Whom runners run as: a leased user per evaluation (root), or this process's own user; and how a verdict says
    it."""

    def __init__(self, drop_root: bool, read_any: bool, why: str | None):
        self.drop_root, self.read_any = drop_root, read_any
        self.why = why  # what the probe found, where runners keep a capability or root
        self._held: dict[int, int] = {}  # uid -> the lock's descriptor, for this process's leases
        self._folder: str | None = None

    def describe(self, uid: int | None) -> str:
        if not self.drop_root:
            return f"runs as root: {self.why}; run evolve from an interpreter and folders others can read to have " \
                   "runners give up root" if self.why else f"runs as uid {os.geteuid()}"
        extra = f", reading any file (CAP_DAC_READ_SEARCH) since its user alone {self.why}" if self.read_any else ""
        return f"runs as uid {uid}, a user of this evaluation's own{extra}"

    def lease(self) -> int | None:
        """A user for one evaluation, held until `release`; None where runners do not give up root."""
        if not self.drop_root:
            return None
        import fcntl

        folder = self._lock_folder()
        busy = _running_uids()
        for uid in range(UID_FIRST, UID_FIRST + UID_COUNT):
            if uid in self._held or uid in busy:
                continue
            fd = os.open(os.path.join(folder, str(uid)), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                continue
            self._held[uid] = fd
            return uid
        raise RuntimeError(f"all {UID_COUNT} runner users from {UID_FIRST} are held by evaluations on this machine")

    def release(self, uid: int | None) -> None:
        fd = self._held.pop(uid, None)
        if fd is not None:
            os.close(fd)

    def _lock_folder(self) -> str:
        """A folder only root may enter, where each leased user is a locked file (shared by evolve processes)."""
        if self._folder is None:
            import stat
            import tempfile

            folder = os.path.join("/run" if os.access("/run", os.W_OK) else tempfile.gettempdir(),
                                  "evolve-runner-users")
            try:
                os.mkdir(folder, 0o700)
            except FileExistsError:
                pass
            info = os.lstat(folder)
            if not stat.S_ISDIR(info.st_mode) or info.st_uid != 0 or info.st_mode & 0o077:
                raise RuntimeError(f"{folder} is not a folder only root may enter: remove it")
            self._folder = folder
        return self._folder


def _running_uids() -> set:
    """The users of the processes running now (a user still running something is not leased again)."""
    uids = set()
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                uids.add(os.stat(f"/proc/{name}").st_uid)
            except OSError:
                continue
    return uids


def runner_users() -> RunnerUsers:
    """Whom this process's runners run as, decided once by the probe."""
    if not _DECIDED:
        if not hasattr(os, "geteuid") or os.geteuid() != 0:
            _DECIDED.append(RunnerUsers(False, False, None))
        else:
            why = probe(UID_FIRST)
            if why is None:
                _DECIDED.append(RunnerUsers(True, False, None))
            elif probe(UID_FIRST, read_any=True) is None:
                _DECIDED.append(RunnerUsers(True, True, why.split(" ", 2)[-1]))
            else:
                _DECIDED.append(RunnerUsers(False, False, why))
    return _DECIDED[0]
