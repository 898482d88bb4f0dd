"""The archive: every run, candidate, LLM exchange and verdict of a search, in one SQLite file.

The file (``runs/evolve.db`` by default) is plain SQLite in WAL mode; open it with ``sqlite3``, sqlite-utils or
Datasette. Tables and columns:

``runs``: one row per ``evolve run``.
    id            integer primary key
    problem       problem name (``problem.toml`` ``name``); duplicate detection spans all runs of a problem
    problem_path  the problem folder as given
    options       JSON: the run's options, with every key naming a key, token or secret removed (recursively)
    device        device the verdicts were measured on (``"NVIDIA H200"``, ``"cpu"``)
    versions      JSON: versions of python, torch, triton, evolve, ...
    started       ISO time (UTC) the run began
    ended         ISO time (UTC) it finished; null while running or after a crash
    stop_reason   why it stopped (``"budget"``, ``"generations"``, ``"interrupted"``, ...); null while running
    paused        1 while ``evolve pause`` holds it (no new proposals; what is in flight finishes), else 0
    gaps          JSON list of [from, to] ISO times the run was not running: from its stop (or, after a crash, its
                  last stored candidate) to its resume; wall times on the leaderboard leave them out
    best_id       the candidate the run reported as its best when it last stopped (its summary's: the search's
                  held best where the highest score is within its noise, or one its re-timing put above it in every
                  round); null before then, or where it had none

``candidates``: one row per proposal, including failed ones: the log of every LLM exchange.
    id            integer primary key
    run_id        the run (references ``runs.id``)
    hash          sha256 of the normalised source (comments, docstrings and formatting removed); "" if no source;
                  a source already proposed for the problem on the same device is a duplicate and is not evaluated
                  (a model's duplicate is kept as an invalid row, error "a duplicate of #N", for its tokens and cost)
    source        the kernel file; null when the proposal produced none
    parent_ids    JSON list of candidate ids it was derived from (a composite: every kernel it draws from)
    island        island of the search population
    generation    generation number
    proposer      ``"llm"``, ``"seed"``, ``"solution"`` (the problem's solutions/correct), ``"tuner"`` or
                  ``"composer"`` (a shape-dispatch composite of the kernels in parent_ids)
    model         LLM that wrote it (null unless proposer is llm)
    template      prompt template name
    prompt        the full prompt sent
    reply         the full reply received
    tokens_in     prompt tokens (summed over the proposal's calls, tool rounds included: see ``tool_calls``)
    tokens_out    completion tokens (the same)
    cost          USD cost of the calls
    latency_s     seconds the proposal took
    knobs         JSON: tuned launch parameters, or null
    status        ``"pending"`` (stored, not yet evaluated), ``"evaluated"``, or ``"invalid"`` (no usable source)
    error         for invalid: why (garbage reply, diff did not apply, HTTP failure)
    ok            1 if the verdict passed every rung, 0 if not, null before evaluation
    fitness       roofline fitness (GPU only); null if incorrect or no GPU
    score         what the search ranks by: fitness on a GPU, a relative speed score on the CPU interpreter;
                  null if incorrect
    failed_rung   name of the first failed rung, if any
    reason        that rung's reason
    created       ISO time (UTC) the proposal was stored
    hint_ids      JSON list of the hints (``hints.id``) its prompt carried; null when none

``evaluations``: the latest verdict of each evaluated candidate (re-evaluating replaces it).
    candidate_id  primary key, references ``candidates.id`` (whose ok, fitness, score, failed_rung and reason
                  columns summarise this verdict)
    verdict_json  the harness's whole verdict (rungs with metrics, per-shape timings, device, secret, versions)
    seconds       wall time of the evaluation (sum of rung seconds)
    created       ISO time (UTC) it was recorded

``hints``: what a person told a run while it went on (``evolve hint``); the next prompts carry every hint of the run.
    id            integer primary key
    run_id        the run (references ``runs.id``)
    text          the hint as given
    created       ISO time (UTC) it was given

``artifacts``: the compiler's output for each evaluated candidate, per kernel specialization (``evolve show ID --asm
KIND``): ``NN_<kernel>.ttir``, ``.ttgir``, ``.llir``, ``.ptx``, ``.cubin``, ``.sass`` and ``index.txt`` (which
specialization each number is: architecture, warps, stages, argument types and constexprs).
    candidate_id  the candidate (references ``candidates.id``)
    name          the file's name
    size          its size in bytes, uncompressed
    data          its bytes, zlib-compressed

``tool_calls``: the context tools (``evolve/knowledge.py``) a model called while writing a proposal.
    candidate_id  the proposal (references ``candidates.id``; a model's duplicate is its invalid record row)
    round         1, 2, ...: the model call that asked for it
    name          ``search_context``, ``read_context`` or ``read_parent``
    arguments     the JSON arguments as the model wrote them (first 1000 characters)
    result        what the tool answered (first 4000 characters); result_chars its full length
    tokens_in, tokens_out, cost   of the model call that asked (on the round's first call; 0 on the others); the
                  candidate's own tokens and cost are the totals over every call

``retimes``: the top candidates of a run re-timed against each other, interleaved, at its end (``evolve/retime.py``,
``evolve retime``), and, as round 0, a best timed again beside a challenger during the run (fair promotion,
``search.py``); evidence for the reader, never a candidate's own verdict.
    run_id, candidate_id, round   which run, which candidate, which round (1, 2, ...; 0: in the run, beside a challenger)
    ok            1 if the ladder passed again
    figure        the re-measured fitness (GPU) or interpreter score (CPU); null when the ladder failed
    shapes        JSON: the per-case rows of that verdict
    device        where it ran
    created       ISO time (UTC)

``profiles``: Nsight Compute profiles of the best candidates on one benchmark case (``evolve/profiling.py``); advice
for prompts and ``evolve show``, never part of a verdict.
    id            integer primary key
    candidate_id  the candidate (references ``candidates.id``)
    device        the device it ran on
    case_label    the benchmark case profiled
    ok            1 if a summary was made, 0 if not (``message`` says why)
    seconds       wall seconds the profile took (ncu and the child's start-up included)
    message       why there is no summary
    summary       JSON: per kernel duration, DRAM and SM throughput, L2 hit rate, occupancy and its limiter,
                  registers, top stall reasons; a memory- or compute-bound verdict
    report        ncu's raw CSV page, zlib-compressed
    created       ISO time (UTC)

``traces``: time inside a kernel, per section a candidate marks (``evolve/tracing.py``), on one benchmark case;
advice for prompts and ``evolve show``, never part of a verdict.
    id            integer primary key
    candidate_id  the candidate (references ``candidates.id``)
    device        the device it ran on
    case_label    the benchmark case traced
    ok            1 if a summary was made, 0 if not (``message`` says why)
    seconds       wall seconds the trace took
    message       why there is no summary
    summary       JSON: per section the warps that recorded it, median and 10th-90th percentile cycles per warp,
                  median nanoseconds, share of the marked time; CTAs recorded, median CTA time, start spread
    created       ISO time (UTC)

``launch_audits``: what ran on the device while a candidate was called, seen by Nsight Compute from outside its
Python, against the kernels it may launch (``evolve/launch_audit.py``). A candidate with a failed audit is never the
best ``Archive.best`` reports (nor ``evolve best`` exports, nor a leaderboard ranks).
    id            integer primary key
    candidate_id  the candidate (references ``candidates.id``)
    device        the device it ran on
    status        ``"passed"``, ``"failed"`` or ``"not run"`` (``reason`` says why: no ncu, counters refused, ...)
    reason        one line: what ran, what should not have, or why there was no audit
    kernels       JSON list of [kernel name as ncu lists it, launches] seen during the calls
    allowed       JSON list of the names it may launch (its compile rung's kernels and its @triton.jit functions)
    seconds       wall seconds the audit took (ncu and the child's start-up included)
    report        ncu's CSV, zlib-compressed
    created       ISO time (UTC)

``_evolve_migrations``: schema migrations applied to this file.
    name          migration function name (``m001_initial``, ...)
    applied       ISO time (UTC) it was applied
"""

