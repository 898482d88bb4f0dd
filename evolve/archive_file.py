"""The archive's SQLite file: opening it (migrated as it opens, or read-only where this process may not write it),
the lock one `evolve run` holds on it, and its reads and write transactions. `Archive` (evolve/archive.py) is this file
with its runs and candidates; the stores of its side records (evolve/archive_records.py) read and write through it."""

from __future__ import annotations

import os
import sqlite3
import threading
import urllib.parse
from pathlib import Path

import sqlite_utils

from .archive_schema import MIGRATIONS, ArchiveError, migrate


def _writable(path: Path) -> bool:
    """Whether this process may write the file and its folder (where SQLite makes the -wal and -shm files)."""
    return os.access(path, os.W_OK) and os.access(path.resolve().parent, os.W_OK)


def _connect(target: str) -> sqlite3.Connection:
    """A read-only connection to a file: URI; its first read is made here, so a file that cannot be read fails now."""
    conn = sqlite3.connect(target, uri=True, timeout=5, isolation_level=None, check_same_thread=False)
    try:
        conn.execute("PRAGMA busy_timeout = 5000")
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except BaseException:
        conn.close()
        raise
    return conn


def _open_error(path: Path, error: sqlite3.OperationalError) -> str:
    """What to do about an archive SQLite would not open, from why."""
    text = str(error)
    if "locked" in text or "busy" in text:
        return (f"cannot open {path} ({text}): another process is writing to it; wait for it to finish (an "
                f"`evolve run` on it says so in `evolve status`), or pass --db PATH")
    if path.exists() and not os.access(path, os.R_OK):
        return (f"cannot read {path} ({text}): this process may not read the file; check its permissions, or pass "
                "--db PATH")
    if path.exists() and not _writable(path):
        folder = path.resolve().parent
        which = "the file" if not os.access(path, os.W_OK) else f"its folder {folder}"
        return (f"cannot write {path} ({text}): this process may not write {which}, and this command writes to the "
                f"archive (status, show, best and leaderboard only read one); pass --db PATH to a file in a folder "
                f"you may write")
    return f"cannot open {path} ({text}): check the path and its permissions, or pass --db PATH"


