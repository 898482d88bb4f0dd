"""An evaluation's cgroup: the kernel's own count and limit of all that its runners' processes cause.

Every runner's keeper joins its evaluation's cgroup before it starts the runner, so the runner and everything it
starts, whatever session, environment or parent it takes, stay inside. The cgroup limits their memory (--max-memory:
resident memory, page cache and shared memory they touched, System V segments and memfds included, and under cgroup v2
socket buffers; no swap), their number of tasks (MAX_TASKS), and is killed whole at the end. cgroup v2 is used where
its memory and pids controllers can be enabled, else v1's memory and pids hierarchies; where neither can be written
(not root, nothing delegated), `Cgroups.missing` says so and what it leaves open. The measurer stays outside: its own
memory is not the candidate's.
"""
from __future__ import annotations

import os
import signal
import threading
import time
from itertools import count

MAX_TASKS = 4096  # processes and threads of one evaluation's runners (a fork bomb stops here)
FOLDER = "evolve-runners"  # under which each evaluation's cgroup is made
_NUMBERS = count(1)  # this process's evaluations, whichever Cgroups makes them


class Cgroups:
    """Where this process makes its evaluations' cgroups: one folder per hierarchy (v2: one; v1: memory and pids)."""

    def __init__(self, version: int, bases: dict[str, str], missing: str | None = None):
        self.version, self.bases, self.missing = version, bases, missing

    def describe(self) -> str:
        if self.missing:
            return f"no cgroup ({self.missing})"
        return f"cgroup v{self.version} (memory, pids)"

    def make(self) -> "EvaluationCgroup | None":
        if self.missing:
            return None
        for _ in range(1000):  # a name another Cgroups of this process (or a process of this pid before it) left
            name = f"{os.getpid()}-{next(_NUMBERS)}"
            folders = {}
            try:
                for controller, base in self.bases.items():
                    folder = os.path.join(base, name)
                    if folder not in folders.values():  # v2: one folder holds every controller
                        os.mkdir(folder, 0o755)
                    folders[controller] = folder
                group = EvaluationCgroup(self.version, folders)
                group.write("pids", "pids.max", str(MAX_TASKS))
                return group
            except OSError as exc:
                for folder in set(folders.values()):
                    _rmdir(folder)
                if not isinstance(exc, FileExistsError):
                    raise
        raise FileExistsError(f"no free cgroup name under {', '.join(self.bases.values())}")


class EvaluationCgroup:
    """One evaluation's cgroup (a folder per hierarchy)."""

    def __init__(self, version: int, folders: dict[str, str]):
        self.version, self.folders = version, folders

    def join_files(self) -> list[str]:
        """The files a process writes its pid to, to join (each hierarchy's cgroup.procs)."""
        return sorted({os.path.join(folder, "cgroup.procs") for folder in self.folders.values()})

    def write(self, controller: str, name: str, value: str) -> None:
        with open(os.path.join(self.folders[controller], name), "w") as f:
            f.write(value)

    def limit_memory(self, max_bytes: int) -> None:
        """Resident memory and swap together at most max_bytes (the kernel's OOM killer acts inside the group)."""
        if self.version == 2:
            self.write("memory", "memory.max", str(max_bytes))
            _optional(lambda: self.write("memory", "memory.swap.max", "0"))
            _optional(lambda: self.write("memory", "memory.oom.group", "1"))
        else:
            self.write("memory", "memory.limit_in_bytes", str(max_bytes))
            _optional(lambda: self.write("memory", "memory.memsw.limit_in_bytes", str(max_bytes)))

    def pids(self) -> list[int]:
        folder = self.folders.get("pids") or next(iter(self.folders.values()))
        try:
            with open(os.path.join(folder, "cgroup.procs")) as f:
                return [int(line) for line in f if line.strip()]
        except OSError:
            return []

    def oom_kills(self) -> int:
        """How many of its processes the kernel killed for the group's memory limit."""
        name = "memory.events" if self.version == 2 else "memory.oom_control"
        try:
            with open(os.path.join(self.folders["memory"], name)) as f:
                fields = dict(line.split() for line in f if len(line.split()) == 2)
        except OSError:
            return 0
        return int(fields.get("oom_kill", 0))

    def kill(self) -> None:
        """Every process in it: cgroup.kill on v2; on v1, each one read, until none is left (bounded by pids.max)."""
        if self.version == 2:
            try:
                self.write("pids", "cgroup.kill", "1")
                return
            except OSError:
                pass
        for _ in range(100):
            pids = self.pids()
            if not pids:
                return
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass

    def remove(self, wait_s: float = 10.0) -> None:
        """Its folders, once the killed processes are gone (a zombie still counts as a member until reaped)."""
        deadline = time.monotonic() + wait_s
        for folder in self.folders.values():
            while not _rmdir(folder) and time.monotonic() < deadline:
                self.kill()
                time.sleep(0.05)