from __future__ import annotations

import ast
import datetime
import hashlib
import json
import os
import sqlite3
import threading
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, TypedDict

import sqlite_utils

from .harness.parent.verdict import Verdict
from .redact import strip_secret_keys


class ArchiveError(Exception):
    """An archive problem the user can act on; the message says what to do."""


class RunRow(TypedDict, total=False):
    """One run as the archive returns it (run, last_run, runs)."""
    id: int
    problem: str
    problem_path: str
    options: dict  # the run's options, secrets stripped
    device: str  # where it evaluated: the card's name, or the interpreter's
    versions: dict  # package -> version
    started: str
    ended: str | None  # None while it runs (or after a crash)
    stop_reason: str | None
    paused: int  # 1 while `evolve pause` holds it
    gaps: list  # [stopped, resumed] instants: time it was not running
    language: str  # the candidate language it asked for (evolve/lang)
    best_id: int | None  # the candidate it reported as its best when it last stopped
    candidates: int  # runs() only, from here on
    evaluated: int
    correct: int
    best_score: float | None
    best_fitness: float | None
    cost: float
    tokens: int
    pending: int


@dataclass(frozen=True)
class Candidate:
    id: int
    run_id: int
    hash: str
    source: str | None
    parent_ids: tuple[int, ...]
    island: int
    generation: int
    proposer: str
    model: str | None
    template: str | None
    prompt: str | None
    reply: str | None
    tokens_in: int
    tokens_out: int
    cost: float
    latency_s: float
    knobs: dict | None
    status: str
    error: str | None
    ok: bool | None
    fitness: float | None
    score: float | None
    failed_rung: str | None
    reason: str | None
    created: str
    hint_ids: tuple[int, ...] = ()  # the person's hints its prompt carried


# --- duplicate detection ----------------------------------------------------------------------------------------

def _strip_docstrings(tree: ast.AST) -> ast.AST:
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                node.body = body[1:] or ([] if isinstance(node, ast.Module) else [ast.Pass()])
    return tree


def normalize_source(source: str) -> str:
    """The source without comments, docstrings or formatting differences; unparseable source is only stripped."""
    try:
        return ast.unparse(_strip_docstrings(ast.parse(source)))
    except (SyntaxError, ValueError, RecursionError):
        return "\n".join(line.rstrip() for line in source.strip().splitlines())


def source_hash(source: str) -> str:
    return hashlib.sha256(normalize_source(source).encode()).hexdigest()


# --- migrations (named, ordered, each applied once; the pattern of simonw/llm migrations.py) ---------------------
# sqlite-utils itself has no migration runner (sqlite-migrate is a separate plugin that would add a dependency for
# these few lines); the tables are still created and altered through sqlite-utils' own calls.

MIGRATIONS: list[Callable[[sqlite_utils.Database], None]] = []
migration = MIGRATIONS.append


