"""What an evaluation's processes are and hold, read from /proc by a process that runs no candidate code.

An evaluation's runner starts under a keeper (harness/runner/keeper.py) that is the subreaper of everything beneath it:
a process that leaves its session and drops the evaluation's token is still the keeper's descendant, so the keeper's
tree is the evaluation, whatever its processes do. Its memory is their resident memory, the files they hold open
that have no name any more (unlinked, memfd) and the bytes in the folders they may write.
"""
from __future__ import annotations

import json
import os
import signal
import stat
import sys
import threading
import time

MAX_FOLDER_ENTRIES = 20000  # a runner's folders hold a Triton cache (hundreds of files): more is a candidate's doing


class Uninspectable(Exception):
    """An evaluation's process or folder could not be read; str() says which (the evaluation is stopped)."""


def parents() -> dict[int, int]:
    """pid -> parent pid of every process on the machine, in one pass over /proc."""
    found = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            fd = os.open(f"/proc/{name}/stat", os.O_RDONLY)
            try:
                text = os.read(fd, 4096)
            finally:
                os.close(fd)
            found[int(name)] = int(text[text.rindex(b")") + 2:].split()[1])  # past the command, which may hold spaces
        except (OSError, ValueError, IndexError):
            continue
    return found


_TABLE: dict = {"at": -1.0, "table": {}}
_TABLE_LOCK = threading.Lock()


def recent_parents(max_age_s: float) -> dict[int, int]:
    """parents(), read again only when the last read is older than max_age_s: the memory polls of evaluations side
    by side share one pass over /proc (a process younger than that may be missed by one poll, never by the next)."""
    with _TABLE_LOCK:
        if time.monotonic() - _TABLE["at"] > max_age_s:
            read_at = time.monotonic()  # its age counts from the pass's start: one started during it may be missing
            _TABLE["table"], _TABLE["at"] = parents(), read_at
        return _TABLE["table"]


def tree(roots, table: dict[int, int] | None = None) -> set[int]:
    """The roots that are alive and all their descendants."""
    table = parents() if table is None else table
    children: dict[int, list[int]] = {}
    for pid, ppid in table.items():
        children.setdefault(ppid, []).append(pid)
    members, todo = set(), [r for r in roots if r in table]
    while todo:
        pid = todo.pop()
        if pid not in members:
            members.add(pid)
            todo.extend(children.get(pid, ()))
    return members


def kill_tree(roots) -> None:
    """Stop every process of the trees until no new one appears (none can fork once stopped), then SIGKILL them all
    (the calling process spares itself)."""
    stopped: set[int] = {os.getpid()}
    for _ in range(100):
        fresh = tree(roots) - stopped
        if not fresh:
            break
        for pid in fresh:
            _signal(pid, signal.SIGSTOP)
        stopped |= fresh
    for pid in stopped - {os.getpid()}:
        _signal(pid, signal.SIGKILL)


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def resident_bytes(pids) -> int:
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/status", "rb") as f:
                for line in f:
                    if line.startswith(b"VmRSS:"):
                        total += int(line.split()[1]) * 1024
                        break
        except (OSError, ValueError, IndexError):
            continue
    return total


def nameless_file_bytes(pids, seen: set) -> int:
    """Bytes of the files the processes hold open that no folder shows (unlinked, memfd), each file once."""
    total = 0
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except FileNotFoundError:
            continue
        except PermissionError:
            raise Uninspectable(f"the open files of process {pid} could not be read") from None
        mapped = None  # a mapped file's resident pages are the process's resident memory already
        for fd in fds:
            path = f"/proc/{pid}/fd/{fd}"
            try:
                target = os.readlink(path)
                if not (target.endswith(" (deleted)") or target.startswith("/memfd:")):
                    continue
                info = os.stat(path)  # the file itself, never opened
            except OSError:
                continue
            if mapped is None:  # read once a nameless file is found (a CUDA process maps thousands of regions)
                mapped = _mapped_inodes(pid)
            if stat.S_ISREG(info.st_mode) and info.st_ino not in mapped and (info.st_dev, info.st_ino) not in seen:
                seen.add((info.st_dev, info.st_ino))
                total += info.st_blocks * 512
    return total


def _mapped_inodes(pid: int) -> set:
    try:
        with open(f"/proc/{pid}/maps", "rb") as f:
            return {int(line.split()[4]) for line in f if len(line.split()) > 5}
    except (OSError, ValueError, IndexError):
        return set()


def folder_bytes(folders, seen: set, limit: int = MAX_FOLDER_ENTRIES) -> int:
    """Bytes stored in the folders (each file once, no link followed); Uninspectable past `limit` entries."""
    total, entries, todo = 0, 0, list(folders)
    while todo:
        try:
            with os.scandir(todo.pop()) as listing:
                for entry in listing:
                    entries += 1
                    if entries > limit:
                        raise Uninspectable(f"more than {limit} files in the evaluation's folders")
                    info = entry.stat(follow_symlinks=False)
                    if stat.S_ISDIR(info.st_mode):
                        todo.append(entry.path)
                    elif (info.st_dev, info.st_ino) not in seen:
                        seen.add((info.st_dev, info.st_ino))
                        total += info.st_blocks * 512
        except (FileNotFoundError, NotADirectoryError):
            continue
        except PermissionError:
            raise Uninspectable("a folder of the evaluation could not be read") from None
    return total


def evaluation_bytes(roots, folders, table_age_s: float = 0.0) -> int:
    """The memory an evaluation holds: its processes' resident memory, their nameless open files and the bytes in the
    folders they may write (a file in a RAM-backed folder that a process also maps counts twice: never less); the
    process table read at most table_age_s ago."""
    seen: set = set()
    members = tree(roots, recent_parents(table_age_s))
    return resident_bytes(members) + nameless_file_bytes(members, seen) + folder_bytes(folders, seen)


def serve(requests=None, answers=None) -> None:
    """A reader process (harness/parent/memory_reader.py): one JSON request a line (roots, folders, the process table's
    age), one answer a line (the bytes and this process's CPU seconds for them, or why they could not be counted);
    until the parent closes the pipe."""
    requests, answers = requests or sys.stdin.buffer, answers or sys.stdout.buffer
    for line in requests:
        began, request = time.thread_time(), None
        try:
            request = json.loads(line)
            counted = evaluation_bytes(request["roots"], request["folders"], float(request["age"]))
            answer = {"bytes": counted, "cpu_s": time.thread_time() - began}
        except Uninspectable as exc:
            answer = {"uninspectable": str(exc)}
        except Exception as exc:  # noqa: BLE001 - said to the parent, which kills the evaluation
            answer = {"uninspectable": f"the memory read failed: {type(exc).__name__}: {exc}"[:300]}
        answer["nonce"] = request.get("nonce") if isinstance(request, dict) else None
        answers.write(json.dumps(answer).encode() + b"\n")
        answers.flush()


if __name__ == "__main__":  # python -S processes.py: a reader, with nothing but the standard library imported
    serve()
