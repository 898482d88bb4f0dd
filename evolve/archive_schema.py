"""The archive's schema: its tables, and the migrations that make them (``evolve/archive.py`` is the archive).

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

``tool_calls``: the tools a model called while writing a proposal: the context tools (``evolve/knowledge.py``), and
in an agent session its compile, check and submit (``evolve/agent_tools.py``).
    candidate_id  the proposal (references ``candidates.id``; a model's duplicate is its invalid record row)
    round         1, 2, ...: the model call that asked for it
    name          ``search_context``, ``read_context``, ``read_parent``; ``compile``, ``check``, ``submit``
    arguments     the JSON arguments as the model wrote them (first 1000 characters)
    result        what the tool answered (first 4000 characters); result_chars its full length
    tokens_in, tokens_out, cost   of the model call that asked (on the round's first call; 0 on the others); the
                  candidate's own tokens and cost are the totals over every call
    seconds       wall seconds the tool took to answer (a compile or check: its evaluation); 0 where not recorded

``retimes``: the top candidates of a run re-timed against each other, interleaved, at its end (``evolve/retime.py``,
``evolve retime``), and, as round 0, a best timed again beside a challenger during the run (fair promotion,
``search.py``); evidence for the reader, never a candidate's own verdict.
    run_id, candidate_id, round   which run, which candidate, which round (1, 2, ...; 0: in the run, beside a
                                  challenger)
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

``lessons``: what worked, kept across runs (``evolve/lessons.py``): a candidate that beat the scored candidate it was
made from by a margin, with what led to it; later runs of the problem, and of problems alike in kind, carry the best
few in their prompts (``prompts/_lessons.j2``); ``evolve lessons`` lists them and ``--clear`` removes them.
    id            integer primary key
    problem       the problem's name
    kind          what the problem is like: ``memory-bound`` or ``compute-bound`` (its benchmark's bytes against
                  its flops), and ``reduction`` or ``GEMM-like`` where its name or description says so; "" unknown
    language      the candidate language
    run_id        the run that made it (references ``runs.id``)
    candidate_id  the better candidate (references ``candidates.id``)
    parent_id     the scored candidate it was made from (its parent, or the parent's nearest scored ancestor)
    proposer      who made it (``llm``, ``tuner``)
    model         the model that wrote it, where one did
    measure       ``fitness`` (fraction of roofline) or ``score`` (the CPU interpreter's ranking)
    before        the parent's figure
    after         the candidate's figure
    diff          unified diff from the parent's source to the candidate's (bounded)
    knobs_before  JSON: the parent's knob settings, or null
    knobs_after   JSON: the candidate's, or null
    hints         JSON list of the texts of the person's hints its prompt carried
    profile       the parent's profile verdict line (Nsight Compute), where one was archived
    created       ISO time (UTC)

``_evolve_migrations``: schema migrations applied to this file.
    name          migration function name (``m001_initial``, ...)
    applied       ISO time (UTC) it was applied
"""

from __future__ import annotations

import datetime
from typing import Callable

import sqlite_utils


class ArchiveError(Exception):
    """An archive problem the user can act on; the message says what to do (raised by every archive module; import it
    from evolve.archive)."""


def now() -> str:
    """The time (UTC) as the archive stores it."""
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds")


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
    db.execute("""CREATE TABLE profiles (id INTEGER PRIMARY KEY, candidate_id INTEGER NOT NULL """  # one string
               """REFERENCES candidates(id),
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


@migration
def m014_tool_call_seconds(db: sqlite_utils.Database) -> None:
    """How long each tool call took (an agent's compile and check are evaluations); calls from before read 0."""
    db["tool_calls"].add_column("seconds", "REAL", not_null_default=0)


@migration
def m015_lessons(db: sqlite_utils.Database) -> None:
    """What worked, kept across runs and offered to later runs of the problem and of problems alike in kind."""
    db.execute("""CREATE TABLE lessons (id INTEGER PRIMARY KEY, problem TEXT NOT NULL, kind TEXT NOT NULL DEFAULT '',
        language TEXT NOT NULL, run_id INTEGER NOT NULL REFERENCES runs(id),
        candidate_id INTEGER NOT NULL REFERENCES candidates(id), parent_id INTEGER REFERENCES candidates(id),
        proposer TEXT NOT NULL, model TEXT, measure TEXT NOT NULL, before REAL NOT NULL, after REAL NOT NULL,
        diff TEXT NOT NULL, knobs_before TEXT, knobs_after TEXT, hints TEXT NOT NULL DEFAULT '[]', profile TEXT,
        created TEXT NOT NULL)""")
    db.execute("CREATE INDEX idx_lessons_problem ON lessons (problem)")
    db.execute("CREATE INDEX idx_lessons_kind ON lessons (kind)")


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
                db.execute("INSERT INTO _evolve_migrations (name, applied) VALUES (?, ?)", [fn.__name__, now()])
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