@migration
def m001_initial(db: sqlite_utils.Database) -> None:
    db.execute("""CREATE TABLE runs (
        id INTEGER PRIMARY KEY, problem TEXT NOT NULL, problem_path TEXT, options TEXT, device TEXT,
        versions TEXT, started TEXT NOT NULL, ended TEXT, stop_reason TEXT)""")
    db.execute("""CREATE TABLE candidates (
        id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL REFERENCES runs(id), hash TEXT NOT NULL, source TEXT,
        parent_ids TEXT NOT NULL DEFAULT '[]', island INTEGER NOT NULL DEFAULT 0,
        generation INTEGER NOT NULL DEFAULT 0, proposer TEXT NOT NULL, model TEXT, template TEXT, prompt TEXT,
        reply TEXT, tokens_in INTEGER NOT NULL DEFAULT 0, tokens_out INTEGER NOT NULL DEFAULT 0,
        cost REAL NOT NULL DEFAULT 0, latency_s REAL NOT NULL DEFAULT 0, knobs TEXT, status TEXT NOT NULL,
        error TEXT, ok INTEGER, fitness REAL, score REAL, failed_rung TEXT, reason TEXT, created TEXT NOT NULL)""")
    db.execute("CREATE INDEX idx_candidates_hash ON candidates (hash)")
    db.execute("CREATE INDEX idx_candidates_run_id ON candidates (run_id)")
    db.execute("CREATE INDEX idx_runs_problem ON runs (problem)")


@migration
def m002_evaluations(db: sqlite_utils.Database) -> None:
    db.execute("""CREATE TABLE evaluations (
        candidate_id INTEGER PRIMARY KEY REFERENCES candidates(id), ok INTEGER NOT NULL, fitness REAL,
        score REAL, failed_rung TEXT, reason TEXT, verdict_json TEXT NOT NULL, seconds REAL, created TEXT NOT NULL)""")
    db.execute("CREATE INDEX idx_candidates_run_status ON candidates (run_id, status)")


@migration
def m003_verdict_columns_once(db: sqlite_utils.Database) -> None:
    """ok, fitness, score, failed_rung and reason live in candidates only (evaluations held a second copy)."""
    db["evaluations"].transform(drop={"ok", "fitness", "score", "failed_rung", "reason"})


@migration
def m004_hints_and_pause(db: sqlite_utils.Database) -> None:
    """A person in the loop: hints given to a run while it goes on, which candidates' prompts carried them, and a
    run's pause switch."""
    db.execute("""CREATE TABLE hints (id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL REFERENCES runs(id),
        text TEXT NOT NULL, created TEXT NOT NULL)""")
    db.execute("CREATE INDEX idx_hints_run_id ON hints (run_id)")
    db["candidates"].add_column("hint_ids", str)
    db["runs"].add_column("paused", int, not_null_default=0)


@migration
def m005_artifacts(db: sqlite_utils.Database) -> None:
    """What the compiler produced for each evaluated candidate, compressed, inside the file (a copied archive keeps
    them)."""
    db.execute("""CREATE TABLE artifacts (candidate_id INTEGER NOT NULL REFERENCES candidates(id), name TEXT NOT NULL,
        size INTEGER NOT NULL, data BLOB NOT NULL, PRIMARY KEY (candidate_id, name))""")


@migration
def m006_run_gaps(db: sqlite_utils.Database) -> None:
    """When a run was stopped or had crashed before it was resumed, so its wall time counts only its working time."""
    db["runs"].add_column("gaps", str, not_null_default="[]")


@migration
def m007_profiles(db: sqlite_utils.Database) -> None:
    """Nsight Compute profiles of candidates (advice for prompts; never part of a verdict)."""
    db.execute("""CREATE TABLE profiles (id INTEGER PRIMARY KEY, candidate_id INTEGER NOT NULL REFERENCES candidates(id),
        device TEXT NOT NULL, case_label TEXT, ok INTEGER NOT NULL, seconds REAL NOT NULL, message TEXT, summary TEXT,
        report BLOB, created TEXT NOT NULL)""")
    db.execute("CREATE INDEX idx_profiles_candidate_id ON profiles (candidate_id)")


@migration
def m008_tool_calls(db: sqlite_utils.Database) -> None:
    """The context tools a model called while writing a proposal."""
    db.execute("""CREATE TABLE tool_calls (id INTEGER PRIMARY KEY, candidate_id INTEGER NOT NULL REFERENCES
        candidates(id), round INTEGER NOT NULL, name TEXT NOT NULL, arguments TEXT, result TEXT,
        result_chars INTEGER NOT NULL, tokens_in INTEGER NOT NULL, tokens_out INTEGER NOT NULL, cost REAL NOT NULL)""")
    db.execute("CREATE INDEX idx_tool_calls_candidate_id ON tool_calls (candidate_id)")


@migration
def m009_retimes(db: sqlite_utils.Database) -> None:
    """The top candidates of a run re-timed against each other at its end (evolve/retime.py)."""
    db.execute("""CREATE TABLE retimes (id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL REFERENCES runs(id),
        candidate_id INTEGER NOT NULL REFERENCES candidates(id), round INTEGER NOT NULL, ok INTEGER NOT NULL,
        figure REAL, shapes TEXT, device TEXT, created TEXT NOT NULL)""")
    db.execute("CREATE INDEX idx_retimes_run_id ON retimes (run_id)")


@migration
def m010_launch_audits(db: sqlite_utils.Database) -> None:
    """What ran on the device during a candidate's calls, seen from outside it (evolve/launch_audit.py)."""
    db.execute("""CREATE TABLE launch_audits (id INTEGER PRIMARY KEY, candidate_id INTEGER NOT NULL REFERENCES
        candidates(id), device TEXT NOT NULL, status TEXT NOT NULL, reason TEXT, kernels TEXT NOT NULL DEFAULT '[]',
        allowed TEXT NOT NULL DEFAULT '[]', seconds REAL NOT NULL DEFAULT 0, report BLOB, created TEXT NOT NULL)""")
    db.execute("CREATE INDEX idx_launch_audits_candidate_id ON launch_audits (candidate_id)")


