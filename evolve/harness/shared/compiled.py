"""Compiled kernels handed from one cache to another within an evaluation (a language's own: Triton's, TileLang's).

A kernel cache is written by the process that runs the candidate, so what it holds is the candidate's: it may be
handed only to a process of the same evaluation, which runs the same candidate: the compile-only runner's cache goes to
the GPU runner (harness/measurer/ahead.py), and the Triton driver module a measurer built goes to every runner. No cache
outlives its evaluation: a file a runner wrote (through the language's own cache API or not) would tell a later
evaluation of the same source that it is one, and a kernel could then be honest in its first evaluation and its
audit and merge its calls only in the re-timings that decide the run's best.

Copies take plain files only (none through a link, none larger than FILE_BYTES, none the target has already, no
more than COPY_BYTES and COPY_FILES in all), as many folders deep as the language lays them out; a group file
(Triton's list of a kernel's files, by absolute path) is written anew pointing into the target, and only when every
file it lists is there.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import stat

SAFE_NAME = re.compile(r"^[\w.-]{1,200}$")
FILE_BYTES = 256 << 20  # a cache file larger than this is not handed over
GROUP_BYTES = 1 << 20
GROUP_PREFIX = "__grp__"
COPY_BYTES, COPY_FILES = 1 << 30, 20000  # at most this much of one cache is handed over (Triton's are megabytes)


def _open_plain(name: str, limit: int, dir_fd: int):
    """An open descriptor on a regular file of at most `limit` bytes, not reached through a link; None otherwise."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dir_fd)
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


def _open_folder(name: str, dir_fd: int | None = None, create: bool = False):
    """A descriptor on a folder that is not a link (created first where asked); None otherwise. Every step below a
    cache's root goes through descriptors like this one: a runner that can write in a cache (either side of a copy)
    can put a link anywhere in it, and no copy may read or write through one."""
    if create:
        try:
            os.mkdir(name, 0o755, dir_fd=dir_fd)
        except OSError:
            pass
    try:
        return os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=dir_fd)
    except OSError:
        return None


def _is_plain(name: str, dir_fd: int) -> bool:
    try:
        return stat.S_ISREG(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _group(fd: int, folder: str, folder_fd: int) -> str | None:
    """A group file's text rewritten to list its files inside `folder` (open as `folder_fd`), or None if it is not one
    or lists a file that is not there as a plain file."""
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
            if not _is_plain(base, folder_fd):
                return None
            moved[name] = os.path.join(folder, base)
        return json.dumps({"child_paths": moved})
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _write_new(name: str, dir_fd: int, write, owner: int | None = None) -> None:
    """Write a file under a temporary name and move it into place: a copy cut short (a full disk, Ctrl-C) leaves no
    truncated file under a name Triton would read."""
    temporary = f".partial-{os.getpid()}-{name}"[:200]
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644, dir_fd=dir_fd)
    try:
        if owner is not None:
            os.fchown(fd, owner, owner)
        with os.fdopen(fd, "wb") as out:
            write(out)
        os.rename(temporary, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)  # replaces a link there, never follows it
    except BaseException:
        try:
            os.unlink(temporary, dir_fd=dir_fd)
        except OSError:
            pass
        raise


def copy_cache(source: str, target: str, owner: int | None = None, levels: int = 1) -> int:
    """Copy a compiled-kernel cache's files into another cache, up to COPY_BYTES and COPY_FILES; returns how many were
    written. Neither root may be a link; below them, nothing is read or written through one (descriptors, O_NOFOLLOW).
    owner: the uid the target's folders and files are given (a runner's cache, where the runner gave up root).
    levels: how many folders deep below the root the language keeps files (Triton 1: key/file; TileLang 4:
    version/platform/kernels/key/file); the root's own files and dot-named entries are not copied."""
    source_fd = _open_folder(source)
    if source_fd is None:
        return 0
    os.makedirs(os.path.dirname(os.path.abspath(target)), exist_ok=True)
    target_fd = _open_folder(target, create=True)
    if target_fd is None:
        os.close(source_fd)
        return 0
    files = COPY_FILES
    budget = {"bytes": COPY_BYTES, "files": files}
    try:
        if owner is not None:
            os.fchown(target_fd, owner, owner)
        _copy_folders(source_fd, target_fd, target, levels, owner, budget)
    finally:
        os.close(source_fd)
        os.close(target_fd)
    return files - budget["files"]


def _copy_folders(source_fd: int, target_fd: int, target: str, levels: int, owner, budget: dict) -> None:
    """Each folder of source_fd into target_fd (made where missing): its files, then its own folders, down to
    `levels` folders deep."""
    for entry in sorted(os.listdir(source_fd)):
        if not SAFE_NAME.match(entry) or entry.startswith(".") or budget["files"] <= 0:
            continue
        folder_fd = _open_folder(entry, source_fd)
        if folder_fd is None:
            continue
        into_fd = None
        try:
            into_fd = _open_folder(entry, target_fd, create=True)
            if into_fd is None:
                continue
            if owner is not None:
                os.fchown(into_fd, owner, owner)
            _copy_files(folder_fd, into_fd, os.path.join(target, entry), owner, budget)
            if levels > 1:
                _copy_folders(folder_fd, into_fd, os.path.join(target, entry), levels - 1, owner, budget)
        except OSError:
            continue
        finally:
            os.close(folder_fd)
            if into_fd is not None:
                os.close(into_fd)


def _copy_files(folder_fd: int, into_fd: int, into: str, owner, budget: dict) -> None:
    """The plain files of one folder that the target lacks, a group file last (rewritten to point into `into`)."""
    names = sorted(os.listdir(folder_fd), key=lambda n: n.startswith(GROUP_PREFIX))  # groups last
    for name in names:
        if not SAFE_NAME.match(name) or name.startswith("."):
            continue
        if budget["files"] <= 0:
            return
        try:
            os.stat(name, dir_fd=into_fd, follow_symlinks=False)
            continue  # the target has it (or has something under its name)
        except FileNotFoundError:
            pass
        group = name.startswith(GROUP_PREFIX)
        fd = _open_plain(name, GROUP_BYTES if group else FILE_BYTES, folder_fd)
        if fd is None:
            continue
        try:
            size = os.fstat(fd).st_size
            if size > budget["bytes"]:
                continue
            budget["bytes"] -= size
            if group:
                text = _group(fd, into, into_fd)
                if text is None:
                    continue
                _write_new(name, into_fd, lambda out: out.write(text.encode()), owner)
            else:
                with os.fdopen(os.dup(fd), "rb") as src:
                    _write_new(name, into_fd, lambda out: shutil.copyfileobj(src, out), owner)
            budget["files"] -= 1
        except OSError:
            continue
        finally:
            os.close(fd)
