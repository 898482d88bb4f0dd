"""The warden: kills the stopped evaluations of a parent that died. `python -m evolve.harness.parent.warden`.

An evaluation stopped for another's timing lease (harness/parent/lease.py) cannot act on its own lifeline while stopped,
so the parent tells this process, started in a session of its own, which process groups and evaluation tokens it has
stopped. When the parent is gone (its end of the pipe closes: whatever killed it), the warden kills all of them
(SIGKILL reaches a stopped process) and exits. It runs no candidate code and imports nothing but the standard library.
"""
from __future__ import annotations

import os
import subprocess
import sys
import threading

from ..shared.lifeline import kill_everything


def main() -> int:
    watched: dict[str, list[int]] = {}
    for line in sys.stdin:
        parts = line.split()
        if len(parts) >= 2 and parts[0] == "watch":
            watched[parts[1]] = [int(p) for p in parts[2:]]
        elif len(parts) == 2 and parts[0] == "forget":
            watched.pop(parts[1], None)
    for token, pgids in watched.items():
        kill_everything(pgids, token)
    return 0


class Warden:
    """The parent's side: one warden per process, started on first use."""

    def __init__(self):
        self._proc = None
        self._lock = threading.Lock()

    def _send(self, line: str) -> None:
        with self._lock:
            if self._proc is None or self._proc.poll() is not None:
                self._proc = subprocess.Popen([sys.executable, "-m", "evolve.harness.parent.warden"],
                                              stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                              stderr=subprocess.DEVNULL, start_new_session=True, text=True,
                                              env={**os.environ, "PYTHONPATH": _package_path()})
            try:
                self._proc.stdin.write(line + "\n")
                self._proc.stdin.flush()
            except OSError:
                self._proc = None

    def watch(self, token: str, pgids) -> None:
        self._send(" ".join(["watch", token, *(str(p) for p in pgids)]))

    def forget(self, token: str) -> None:
        self._send(f"forget {token}")


def _package_path() -> str:
    from pathlib import Path

    root = str(Path(__file__).resolve().parents[3])  # as sandbox.PACKAGE_ROOT (which imports this module's user)
    return os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))


WARDEN = Warden()


if __name__ == "__main__":
    sys.exit(main())