def _rmdir(folder: str) -> bool:
    try:
        os.rmdir(folder)
        return True
    except FileNotFoundError:
        return True
    except OSError:
        return False


def _optional(write) -> None:
    """A setting the kernel may not have (swap accounting off, an older kernel)."""
    try:
        write()
    except OSError:
        pass


# -- where this machine keeps them ---------------------------------------------------------------------------------
_DETECTED: list = []
_LOCK = threading.Lock()


def cgroups() -> Cgroups:
    """This process's cgroups, found once."""
    with _LOCK:
        if not _DETECTED:
            _DETECTED.append(_detect())
        return _DETECTED[0]


def _mounts() -> list[tuple[str, str, set]]:
    """(filesystem type, mount point, options) of each cgroup mount."""
    found = []
    try:
        with open("/proc/self/mounts") as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 4 and parts[2] in ("cgroup", "cgroup2"):
                    found.append((parts[2], parts[1], set(parts[3].split(","))))
    except OSError:
        pass
    return found


def _own_paths() -> dict[str, str]:
    """This process's cgroup in each hierarchy: '' for v2, a controller's name for v1."""
    paths = {}
    try:
        with open("/proc/self/cgroup") as f:
            for line in f:
                _, controllers, path = line.rstrip("\n").split(":", 2)
                for name in (controllers.split(",") if controllers else [""]):
                    paths[name] = path
    except OSError:
        pass
    return paths


def _detect() -> Cgroups:
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return Cgroups(0, {}, "evolve does not run as root, and makes no cgroup")
    mounts, own = _mounts(), _own_paths()
    why_not = []
    for kind, point, _ in mounts:
        if kind == "cgroup2":
            base, why = _v2_base(point)
            if base:
                return _ready(Cgroups(2, {"memory": base, "pids": base}))
            why_not.append(f"v2 at {point}: {why}")
    v1 = {}
    for kind, point, options in mounts:
        for controller in ("memory", "pids"):
            if kind == "cgroup" and controller in options and controller not in v1:
                v1[controller] = os.path.join(point, own.get(controller, "/").lstrip("/"), FOLDER)
    if len(v1) == 2:
        try:
            for base in v1.values():
                os.makedirs(base, exist_ok=True)
            return _ready(Cgroups(1, v1))
        except OSError as exc:
            why_not.append(f"v1: {exc}")
    else:
        why_not.append("no v1 memory and pids hierarchies")
    return Cgroups(0, {}, "; ".join(why_not))


def _v2_base(point: str) -> tuple[str | None, str]:
    """The folder for evaluations' cgroups at the root of a v2 hierarchy, with memory and pids enabled for it."""
    try:
        with open(os.path.join(point, "cgroup.controllers")) as f:
            controllers = set(f.read().split())
        if not {"memory", "pids"} <= controllers:
            return None, f"its controllers are {' '.join(sorted(controllers)) or 'none'}"
        base = os.path.join(point, FOLDER)
        with open(os.path.join(point, "cgroup.subtree_control"), "w") as f:
            f.write("+memory +pids")
        os.makedirs(base, exist_ok=True)
        with open(os.path.join(base, "cgroup.subtree_control"), "w") as f:
            f.write("+memory +pids")
        return base, ""
    except OSError as exc:
        return None, str(exc)


def _ready(found: Cgroups) -> Cgroups:
    """Cgroups of evolve processes that are gone, removed (each folder is named by its process's pid first)."""
    for base in set(found.bases.values()):
        try:
            names = os.listdir(base)
        except OSError:
            continue
        for name in names:
            owner = name.split("-", 1)[0]
            if owner.isdigit() and not os.path.exists(f"/proc/{owner}"):
                _rmdir(os.path.join(base, name))
    return found
