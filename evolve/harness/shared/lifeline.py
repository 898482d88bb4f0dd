"""Children die with the parent, whatever kills it (Ctrl-C, SIGTERM, SIGKILL, a crash).

The parent holds the write end of a pipe for each evaluation and never writes to it; the measurer and the runners
hold the read end. When the parent is gone the kernel closes its end, the read returns end-of-file, and the child
kills its own process group. The measurer, which runs no candidate code, also kills the runners' groups and any
process that still carries the evaluation's token, so a runner whose own watcher was disabled by the candidate dies
too. (The kernel's parent-death signal is tied to the thread that started the child, and evaluations start their
processes from worker threads, so it would fire when such a thread ends.)
"""
from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

ENV = "EVOLVE_LIFELINE"  # the read end's descriptor number, in each child's environment


def kill_everything(pgids, token: str) -> None:
    """SIGKILL the groups, then any process whose environment still carries the evaluation's token."""
    for pgid in pgids:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    needle = f"EVOLVE_EVAL_TOKEN={token}".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if needle in (entry / "environ").read_bytes():
                os.kill(int(entry.name), signal.SIGKILL)
        except (OSError, ProcessLookupError):
            continue


def watch(pgids=()) -> None:
    """In a child: a daemon thread that waits for the parent's end to close, then kills `pgids` (and, where this
    process carries the evaluation's token, every process that does) and this process's own group."""
    fd = os.environ.get(ENV)
    if fd is None:
        return

    def wait():
        while True:
            try:
                if not os.read(int(fd), 1):
                    break
            except InterruptedError:
                continue
            except OSError:
                break
        token = os.environ.get("EVOLVE_EVAL_TOKEN")
        if token:
            kill_everything(pgids, token)
        os.killpg(os.getpgrp(), signal.SIGKILL)

    threading.Thread(target=wait, daemon=True, name="evolve-lifeline").start()
