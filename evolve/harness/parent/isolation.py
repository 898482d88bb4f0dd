"""What keeps one evaluation's runners apart from everything else, as this machine allows, found once per process.

Four mechanisms, each in its own module: Landlock (jail.py: writes only in the runner's folder, no ptrace, no signal
or TCP connection out), a user of the evaluation's own (privilege.py), a cgroup (cgroup.py: memory, tasks, killed
whole) and IPC and PID namespaces (keeper.py). `note` is what every verdict's `jail` says of the runners; `gaps` is
what the start of every run and eval says is missing here, each with what it leaves open.
"""
from __future__ import annotations

import os
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

from ..runner import jail
from ..shared import privilege
from .cgroup import Cgroups, cgroups

KEEPER = str(Path(__file__).parents[1] / "runner" / "keeper.py")


@dataclass(frozen=True)
class Isolation:
    landlock: int  # Landlock's ABI version, 0 where there is none
    users: privilege.RunnerUsers
    cgroups: Cgroups
    namespaces: tuple[str, ...]  # what the keeper makes: ("ipc", "pid"), with "user" first where evolve is not root
    namespaces_missing: str | None = None

    def note(self, uid: int | None) -> str:
        spaces = f"IPC and PID namespaces of its own{' (in a user namespace)' if 'user' in self.namespaces else ''}" \
            if self.namespaces else f"no namespaces of its own ({self.namespaces_missing})"
        return f"{self.users.describe(uid)}; {self.cgroups.describe()}; {spaces}"

    def gaps(self) -> list[str]:
        """What is missing here, each with what it leaves open (empty where every mechanism is in place)."""
        found = []
        if not self.landlock:
            found.append("no Landlock jail: a runner may write any file its user may, evolve's caches and code "
                         "included; run untrusted models only where the verdict reports a Landlock jail")
        users = self.users
        if users.why and not users.drop_root:
            found.append(f"runners keep root ({users.why}): a runner may set limits and priorities of, and read, any "
                         f"process's files outside its jail; install evolve where uid {privilege.UID_FIRST} can "
                         "read it")
        elif users.read_any:
            found.append(f"runners read any file (CAP_DAC_READ_SEARCH), since their user alone {users.why}: other "
                         f"evaluations' folders and evolve's files are readable to them, not writable")
        elif not users.drop_root:
            found.append(f"every runner runs as uid {os.geteuid()}, evolve's own user (only root hands each "
                         f"evaluation a user of its own)")
        if self.cgroups.missing:
            found.append(f"no cgroup ({self.cgroups.missing}): memory is read from /proc every 0.25 s (System V "
                         f"segments and memory held only in sockets are not counted) and processes are not limited")
        if not self.namespaces:
            found.append(f"no IPC and PID namespaces ({self.namespaces_missing}): a runner can name other processes "
                         f"of its user, and its System V objects outlive the evaluation")
        return found


_FOUND: list = []
_LOCK = threading.Lock()


def here() -> Isolation:
    with _LOCK:
        if not _FOUND:
            namespaces, why = _namespaces()
            _FOUND.append(Isolation(jail.abi_version(), privilege.runner_users(), cgroups(), namespaces, why))
        return _FOUND[0]


def _namespaces() -> tuple[tuple[str, ...], str | None]:
    """The namespaces a keeper can make here, tried by starting one: its child must be the first of its PID
    namespace."""
    root = hasattr(os, "geteuid") and os.geteuid() == 0
    asked = ("ipc", "pid") if root else ("user", "ipc", "pid")
    env = {"PATH": os.environ.get("PATH", ""), "EVOLVE_RUNNER_NAMESPACES": ",".join(asked)}
    try:
        done = subprocess.run([sys.executable, "-S", KEEPER, sys.executable, "-S", "-c",
                               "import os; print(os.getpid())"], env=env, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as exc:
        return (), str(exc)
    if done.returncode == 0 and done.stdout.strip() == "1":
        return asked, None
    said = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
    return (), said.removeprefix("keeper: ")[:200]
