"""Compiled kernels kept by candidate source, so an evaluation of a source compiled before (a resumed run, the end of
run's re-timing, `evolve retime`, a compile done ahead on the CPU) loads its kernels instead of compiling them.

An entry is the Triton cache a runner of that source filled, keyed by the source's bytes and the torch and Triton
versions; it is restored only into a runner of the same source. The files were written by a process running that
candidate, which could plant anything in them, but what it plants reaches only a process running the same candidate,
which could do the same itself: nothing crosses from one candidate to another. Triton's own cache keys (source,
target, options, versions) still decide which files a compile can use. The store lives in the trusted cache folder,
which no runner can write (the jail), so it exists only where the jail does.

Copying out of a runner's folder reads plain files only (no links, FIFOs or devices), with names Triton writes, two
levels deep at most, each file and entry bounded; the store is trimmed to its size limit, least recently used first.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import stat
import threading
from pathlib import Path

MAX_FILE = 64 << 20
MAX_ENTRY = 512 << 20
MAX_TOTAL = 8 << 30
_NAME = re.compile(r"^[\w.+-]{1,200}$")
_LOCK = threading.Lock()  # lanes save from threads of one process


def key(source: bytes, versions: dict) -> str:
    text = f"torch {versions.get('torch')}|triton {versions.get('triton')}|".encode()
    return hashlib.sha256(text + source).hexdigest()[:40]


class Store:
    def __init__(self, cache_dir: Path, limit: int = MAX_TOTAL):
        self.root = Path(cache_dir) / "compiled"
        self.limit = limit

    def entry(self, name: str) -> Path:
        return self.root / name

    def restore(self, name: str, dest: Path) -> int:
        """Copy an entry into a runner's (empty or partial) Triton cache; the number of files copied."""
        entry = self.entry(name)
        if not entry.is_dir():
            return 0
        copied = 0
        for sub in entry.iterdir():
            if not sub.is_dir() or sub.is_symlink():
                continue
            (dest / sub.name).mkdir(parents=True, exist_ok=True)
            for f in sub.iterdir():
                if f.is_file() and not f.is_symlink():
                    shutil.copyfile(f, dest / sub.name / f.name)
                    copied += 1
        try:
            os.utime(entry)  # recently used
        except OSError:
            pass
        return copied

    def save(self, name: str, src: Path) -> int:
        """Add what a runner's Triton cache holds to the entry (files already there are kept); files added."""
        entry = self.entry(name)
        added, total = 0, _size(entry)
        with _LOCK:
            for sub_name, files in _plain_tree(src):
                for file_name, data in files:
                    target = entry / sub_name / file_name
                    if target.exists() or total + len(data) > MAX_ENTRY:
                        continue
                    target.parent.mkdir(parents=True, exist_ok=True)
                    tmp = target.with_name(f".{file_name}.{os.getpid()}.{threading.get_ident()}")
                    tmp.write_bytes(data)
                    os.replace(tmp, target)
                    added += 1
                    total += len(data)
            if added:
                os.utime(entry)
                self.trim()
        return added

    def trim(self) -> None:
        """Least recently used entries go until the store is under its limit."""
        try:
            entries = [(e.stat().st_mtime, _size(e), e) for e in self.root.iterdir() if e.is_dir()]
        except OSError:
            return
        total = sum(size for _, size, _ in entries)
        for _, size, path in sorted(entries):
            if total <= self.limit:
                break
            shutil.rmtree(path, ignore_errors=True)
            total -= size


def _size(folder: Path) -> int:
    total = 0
    try:
        for sub in folder.iterdir():
            for f in (sub.iterdir() if sub.is_dir() else ()):
                total += f.stat().st_size
    except OSError:
        pass
    return total


def read_plain(path, limit: int, whole: bool = True) -> bytes | None:
    """A regular file's bytes, opened without following a link and without waiting on a FIFO (nor reading a device);
    None for anything else or when it cannot be read. A file longer than limit gives None (whole) or its first limit
    bytes."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks, left = [], limit + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
        return data if len(data) <= limit else None if whole else data[:limit]
    except OSError:
        return None
    finally:
        os.close(fd)


def _plain_tree(src: Path):
    """(folder name, [(file name, bytes)]) for each folder directly under src: plain files with Triton's names."""
    try:
        subs = list(os.scandir(src))
    except OSError:
        return
    for sub in subs:
        if not _NAME.match(sub.name) or not sub.is_dir(follow_symlinks=False):
            continue
        files = []
        try:
            inner = list(os.scandir(sub.path))
        except OSError:
            continue
        for f in inner:
            if _NAME.match(f.name) and not f.name.startswith(".") and f.is_file(follow_symlinks=False):
                data = read_plain(f.path, MAX_FILE)
                if data is not None:
                    files.append((f.name, data))
        yield sub.name, files
