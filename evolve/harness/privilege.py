"""Giving up root. A runner started by root runs as an unprivileged user (nobody) from its first instruction: its
keeper drops the ids in the forked child, before the runner's interpreter starts, so neither evolve's runner modules
nor the candidate ever run as root (no card settings through the device files, no file of another user read or
written, no process of root's signalled).

Whether the drop can work is decided once per process, by a probe: a child gives up root and checks that it can
still run this interpreter and read torch, Triton and evolve. Where it cannot (an interpreter under a folder only
root may enter, such as /root), runners keep root and every verdict says so (`jail`) with the reason; nothing else
changes. This file imports nothing but the standard library: the keeper loads it by path.
"""
from __future__ import annotations

import os
import sys

UNPRIVILEGED = 65534  # nobody
UID_ENV = "EVOLVE_RUNNER_UID"  # set by the parent for the keeper: the user its runner runs as
_DECIDED: list = []  # (uid or None, what the verdict records), once per process


def drop(uid: int = UNPRIVILEGED) -> str | None:
    """As root: become uid for good (no groups; real, effective and saved ids). None, or why not."""
    try:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
    except (OSError, OverflowError, ValueError) as exc:  # not permitted, or no such id
        return f"root could not be given up ({exc})"
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


_CHECK = ("import os, sys\n"
          "for path in sys.argv[1:]:\n"
          "    if not os.access(path, os.R_OK | os.X_OK):\n"
          "        sys.exit(f'cannot read {path}')\n")


def probe(uid: int = UNPRIVILEGED, python: str = sys.executable) -> str | None:
    """As root: whether a process that gives up root can still start a runner with python. None, or why not."""
    import subprocess

    try:
        done = subprocess.run([python, "-S", "-c", _CHECK, *needed_paths()], user=uid, group=uid,
                              extra_groups=[], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"uid {uid} cannot run {os.path.realpath(python)} ({type(exc).__name__}: {exc})"
    if done.returncode != 0:
        said = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        return f"uid {uid} {said[:300]}"
    return None


def runner_user() -> tuple[int | None, str]:
    """(the uid runners run as, or None to leave them as this process is; how the verdict says it)."""
    if not _DECIDED:
        if not hasattr(os, "geteuid") or os.geteuid() != 0:
            _DECIDED.append((None, f"runs as uid {os.geteuid()}" if hasattr(os, "geteuid") else "runs as this user"))
        else:
            why = probe()
            _DECIDED.append((UNPRIVILEGED, f"runs as uid {UNPRIVILEGED}") if why is None
                            else (None, f"runs as root: {why}; run evolve from an interpreter and folders others "
                                        f"can read to have runners give up root"))
    return _DECIDED[0]
