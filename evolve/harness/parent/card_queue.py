"""The order in which evolve processes waiting for one card take it: the one that has waited longest goes first."""
from __future__ import annotations

import fcntl
import os
import stat
import time
from pathlib import Path


class CardQueue:
    """Processes waiting for a card, oldest first. Each holds an exclusive flock on a ticket named after the moment it
    began waiting (CLOCK_MONOTONIC, one clock for every process of the machine) for as long as it waits, in a folder
    of the card lock's private folder. A ticket nobody holds a flock on was left by a process that died waiting; whoever
    finds it removes it. Tickets are write-only (0200), as the card's lock is."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.name: str | None = None
        self.fd: int | None = None

    def join(self) -> bool:
        """Take a ticket; False where the folder cannot be made or written (this process then waits out of order)."""
        try:
            self.folder.mkdir(mode=0o700, exist_ok=True)
            info = os.stat(self.folder, follow_symlinks=False)
            if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
                return False
            name = f"{time.monotonic_ns():020d}-{os.getpid()}"
            part = self.folder / f".{name}"  # flocked before it takes a name others read
            fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o200)
        except OSError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            os.rename(part, self.folder / name)
        except OSError:
            os.close(fd)
            part.unlink(missing_ok=True)
            return False
        self.name, self.fd = name, fd
        return True

    def leave(self) -> None:
        if self.fd is None:
            return
        try:
            os.unlink(self.folder / self.name)
        except OSError:
            pass
        os.close(self.fd)
        self.name = self.fd = None

    def first(self) -> bool:
        """Whether no live ticket is older than this process's (True without one)."""
        return self.name is None or not any(self._held(name) for name in self._names() if name < self.name)

    def anyone(self) -> bool:
        """Whether another process waits (a live ticket not this process's own)."""
        return any(self._held(name) for name in self._names() if name != self.name)

    def _names(self) -> list[str]:
        try:
            return sorted(n for n in os.listdir(self.folder) if not n.startswith("."))
        except OSError:
            return []

    def _held(self, name: str) -> bool:
        """Whether the ticket's process still waits (a dead process's ticket is removed on the way)."""
        try:  # never blocking: a FIFO put here would hold an open without O_NONBLOCK
            fd = os.open(self.folder / name, os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
        except OSError:
            return False  # its process left the queue, or no ticket
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return False
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        except OSError:
            return False
        else:
            try:
                os.unlink(self.folder / name)
            except OSError:
                pass
            return False
        finally:
            os.close(fd)