class ArchiveFile:
    """One SQLite file, opened; every write commits before the method returns."""

    def __init__(self, path, read_only: bool = False):
        """`read_only`: the caller only reads (status, show, leaderboard, best). A file this process may write (and
        whose folder it may write, where SQLite keeps the WAL's -shm and -wal files) opens as usual; any other is
        opened read-only, and then every write raises ArchiveError."""
        self.path = Path(path)
        self._lock = threading.RLock()
        self.read_only = False
        if read_only and str(path) != ":memory:" and self.path.is_file() and not _writable(self.path):
            self._open_read_only()
            return
        if str(path) != ":memory:":
            folder = self.path.parent
            if not folder.is_dir():
                if not folder.parent.is_dir():  # one missing folder (the default runs/) is made; a mistyped path is not
                    raise ArchiveError(f"{folder} does not exist: create it, or pass --db PATH inside a folder that "
                                       f"exists")
                folder.mkdir()
            if self.path.is_dir():
                raise ArchiveError(f"{path} is a folder, not a SQLite database: pass --db PATH to a file")
        conn = None
        try:
            conn = sqlite3.connect(str(path), timeout=5, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA busy_timeout = 5000")
            conn.execute("PRAGMA journal_mode = WAL").fetchone()
            conn.execute("PRAGMA foreign_keys = ON")
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
            self._conn = conn
            migrate(sqlite_utils.Database(conn), name=str(path))
        except sqlite3.OperationalError as e:  # locked, unreadable, no permission: the file may be fine
            if conn is not None:
                conn.close()
            raise ArchiveError(_open_error(self.path, e)) from e
        except sqlite3.DatabaseError as e:
            if conn is not None:
                conn.close()
            raise ArchiveError(f"{path} is not a SQLite database (or is corrupt: {e}): move it aside or pass "
                               "--db PATH") from e
        except BaseException:
            if conn is not None:
                conn.close()
            raise

    def _open_read_only(self) -> None:
        """Open a file this process may not write: `mode=ro`, which reads a live WAL through its -shm file; where
        there is no -shm to read and none can be made (the folder is not writable), `immutable=1`, which reads the
        file alone: right only while its -wal holds nothing, which is checked first."""
        uri = "file:" + urllib.parse.quote(str(self.path.resolve()))
        conn = None
        try:
            try:
                conn = _connect(uri + "?mode=ro")
            except sqlite3.OperationalError as first:
                wal = self.path.with_name(self.path.name + "-wal")
                if os.access(self.path, os.R_OK) and wal.exists() and wal.stat().st_size > 0:
                    raise ArchiveError(
                        f"cannot read {self.path} ({first}): it is not writable here and its write-ahead log "
                        f"{wal.name} holds changes that only a process that may write {self.path.parent} can read; "
                        f"have its owner checkpoint it (sqlite3 {self.path} 'PRAGMA wal_checkpoint(TRUNCATE)'), or "
                        f"copy {self.path.name} and {wal.name} into a folder you may write and pass --db COPY"
                    ) from first
                conn = _connect(uri + "?mode=ro&immutable=1")
            applied = {row[0] for row in conn.execute("SELECT name FROM _evolve_migrations")} \
                if conn.execute("SELECT 1 FROM sqlite_master WHERE name = '_evolve_migrations'").fetchone() else set()
        except sqlite3.OperationalError as e:
            if conn is not None:
                conn.close()
            raise ArchiveError(_open_error(self.path, e)) from e
        except sqlite3.DatabaseError as e:
            if conn is not None:
                conn.close()
            raise ArchiveError(f"{self.path} is not a SQLite database (or is corrupt: {e}): pass --db PATH") from e
        except BaseException:
            if conn is not None:
                conn.close()
            raise
        known = [fn.__name__ for fn in MIGRATIONS]
        unknown, pending = sorted(applied - set(known)), [n for n in known if n not in applied]
        if unknown or pending:
            conn.close()
            if unknown:
                raise ArchiveError(f"{self.path} was written by a newer evolve (schema migration {unknown[-1]} is "
                                   "unknown to this one): upgrade evolve or pass --db PATH")
            raise ArchiveError(f"{self.path} was written by an older evolve and needs schema migration "
                               f"{pending[0]}{' and more' if len(pending) > 1 else ''}, which writes to it, and this "
                               f"process may not write it or its folder: copy it into a folder you may write and "
                               f"pass --db COPY (the copy is migrated as it opens)")
        self._conn, self.read_only = conn, True

    def _lock_path(self) -> Path:
        return self.path.with_name(self.path.name + ".lock")

    def running_pid(self) -> int | None:
        """The pid of the `evolve run` writing to this archive now, or None (the lock is free, or held by this
        process)."""
        import fcntl
        import os

        if str(self.path) == ":memory:" or getattr(self, "_claim", None) is not None:
            return None
        try:
            fd = os.open(self._lock_path(), os.O_RDONLY)
        except OSError:
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            text = os.pread(fd, 32, 0).decode(errors="replace").strip()
            return int(text) if text.isdigit() else -1
        finally:
            os.close(fd)  # closing drops a shared lock taken here
        return None

    def claim_for_run(self) -> None:
        """Only one `evolve run` writes to an archive at a time: an exclusive lock on `<db>.lock`, held until this
        process closes the archive or exits (the kernel drops it even on a crash)."""
        import fcntl

        if str(self.path) == ":memory:" or getattr(self, "_claim", None) is not None:
            return
        self.refuse_if_read_only()
        fd = os.open(self._lock_path(), os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "another process"
            os.close(fd)
            raise ArchiveError(f"{self.path} is in use by a running evolve (pid {holder}): wait for it to stop, or "
                               f"pass --db PATH for a new archive") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        self._claim = fd

    def close(self) -> None:
        with self._lock:
            self._conn.close()
        claim, self._claim = getattr(self, "_claim", None), None
        if claim is not None:
            import os

            os.close(claim)

    def query(self, sql: str, params=()) -> list[tuple]:
        with self._lock:
            return self._conn.execute(sql, params).fetchall()

    def dicts(self, sql: str, params=()) -> list[dict]:
        with self._lock:
            cur = self._conn.execute(sql, params)
            names = [d[0] for d in cur.description]
            return [dict(zip(names, row)) for row in cur.fetchall()]

    def refuse_if_read_only(self) -> None:
        if self.read_only:
            raise ArchiveError(f"{self.path} is open read-only (this process may not write it or its folder): "
                               "nothing can be stored in it; pass --db PATH to a file you may write")

    def write(self, fn):
        """Run fn(conn) in one IMMEDIATE transaction (the write lock taken up front), committed before returning."""
        self.refuse_if_read_only()
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                result = fn(self._conn)
                self._conn.execute("COMMIT")
                return result
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
