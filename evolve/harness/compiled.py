"""Compiled kernels handed from one Triton cache to another, and kept per candidate source across evaluations.

A Triton cache is written by the process that runs the candidate, so what it holds is the candidate's: it may be
handed only to processes that run the same candidate. Within an evaluation the compile-only runner's cache goes to the
GPU runner (harness/measurer.py). Across evaluations the parent keeps a runner's cache under a key made of the
candidate's exact bytes (and the files beside it), the evaluation mode and the torch and Triton versions, and hands it
to the runners of a later evaluation with the same key only: a resumed run, a re-timing or a re-verification of the
same source compiles nothing again, and no other candidate ever reads it. What such a file could do in that later
evaluation, the same source could do there itself at run time; every check still runs on whatever the runner calls.

Copies take plain files only (none through a link, none larger than FILE_BYTES, none the target has already, no
more than COPY_BYTES and COPY_FILES in all), two levels deep as Triton lays them out; a group file (Triton's list of a kernel's files, by absolute path) is written
anew pointing into the target, and only when every file it lists is there.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat
from pathlib import Path

SAFE_NAME = re.compile(r"^[\w.-]{1,200}$")
FILE_BYTES = 256 << 20  # a cache file larger than this is not handed over
GROUP_BYTES = 1 << 20
GROUP_PREFIX = "__grp__"
COPY_BYTES, COPY_FILES = 1 << 30, 20000  # at most this much of one cache is handed over (Triton's are megabytes)
KEPT_BYTES = 2 << 30  # the kept caches of all sources together; the least recently used go first
VERSION = "compiled v1"


def _open_plain(path: str, limit: int):
    """An open descriptor on a regular file of at most `limit` bytes, not reached through a link; None otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if stat.S_ISREG(info.st_mode) and info.st_size <= limit:
            return fd
    except OSError:
        pass
    os.close(fd)
    return None


def _group(fd: int, folder: str) -> str | None:
    """A group file's text rewritten to list its files inside `folder`, or None if it is not one or lists a file that
    is not there."""
    try:
        with os.fdopen(os.dup(fd), "rb") as f:
            data = json.loads(f.read())
        children = data["child_paths"]
        if not isinstance(children, dict):
            return None
        moved = {}
        for name, path in children.items():
            base = os.path.basename(path) if isinstance(path, str) else ""
            if not isinstance(name, str) or not SAFE_NAME.match(base) or base.startswith(GROUP_PREFIX):
                return None
            moved[name] = os.path.join(folder, base)
            if not os.path.isfile(moved[name]) or os.path.islink(moved[name]):
                return None
        return json.dumps({"child_paths": moved})
    except (OSError, ValueError, KeyError, TypeError):
        return None


def copy_cache(source: str, target: str) -> int:
    """Copy a Triton cache's files into another cache, up to COPY_BYTES and COPY_FILES; returns how many were
    written."""
    copied, budget = 0, COPY_BYTES
    try:
        entries = os.listdir(source)
    except OSError:
        return 0
    for entry in entries:
        folder = os.path.join(source, entry)
        try:
            if not SAFE_NAME.match(entry) or not stat.S_ISDIR(os.lstat(folder).st_mode):
                continue
            names = sorted(os.listdir(folder), key=lambda n: n.startswith(GROUP_PREFIX))  # groups last
        except OSError:
            continue
        into_folder = os.path.join(target, entry)
        for name in names:
            into = os.path.join(into_folder, name)
            if not SAFE_NAME.match(name) or os.path.lexists(into):
                continue
            group = name.startswith(GROUP_PREFIX)
            if copied >= COPY_FILES:
                return copied
            fd = _open_plain(os.path.join(folder, name), GROUP_BYTES if group else FILE_BYTES)
            if fd is None:
                continue
            try:
                size = os.fstat(fd).st_size
                if size > budget:
                    continue
                budget -= size
                if group:
                    text = _group(fd, into_folder)
                    if text is None:
                        continue
                    os.makedirs(into_folder, exist_ok=True)
                    with open(into, "x") as dst:
                        dst.write(text)
                else:
                    os.makedirs(into_folder, exist_ok=True)
                    with os.fdopen(os.dup(fd), "rb") as src, open(into, "xb") as dst:
                        shutil.copyfileobj(src, dst)
                copied += 1
            except OSError:
                continue
            finally:
                os.close(fd)
    return copied


def source_key(candidate: Path, beside: list, mode: str, versions: dict) -> str:
    """The key a source's kept cache goes by: its bytes, the files beside it, the mode, torch and Triton."""
    digest = hashlib.sha256()
    for part in (VERSION, mode, str(versions.get("torch")), str(versions.get("triton"))):
        digest.update(part.encode() + b"\0")
    for path in [candidate, *beside]:
        digest.update(Path(path).name.encode() + b"\0" + Path(path).read_bytes() + b"\0")
    return digest.hexdigest()[:32]


def kept_folder(cache_dir: Path, key: str) -> Path:
    return Path(cache_dir) / "compiled" / key


def restore(cache_dir: Path, key: str, targets: list) -> int:
    """Hand a source's kept cache to the runners' caches; marks it used (for pruning). Returns the files copied."""
    folder = kept_folder(cache_dir, key)
    if not folder.is_dir():
        return 0
    try:
        os.utime(folder)
    except OSError:
        pass
    return sum(copy_cache(str(folder), str(target)) for target in targets)


def keep(cache_dir: Path, key: str, runner_cache: Path) -> int:
    """Keep what a runner compiled for this source (added to what is kept already), then prune."""
    folder = kept_folder(cache_dir, key)
    folder.mkdir(parents=True, exist_ok=True)
    copied = copy_cache(str(runner_cache), str(folder))
    if copied:
        prune(Path(cache_dir) / "compiled", KEPT_BYTES)
    return copied


def prune(root: Path, limit: int) -> None:
    """Delete the least recently used sources' caches until the rest fit in `limit` bytes."""
    sizes = []
    for folder in root.iterdir() if root.is_dir() else []:
        try:
            total = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())
            sizes.append((folder.stat().st_mtime, total, folder))
        except OSError:
            continue
    used = sum(size for _, size, _ in sizes)
    for _, size, folder in sorted(sizes):
        if used <= limit:
            break
        shutil.rmtree(folder, ignore_errors=True)
        used -= size

