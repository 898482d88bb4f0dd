"""An evaluation's memory read in processes of their own. Every evaluation's memory is read from /proc every
MEMORY_POLL_S (harness/shared/processes.py: its processes, their open files and maps, its folders); read in the parent,
those reads hold the interpreter lock that every lane's thread needs (2.7-3.4 s of CPU an evaluation on one H100
machine with six lanes: most of a core). A reader is a child of the parent that runs harness/shared/processes.py alone
(no candidate code, no torch); a lane's thread sends it the evaluation's roots and folders and waits for the count. A
reader that dies, stops or answers out of turn makes the evaluation uninspectable (it is killed), never uncounted;
where no reader can be started, the parent reads it itself."""
from __future__ import annotations

import json
import os
import secrets
import select
import subprocess
import sys
import threading
import time

from ..shared import processes

ANSWER_TIMEOUT_S = 10.0  # a read takes milliseconds; this long means the reader is stopped or the host is stuck


class Reader:
    """One reader process: a request per line on its stdin, an answer per line on its stdout."""

    def __init__(self):
        # -I: the script's folder (harness/, whose profile.py would shadow the standard library's) is not on its path
        # an empty environment: none of the parent's keys, nothing for the interpreter to read
        self.proc = subprocess.Popen([sys.executable, "-I", "-S", processes.__file__], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, close_fds=True, bufsize=0,
                                     env={})

    def read(self, roots, folders, table_age_s: float) -> tuple[int, float]:
        """(bytes, the reader's CPU seconds for it); Uninspectable where the reader could not count them."""
        nonce = secrets.token_hex(16)  # an answer names its request: a line another process slipped in names none
        request = {"roots": [int(r) for r in roots], "folders": [str(f) for f in folders], "age": table_age_s,
                   "nonce": nonce}
        try:
            self.proc.stdin.write(json.dumps(request).encode() + b"\n")
            answer = json.loads(self._line())
        except (OSError, ValueError):
            answer = None
        if not isinstance(answer, dict) or answer.get("nonce") != nonce:
            raise ReaderLost(f"the process reading the evaluation's memory stopped answering "
                             f"(exit status {self.proc.poll()})")
        if "uninspectable" in answer:
            raise processes.Uninspectable(str(answer["uninspectable"]))
        return int(answer["bytes"]), float(answer["cpu_s"])

    def _line(self) -> bytes:
        """The answer: one line within ANSWER_TIMEOUT_S, and nothing after it; b"" otherwise."""
        deadline, line = time.monotonic() + ANSWER_TIMEOUT_S, b""
        while not line.endswith(b"\n"):
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.proc.stdout], [], [], left)[0]:
                return b""
            chunk = os.read(self.proc.stdout.fileno(), 1 << 16)
            if not chunk or b"\n" in chunk[:-1]:  # closed, or more than the one line it was asked for
                return b""
            line += chunk
        return line

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()
        for pipe in (self.proc.stdin, self.proc.stdout):
            try:
                pipe.close()
            except OSError:
                pass


class ReaderLost(processes.Uninspectable):
    pass


class Readers:
    """Readers kept between reads: a lane's thread takes an idle one (or starts one) for each read and gives it back,
    so as many run at once as there are reads at once."""

    def __init__(self):
        self._idle: list[Reader] = []
        self._lock = threading.Lock()

    def read(self, roots, folders, table_age_s: float) -> tuple[int, float]:
        try:
            reader = self._take()
        except OSError:  # no process to be had (a host at its limit): the parent reads, as it always may
            return processes.evaluation_bytes(roots, folders, table_age_s), 0.0
        try:
            return reader.read(roots, folders, table_age_s)
        except ReaderLost:
            reader.close()
            reader = None
            raise
        finally:
            if reader is not None:  # it answered, a count or why there is none: it reads the next
                self._give(reader)

    def _take(self) -> Reader:
        with self._lock:
            if self._idle:
                return self._idle.pop()
        return Reader()

    def _give(self, reader: Reader) -> None:
        with self._lock:
            self._idle.append(reader)


READERS = Readers()


def evaluation_bytes(roots, folders, table_age_s: float) -> tuple[int, float]:
    """processes.evaluation_bytes, read by a reader process: (bytes, the reader's CPU seconds)."""
    return READERS.read(roots, folders, table_age_s)