@migration
def m011_run_language(db: sqlite_utils.Database) -> None:
    """The candidate language a run asked for (evolve/lang): its kernels are parents only to runs in the same one.
    Runs from before languages were Triton's."""
    db["runs"].add_column("language", str, not_null_default="triton")


@migration
def m012_traces(db: sqlite_utils.Database) -> None:
    """Per-section timing inside candidates' kernels (advice for prompts; never part of a verdict)."""
    db.execute("""CREATE TABLE traces (id INTEGER PRIMARY KEY, candidate_id INTEGER NOT NULL REFERENCES candidates(id),
        device TEXT NOT NULL, case_label TEXT, ok INTEGER NOT NULL, seconds REAL NOT NULL, message TEXT, summary TEXT,
        created TEXT NOT NULL)""")
    db.execute("CREATE INDEX idx_traces_candidate_id ON traces (candidate_id)")


@migration
def m013_run_best(db: sqlite_utils.Database) -> None:
    """The kernel a run reported as its best when it stopped, which `evolve best` names over a near tie; runs from
    before have none."""
    db["runs"].add_column("best_id", int)


def migrate(db: sqlite_utils.Database, migrations=None, name: str = "the archive") -> None:
    """Apply the pending migrations in order, all in one transaction; refuse a file from a newer evolve.

    A migration takes the sqlite-utils Database; it runs inside that transaction, so sqlite-utils calls in it
    (``transform``, ``create``) nest as savepoints and a failing migration leaves the file as it was."""
    migrations = MIGRATIONS if migrations is None else migrations
    known = {fn.__name__ for fn in MIGRATIONS}
    db.execute("BEGIN IMMEDIATE")
    try:
        db.execute("CREATE TABLE IF NOT EXISTS _evolve_migrations (name TEXT PRIMARY KEY, applied TEXT NOT NULL)")
        applied = {row[0] for row in db.execute("SELECT name FROM _evolve_migrations")}
        unknown = sorted(applied - known)
        if unknown:
            raise ArchiveError(f"{name} was written by a newer evolve (schema migration {unknown[-1]} is "
                               "unknown to this one): upgrade evolve or pass --db PATH")
        for fn in migrations:
            if fn.__name__ not in applied:
                fn(db)
                db.execute("INSERT INTO _evolve_migrations (name, applied) VALUES (?, ?)", [fn.__name__, _now()])
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise


# --- helpers ----------------------------------------------------------------------------------------------------

def _instant(text: str):
    import datetime

    return datetime.datetime.fromisoformat(text)


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds")


_COLUMNS = [f for f in Candidate.__dataclass_fields__]
_SELECT = "SELECT " + ", ".join(f"c.{c}" for c in _COLUMNS) + " FROM candidates c JOIN runs r ON r.id = c.run_id"
_NOT_FAILED = "c.id NOT IN (SELECT candidate_id FROM launch_audits WHERE status = 'failed')"


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
        return f"cannot read {path} ({text}): this process may not read the file; check its permissions, or pass --db PATH"
    if path.exists() and not _writable(path):
        folder = path.resolve().parent
        which = "the file" if not os.access(path, os.W_OK) else f"its folder {folder}"
        return (f"cannot write {path} ({text}): this process may not write {which}, and this command writes to the "
                f"archive (status, show, best and leaderboard only read one); pass --db PATH to a file in a folder "
                f"you may write")
    return f"cannot open {path} ({text}): check the path and its permissions, or pass --db PATH"


def _candidate(row: sqlite3.Row) -> Candidate:
    d = dict(zip(_COLUMNS, row))
    d["parent_ids"] = tuple(json.loads(d["parent_ids"] or "[]"))
    d["knobs"] = json.loads(d["knobs"]) if d["knobs"] is not None else None
    d["ok"] = None if d["ok"] is None else bool(d["ok"])
    d["hint_ids"] = tuple(json.loads(d["hint_ids"] or "[]"))
    return Candidate(**d)


# --- the archive ------------------------------------------------------------------------------------------------

