"""An archive this process may not write (its file or its folder): the commands that only read it read it, and where
it cannot be read the error says why, never that another evolve is writing it."""
import json
import os
import shutil
import sqlite3
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from evolve.archive import Archive
from evolve.cli import cli
from verdicts import ladder

ROOT = Path(__file__).resolve().parents[1]
MINI = ROOT / "tests" / "data" / "mini_softmax"
SOURCE = "# expect: ok\n" + (MINI / "seeds" / "softmax_rows.py").read_text()
NOBODY = 65534


def as_reader(*args) -> dict:
    """`evolve ARGS` run by a process that may write none of the files it did not make (see in_child)."""
    def invoke():
        result = CliRunner().invoke(cli, [str(a) for a in args])
        return {"code": result.exit_code, "stdout": result.stdout, "stderr": result.stderr}
    return in_child(invoke)


def in_child(fn) -> dict:
    """fn()'s dict, from a forked child of this process that gives up root first where this is root (root may write
    any file, whatever its mode). Whatever fn imports must be imported here first: nobody may not read this
    interpreter's own files (the folder fixture runs the commands once on a writable copy for that)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report and leave, whatever happens
        try:
            os.close(read)
            if os.geteuid() == 0:
                os.setgroups([])
                os.setgid(NOBODY)
                os.setuid(NOBODY)
            try:
                out = fn()
            except Exception as exc:  # noqa: BLE001 - reported to the parent
                out = {"raised": type(exc).__name__, "message": str(exc)}
            os.write(write, json.dumps(out).encode())
        finally:
            os._exit(0)
    os.close(write)
    chunks = []
    while chunk := os.read(read, 1 << 16):
        chunks.append(chunk)
    os.close(read)
    os.waitpid(pid, 0)
    return json.loads(b"".join(chunks) or b'{"raised": "the child died"}')


def make_archive(path: Path) -> None:
    archive = Archive(path)
    try:
        run = archive.start_run("mini_softmax", str(MINI), {}, "cpu (Triton interpreter)", {})
        cand = archive.add_candidate(run, source=SOURCE, proposer="solution")
        archive.record_verdict(cand.id, ladder(mode="cpu", fitness=None, roofline="skipped",
                                               shapes=[{"case": "fp32 4x256", "ms": 60.0, "clock": "cpu-interpreter"}]),
                               1 / 60.0)
        archive.finish_run(run, "--max-candidates 1 evaluated")
    finally:
        archive.close()


READS = {
    "status": lambda db: ("status", "--db", db),
    "show": lambda db: ("show", 1, "--db", db),
    "leaderboard": lambda db: ("leaderboard", "--db", db),
    "best": lambda db: ("best", MINI, "--db", db, "--no-verify"),
}


@pytest.fixture
def folder():
    """A folder nobody may reach (under /tmp, not under pytest's 0700 one), removed after the test."""
    path = Path(tempfile.mkdtemp(prefix="evolve-ro-test-", dir="/tmp"))
    path.chmod(0o755)
    # the same commands on a writable copy, here: every module they import is loaded before a child gives up root
    warm = path / "warm"
    warm.mkdir()
    make_archive(warm / "w.db")
    for args in READS.values():
        result = CliRunner().invoke(cli, [str(a) for a in args(warm / "w.db")])
        assert result.exit_code == 0, result.output
    # and a usage error, whose formatting imports a module of click's that the commands above never need
    assert CliRunner().invoke(cli, ["status", "--no-such-option"]).exit_code == 2
    shutil.rmtree(warm)
    yield path
    for p in [path, *path.rglob("*")]:
        p.chmod(0o700 if p.is_dir() else 0o600)
    shutil.rmtree(path)


def check_reads(db: Path) -> None:
    seen = {}
    for name, args in READS.items():
        result = as_reader(*args(db))
        assert result["code"] == 0, (name, result)
        seen[name] = result["stdout"]
    assert "mini_softmax" in seen["status"] and "--max-candidates 1 evaluated" in seen["status"]
    assert seen["show"].startswith("candidate #1  run 1")
    assert "mini_softmax" in seen["leaderboard"]
    assert seen["best"] == SOURCE.split("\n", 1)[1]


@pytest.mark.parametrize("file_mode,folder_mode", [(0o444, 0o555), (0o444, 0o777), (0o666, 0o555)],
                         ids=["neither", "file-only", "folder-only"])
def test_read_only_commands_read_an_archive_they_may_not_write(folder, file_mode, folder_mode):
    sub = folder / "runs"
    sub.mkdir()
    db = sub / "evolve.db"
    make_archive(db)
    assert sorted(p.name for p in sub.iterdir()) == ["evolve.db"]  # WAL mode, closed cleanly: no -wal, no -shm
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    before = db.read_bytes()
    db.chmod(file_mode)
    sub.chmod(folder_mode)
    check_reads(db)
    assert db.read_bytes() == before


def test_a_writer_is_told_it_may_not_write(folder):
    db = folder / "evolve.db"
    make_archive(db)
    db.chmod(0o444)
    result = as_reader("hint", "try more warps", "--db", db)
    assert result["code"] == 2, result
    assert "may not write the file" in result["stderr"] and "evolve" in result["stderr"]
    assert "stop any other evolve" not in result["stderr"] and "Traceback" not in result["stderr"]


def test_an_archive_that_cannot_be_read_says_why(folder):
    unreadable = folder / "secret.db"
    make_archive(unreadable)
    unreadable.chmod(0o000)
    for read_only in (True, False):
        raised = in_child(lambda: Archive(unreadable, read_only=read_only) and {})
        assert raised.get("raised") == "ArchiveError", raised
        assert "may not read the file" in raised["message"], raised
        assert "stop any other evolve" not in raised["message"] and "writing" not in raised["message"]
    result = as_reader(*READS["status"](unreadable))  # click's --db says so before the archive is opened
    assert result["code"] == 2 and "is not readable" in result["stderr"], result


def test_a_crashed_writers_log_that_cannot_be_read_is_named(folder):
    """A writer killed mid-run leaves its -wal: without the folder's write access (for the -shm file) a reader cannot
    see those changes, so it says so instead of showing the file without them."""
    sub = folder / "runs"
    sub.mkdir()
    db = sub / "evolve.db"
    make_archive(db)
    pid = os.fork()
    if pid == 0:  # a writer that dies holding changes in the log
        try:
            conn = sqlite3.connect(db, isolation_level=None)
            conn.execute("PRAGMA wal_autocheckpoint = 0")
            conn.execute("UPDATE runs SET stop_reason = 'changed in the log'")
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    wal, shm = sub / "evolve.db-wal", sub / "evolve.db-shm"
    assert wal.stat().st_size > 0
    shm.unlink(missing_ok=True)
    for p in (db, wal):
        p.chmod(0o444)
    sub.chmod(0o555)
    result = as_reader(*READS["status"](db))
    assert result["code"] == 2, result
    assert "evolve.db-wal" in result["stderr"] and "checkpoint" in result["stderr"], result["stderr"]
    assert "stop any other evolve" not in result["stderr"]