class Archive:
    """One SQLite file. Hands out frozen Candidates; every write commits before the method returns."""

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
        self._refuse_if_read_only()
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

    def _query(self, sql: str, params=()) -> list[tuple]:
        with self._lock:
            return self._conn.execute(sql, params).fetchall()

    def _dicts(self, sql: str, params=()) -> list[dict]:
        with self._lock:
            cur = self._conn.execute(sql, params)
            names = [d[0] for d in cur.description]
            return [dict(zip(names, row)) for row in cur.fetchall()]

    def _refuse_if_read_only(self) -> None:
        if self.read_only:
            raise ArchiveError(f"{self.path} is open read-only (this process may not write it or its folder): "
                               "nothing can be stored in it; pass --db PATH to a file you may write")

    def _write(self, fn):
        """Run fn(conn) in one IMMEDIATE transaction (the write lock taken up front), committed before returning."""
        self._refuse_if_read_only()
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                result = fn(self._conn)
                self._conn.execute("COMMIT")
                return result
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise

    # runs --------------------------------------------------------------------------------------------------------

    def start_run(self, problem: str, problem_path: str, options: dict, device: str, versions: dict,
                  language: str = "triton") -> int:
        row = [problem, str(problem_path), json.dumps(strip_secret_keys(options or {}), default=str), device,
               json.dumps(versions or {}, default=str), _now(), language]
        return self._write(lambda c: c.execute(
            "INSERT INTO runs (problem, problem_path, options, device, versions, started, language) "
            "VALUES (?,?,?,?,?,?,?)", row).lastrowid)

    @staticmethod
    def _run_dict(row: dict) -> RunRow:
        for key in ("options", "versions"):
            row[key] = json.loads(row[key]) if row[key] else {}
        if "gaps" in row:
            row["gaps"] = json.loads(row["gaps"]) if row["gaps"] else []
        return row

    def run(self, run_id: int) -> RunRow:
        rows = self._dicts("SELECT * FROM runs WHERE id = ?", [run_id])
        if not rows:
            raise ArchiveError(f"no run {run_id} in {self.path}")
        return self._run_dict(rows[0])

    def last_run(self, problem: str) -> RunRow | None:
        rows = self._dicts("SELECT * FROM runs WHERE problem = ? ORDER BY id DESC LIMIT 1", [problem])
        return self._run_dict(rows[0]) if rows else None

    def reopen_run(self, run_id: int) -> None:
        """A resumed run is running again: no end time, no stop reason until it stops. The time since it stopped
        (after a crash: since its last stored candidate) is recorded as a gap."""
        def write(c):
            row = c.execute("SELECT started, ended, gaps FROM runs WHERE id = ?", [run_id]).fetchone()
            if row is None:
                return
            gaps = json.loads(row[2] or "[]")
            # the last sign of work: a stored candidate, a verdict, the previous resume (or the start)
            last = c.execute("SELECT max(created) FROM candidates WHERE run_id = ?", [run_id]).fetchone()[0]
            judged = c.execute("SELECT max(e.created) FROM evaluations e JOIN candidates c ON c.id = e.candidate_id "
                               "WHERE c.run_id = ?", [run_id]).fetchone()[0]
            since = row[1] or max(filter(None, [last, judged, row[0], gaps[-1][1] if gaps else None]),
                                  key=_instant)
            gaps.append([since, _now()])
            c.execute("UPDATE runs SET ended = NULL, stop_reason = NULL, paused = 0, gaps = ? WHERE id = ?",
                      [json.dumps(gaps), run_id])
        self._write(write)

    def finish_run(self, run_id: int, stop_reason: str, best_id: int | None = None) -> None:
        """The run stopped, and what it reported as its best (None: none, or a stop that chose none)."""
        self._write(lambda c: c.execute("UPDATE runs SET ended = ?, stop_reason = ?, paused = 0, best_id = ? "
                                        "WHERE id = ?", [_now(), stop_reason, best_id, run_id]))

    def runs(self) -> list[RunRow]:
        """Every run, with its candidates counted (the fields RunRow marks as runs() only)."""
        return [self._run_dict(r) for r in self._dicts(f"""
            SELECT r.*, count(c.id) AS candidates,
                   coalesce(sum(c.status = 'evaluated'), 0) AS evaluated, coalesce(sum(c.ok = 1), 0) AS correct,
                   max(CASE WHEN c.ok = 1 AND {_NOT_FAILED} THEN c.score END) AS best_score,
                   max(CASE WHEN c.ok = 1 AND {_NOT_FAILED} THEN c.fitness END) AS best_fitness,
                   coalesce(sum(c.cost), 0.0) AS cost, coalesce(sum(c.tokens_in + c.tokens_out), 0) AS tokens,
                   coalesce(sum(c.status = 'pending'), 0) AS pending
            FROM runs r LEFT JOIN candidates c ON c.run_id = r.id GROUP BY r.id ORDER BY r.id""")]

    # candidates --------------------------------------------------------------------------------------------------

    def add_candidate(self, run_id: int, *, source: str | None, parent_ids=(), island: int = 0,
                      generation: int = 0, proposer: str = "llm", model: str | None = None,
                      template: str | None = None, prompt: str | None = None, reply: str | None = None,
                      tokens_in: int = 0, tokens_out: int = 0, cost: float = 0.0, latency_s: float = 0.0,
                      knobs: dict | None = None, error: str | None = None,
                      within_run: bool = False, hint_ids=(), tool_log=()) -> Candidate | None:
        """Store a proposal. Invalid ones (no source, or an error) are always stored; a source whose hash is
        already in any run of the same problem on the same device (in this run only, with `within_run`) is a
        duplicate: None comes back, and it is stored only as the record of a paid call (an invalid row, "a
        duplicate of #N", with its tokens and cost, so spend sums stay whole) when it has tokens or cost. (A kernel measured on another device is not a duplicate:
        its figures say nothing about this one.)"""
        invalid = source is None or error is not None
        if source is None and error is None:
            error = "no source"
        digest = "" if source is None else source_hash(source)
        row = dict(run_id=run_id, hash=digest, source=source, parent_ids=json.dumps([int(p) for p in parent_ids]),
                   island=island, generation=generation, proposer=proposer, model=model, template=template,
                   prompt=prompt, reply=reply, tokens_in=int(tokens_in or 0), tokens_out=int(tokens_out or 0),
                   cost=float(cost or 0.0), latency_s=float(latency_s or 0.0),
                   knobs=None if knobs is None else json.dumps(knobs, default=str),
                   status="invalid" if invalid else "pending", error=error, created=_now(),
                   hint_ids=json.dumps([int(h) for h in hint_ids]) if hint_ids else None)

        def put(c: sqlite3.Connection, fields: dict) -> int:
            """The candidate row and its tool calls."""
            new = c.execute(f"INSERT INTO candidates ({', '.join(fields)}) VALUES ({', '.join('?' * len(fields))})",
                            list(fields.values())).lastrowid
            c.executemany("INSERT INTO tool_calls (candidate_id, round, name, arguments, result, result_chars, "
                          "tokens_in, tokens_out, cost) VALUES (?,?,?,?,?,?,?,?,?)",
                          [[new, int(t["round"]), str(t["name"])[:100], str(t["arguments"])[:1000],
                            str(t["result"])[:4000], int(t["result_chars"]), int(t["tokens_in"]),
                            int(t["tokens_out"]), float(t["cost"])] for t in tool_log])
            return new

        def insert(c: sqlite3.Connection) -> int | None:
            problem = c.execute("SELECT problem, device FROM runs WHERE id = ?", [run_id]).fetchone()
            if problem is None:
                raise ArchiveError(f"no run {run_id} in {self.path}")
            same = None
            if not invalid and within_run:
                same = c.execute("SELECT id FROM candidates WHERE hash = ? AND run_id = ? AND status != 'invalid' "
                                 "LIMIT 1", [digest, run_id]).fetchone()
            elif not invalid:
                same = c.execute(
                    "SELECT c.id FROM candidates c JOIN runs r ON r.id = c.run_id WHERE c.hash = ? AND r.problem = ? "
                    "AND r.device IS ? AND c.status != 'invalid' LIMIT 1", [digest, *problem]).fetchone()
            if same is not None:
                if row["cost"] or row["tokens_in"] or row["tokens_out"]:  # a model was paid for it: keep the record
                    put(c, {**row, "status": "invalid", "hash": "", "error": f"a duplicate of #{same[0]}"})
                return None
            return put(c, row)

        new_id = self._write(insert)
        return None if new_id is None else self.get(new_id)

    def record_verdict(self, candidate_id: int, verdict: Verdict, score: float | None = None) -> Candidate:
        """Store the harness verdict (replacing an earlier one) and update the candidate from it; `score` is what
        the search ranks by (kept only for a passing verdict)."""
        ok = verdict.ok
        fitness = verdict.fitness
        score = score if ok else None
        failure = verdict.failure
        failed_rung, reason = (failure.name, failure.reason) if failure else (None, None)
        seconds = sum(r.seconds for r in verdict.rungs)
        verdict_json = json.dumps(verdict.to_json(), default=str)

        def update(c: sqlite3.Connection) -> None:
            status = c.execute("SELECT status FROM candidates WHERE id = ?", [candidate_id]).fetchone()
            if status is None:
                raise ArchiveError(f"no candidate {candidate_id} in {self.path}")
            if status[0] == "invalid":
                raise ArchiveError(f"candidate {candidate_id} in {self.path} is invalid (no usable source); "
                                   "there is nothing to evaluate")
            c.execute("INSERT OR REPLACE INTO evaluations (candidate_id, verdict_json, seconds, created) "
                      "VALUES (?,?,?,?)", [candidate_id, verdict_json, seconds, _now()])
            c.execute("UPDATE candidates SET status = 'evaluated', ok = ?, fitness = ?, score = ?, failed_rung = ?, "
                      "reason = ? WHERE id = ?", [ok, fitness, score, failed_rung, reason, candidate_id])

        self._write(update)
        return self.get(candidate_id)

    def pending(self, run_id: int) -> list[Candidate]:
        """Candidates stored but never evaluated, oldest first: what a crash left in flight."""
        return [_candidate(r) for r in self._query(
            _SELECT + " WHERE c.run_id = ? AND c.status = 'pending' ORDER BY c.id", [run_id])]

    def get(self, candidate_id: int) -> Candidate:
        rows = self._query(_SELECT + " WHERE c.id = ?", [candidate_id])
        if not rows:
            raise ArchiveError(f"no candidate {candidate_id} in {self.path}")
        return _candidate(rows[0])

    def candidates(self, run_id: int | None = None, problem: str | None = None,
                   device: str | None = None, language: str | None = None) -> list[Candidate]:
        """Candidates oldest first, of one run, of one problem, of runs on one device and of runs in one language
        (each filter optional)."""
        where, params = [], []
        if language is not None:
            where.append("r.language = ?")
            params.append(language)
        if device is not None:
            where.append("r.device = ?")
            params.append(device)
        if run_id is not None:
            where.append("c.run_id = ?")
            params.append(run_id)
        if problem is not None:
            where.append("r.problem = ?")
            params.append(problem)
        sql = _SELECT + (" WHERE " + " AND ".join(where) if where else "") + " ORDER BY c.id"
        return [_candidate(r) for r in self._query(sql, params)]

    def best(self, problem: str, run_id: int | None = None, language: str | None = None) -> Candidate | None:
        """The ok candidate with the highest score (ties: the oldest), in one run or across the problem (in one
        language, if given); never one that failed a launch audit."""
        sql = _SELECT + " WHERE r.problem = ? AND c.ok = 1 AND " + _NOT_FAILED
        params: list = [problem]
        if language is not None:
            sql += " AND r.language = ?"
            params.append(language)
        if run_id is not None:
            sql += " AND c.run_id = ?"
            params.append(run_id)
        rows = self._query(sql + " ORDER BY c.score IS NULL, c.score DESC, c.id LIMIT 1", params)
        return _candidate(rows[0]) if rows else None

    def reported_best(self, problem: str) -> tuple[Candidate | None, Candidate | None]:
        """(the problem's best, the highest score where that is another): best(problem), unless the run of that
        kernel reported another as its best when it stopped (one measured within its noise, or re-timed above it in
        every round), correct and never failing a launch audit: then that one."""
        top = self.best(problem)
        if top is None:
            return None, None
        rows = self._query("SELECT best_id FROM runs WHERE id = ?", [top.run_id])
        chosen = rows[0][0] if rows else None
        if chosen is None or chosen == top.id or chosen in self.failed_audits():
            return top, None
        held = self.get(chosen)
        return (held, top) if held.ok else (top, None)

    def evaluation(self, candidate_id: int) -> dict | None:
        """The stored verdict as written (JSON), or None before evaluation."""
        rows = self._query("SELECT verdict_json FROM evaluations WHERE candidate_id = ?", [candidate_id])
        return json.loads(rows[0][0]) if rows else None

    def verdict(self, candidate_id: int) -> Verdict | None:
        """The stored verdict, typed (verdicts from earlier versions read with their gaps), or None."""
        stored = self.evaluation(candidate_id)
        return Verdict.from_json(stored) if stored else None

    def spend(self, run_id: int) -> dict:
        """LLM spend of a run: cost, tokens and the number of LLM calls (failed ones included)."""
        cost, tin, tout, calls = self._query(
            "SELECT coalesce(sum(cost), 0.0), coalesce(sum(tokens_in), 0), coalesce(sum(tokens_out), 0), "
            "coalesce(sum(proposer = 'llm'), 0) FROM candidates WHERE run_id = ?", [run_id])[0]
        return {"cost": float(cost), "tokens_in": int(tin), "tokens_out": int(tout), "calls": int(calls)}

    # compiler artifacts -------------------------------------------------------------------------------------------

    ARTIFACT_FILE_LIMIT = 16 << 20  # bytes: a bigger file is left out (and said so in index.txt's place)
    ARTIFACT_TOTAL_LIMIT = 64 << 20  # bytes per candidate, uncompressed

    def store_artifacts(self, candidate_id: int, folder: Path) -> int:
        """Keep the plain files of `folder` (a dump the harness wrote) for this candidate, compressed, within the
        limits; returns how many were kept. Replaces what was stored for it before."""
        plain = {path.name: path for path in (folder.iterdir() if folder.is_dir() else [])
                 if path.is_file() and not path.is_symlink()}
        names = self._within_limits({name: path.stat().st_size for name, path in plain.items()})
        return self.store_artifact_files(candidate_id, {name: plain[name].read_bytes() for name in names})

    def _within_limits(self, sizes: dict[str, int]) -> list[str]:
        """The names kept, by name: none over ARTIFACT_FILE_LIMIT, ARTIFACT_TOTAL_LIMIT in all."""
        kept, total = [], 0
        for name in sorted(sizes):
            if sizes[name] > self.ARTIFACT_FILE_LIMIT or total + sizes[name] > self.ARTIFACT_TOTAL_LIMIT:
                continue
            total += sizes[name]
            kept.append(name)
        return kept

    def store_artifact_files(self, candidate_id: int, files: dict[str, bytes]) -> int:
        """Keep {name: bytes} as this candidate's compiler output, compressed, within the limits (by name); returns
        how many were kept. Replaces what was stored for it before."""
        import zlib

        rows = [[candidate_id, name, len(files[name]), zlib.compress(files[name], 6)]
                for name in self._within_limits({name: len(data) for name, data in files.items()})]

        def write(c: sqlite3.Connection) -> None:
            c.execute("DELETE FROM artifacts WHERE candidate_id = ?", [candidate_id])
            c.executemany("INSERT INTO artifacts (candidate_id, name, size, data) VALUES (?,?,?,?)", rows)

        self._write(write)
        return len(rows)

    def store_profile(self, candidate_id: int, device: str, result, case_label: str = "") -> None:
        """Keep a profiling.Result."""
        import zlib

        row = [candidate_id, device, case_label, int(result.ok), float(result.seconds), result.message or None,
               json.dumps(result.summary) if result.ok else None,
               zlib.compress(result.report.encode(), 6) if result.report else None, _now()]
        self._write(lambda c: c.execute(
            "INSERT INTO profiles (candidate_id, device, case_label, ok, seconds, message, summary, report, created) "
            "VALUES (?,?,?,?,?,?,?,?,?)", row))

    def profile(self, candidate_id: int) -> dict | None:
        """The candidate's latest profile (summary decoded; the report left out), or None."""
        return self._latest_advice("profiles", candidate_id)

    def _latest_advice(self, table: str, candidate_id: int) -> dict | None:
        """The candidate's latest row of `profiles` or `traces` (summary decoded), or None."""
        rows = self._dicts("SELECT id, candidate_id, device, case_label, ok, seconds, message, summary, created "
                           f"FROM {table} WHERE candidate_id = ? ORDER BY id DESC LIMIT 1", [candidate_id])
        if not rows:
            return None
        row = rows[0]
        row["summary"] = json.loads(row["summary"]) if row["summary"] else None
        return row

    def store_trace(self, candidate_id: int, device: str, result, case_label: str = "") -> None:
        """Keep a tracing result (a profiling.Result whose summary is tracing.parse's)."""
        row = [candidate_id, device, case_label, int(result.ok), float(result.seconds), result.message or None,
               json.dumps(result.summary) if result.ok else None, _now()]
        self._write(lambda c: c.execute(
            "INSERT INTO traces (candidate_id, device, case_label, ok, seconds, message, summary, created) "
            "VALUES (?,?,?,?,?,?,?,?)", row))

    def trace(self, candidate_id: int) -> dict | None:
        """The candidate's latest trace (summary decoded), or None."""
        return self._latest_advice("traces", candidate_id)

    def traced(self, device: str) -> set[int]:
        """Candidates with a trace attempt on record on this device."""
        return {r[0] for r in self._query("SELECT DISTINCT candidate_id FROM traces WHERE device = ?", [device])}

    def profiled(self, device: str) -> set[int]:
        """Candidates with a profile attempt on record on this device."""
        return {r[0] for r in self._query("SELECT DISTINCT candidate_id FROM profiles WHERE device = ?", [device])}

    def store_audit(self, candidate_id: int, device: str, audit) -> None:
        """Keep a launch_audit.Audit."""
        import zlib

        row = [candidate_id, device, audit.status, audit.reason, json.dumps([list(k) for k in audit.kernels]),
               json.dumps(list(audit.allowed)), float(audit.seconds),
               zlib.compress(audit.report.encode(), 6) if audit.report else None, _now()]
        self._write(lambda c: c.execute(
            "INSERT INTO launch_audits (candidate_id, device, status, reason, kernels, allowed, seconds, report, "
            "created) VALUES (?,?,?,?,?,?,?,?,?)", row))

    def audit(self, candidate_id: int, device: str | None = None) -> dict | None:
        """The candidate's launch audit (on one device, if given): a failed one if there is any (a failure is for
        good), else the latest; kernels and allowed decoded, the report left out. None when it has none."""
        sql = ("SELECT id, candidate_id, device, status, reason, kernels, allowed, seconds, created FROM launch_audits "
               "WHERE candidate_id = ?" + (" AND device = ?" if device is not None else "")
               + " ORDER BY status = 'failed' DESC, id DESC LIMIT 1")
        rows = self._dicts(sql, [candidate_id] + ([device] if device is not None else []))
        if not rows:
            return None
        row = rows[0]
        row["kernels"], row["allowed"] = json.loads(row["kernels"] or "[]"), json.loads(row["allowed"] or "[]")
        return row

    def failed_audits(self) -> set[int]:
        """Candidates that failed a launch audit on any device."""
        return {r[0] for r in self._query("SELECT DISTINCT candidate_id FROM launch_audits WHERE status = 'failed'")}

    def store_retime(self, run_id: int, candidate_id: int, number: int, verdict: Verdict, figure) -> None:
        row = [run_id, candidate_id, int(number), int(bool(verdict.ok)), figure,
               json.dumps([dict(s) for s in verdict.shapes]), verdict.device, _now()]
        self._write(lambda c: c.execute("INSERT INTO retimes (run_id, candidate_id, round, ok, figure, shapes, device, "
                                        "created) VALUES (?,?,?,?,?,?,?,?)", row))

    def retimes(self, run_id: int) -> list[dict]:
        return self._dicts("SELECT * FROM retimes WHERE run_id = ? ORDER BY id", [run_id])

    def tool_calls(self, candidate_id: int) -> list[dict]:
        return self._dicts("SELECT * FROM tool_calls WHERE candidate_id = ? ORDER BY id", [candidate_id])

    def artifacts(self, candidate_id: int) -> list[dict]:
        """The stored files of a candidate: name and size (uncompressed), by name."""
        return self._dicts("SELECT name, size FROM artifacts WHERE candidate_id = ? ORDER BY name", [candidate_id])

    def artifact_files(self, candidate_id: int) -> dict[str, bytes]:
        """Every stored file of a candidate, {name: bytes}."""
        import zlib

        rows = self._query("SELECT name, data FROM artifacts WHERE candidate_id = ?", [candidate_id])
        return {name: zlib.decompress(data) for name, data in rows}

    def artifact(self, candidate_id: int, name: str) -> bytes | None:
        import zlib

        rows = self._query("SELECT data FROM artifacts WHERE candidate_id = ? AND name = ?", [candidate_id, name])
        return zlib.decompress(rows[0][0]) if rows else None

    # a person in the loop -----------------------------------------------------------------------------------------

    def add_hint(self, run_id: int, text: str) -> int:
        self.run(run_id)  # a clear error for a run that does not exist
        return self._write(lambda c: c.execute("INSERT INTO hints (run_id, text, created) VALUES (?, ?, ?)",
                                               [run_id, text, _now()]).lastrowid)

    def hints(self, run_id: int) -> list[dict]:
        """A run's hints, oldest first: id, text, created."""
        return self._dicts("SELECT id, text, created FROM hints WHERE run_id = ? ORDER BY id", [run_id])

    def hint(self, hint_id: int) -> dict | None:
        rows = self._dicts("SELECT * FROM hints WHERE id = ?", [hint_id])
        return rows[0] if rows else None

    def set_paused(self, run_id: int, paused: bool) -> None:
        self.run(run_id)
        self._write(lambda c: c.execute("UPDATE runs SET paused = ? WHERE id = ?", [int(paused), run_id]))

    def paused(self, run_id: int) -> bool:
        rows = self._query("SELECT paused FROM runs WHERE id = ?", [run_id])
        return bool(rows and rows[0][0])

    def timeline(self, run_id: int) -> list[dict]:
        """A run's candidates in the order they were proposed, without sources or prompts: what a leaderboard and its
        curves read (lineage, proposer, model, verdict summary, tokens, cost, when proposed, evaluation seconds, and
        its launch audit's status: "failed" if any failed, else the latest, None when there is none)."""
        rows = self._dicts(
            "SELECT c.id, c.parent_ids, c.island, c.generation, c.proposer, c.model, c.template, c.tokens_in, "
            "c.tokens_out, c.cost, c.latency_s, c.status, c.ok, c.fitness, c.score, c.failed_rung, c.reason, "
            "c.created, e.seconds AS eval_seconds, (SELECT a.status FROM launch_audits a WHERE a.candidate_id = c.id "
            "ORDER BY a.status = 'failed' DESC, a.id DESC LIMIT 1) AS audit "
            "FROM candidates c LEFT JOIN evaluations e ON e.candidate_id = c.id WHERE c.run_id = ? ORDER BY c.id",
            [run_id])
        for row in rows:
            row["parent_ids"] = json.loads(row["parent_ids"] or "[]")
            row["ok"] = None if row["ok"] is None else bool(row["ok"])
        return rows

    def known_hashes(self, problem: str, device: str | None = None) -> set[str]:
        """Hashes of every valid source already proposed for the problem, in any run (on one device, if given)."""
        return {r[0] for r in self._query(
            "SELECT DISTINCT c.hash FROM candidates c JOIN runs r ON r.id = c.run_id "
            "WHERE r.problem = ? AND c.status != 'invalid'" + (" AND r.device = ?" if device is not None else ""),
            [problem] + ([device] if device is not None else []))}
