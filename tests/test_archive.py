"""The archive on real SQLite files: migrations, duplicates, verdicts, crash recovery, bad files, secrets."""

import dataclasses
import os
import re
import shutil
import sqlite3
import subprocess
import threading

import pytest
import sqlite_utils

from evolve import archive_schema
from evolve.archive import Archive, ArchiveError, Candidate, normalize_source, source_hash
from evolve.harness import Verdict
from verdicts import ladder

SOURCE = '''"""A softmax kernel."""
import triton


@triton.jit
def softmax_kernel(x_ptr, BLOCK: tl.constexpr):
    """Row softmax."""
    return x_ptr + BLOCK  # the body
'''

REFORMATTED = '''import triton
# a comment that changes nothing
@triton.jit
def softmax_kernel(x_ptr,   BLOCK : tl.constexpr):
    return (x_ptr + BLOCK)
'''

OTHER = SOURCE.replace("x_ptr + BLOCK", "x_ptr * BLOCK")


def verdict(fitness=0.5, score=0.5, failed=None) -> tuple[Verdict, float | None]:
    """A verdict that fails at rung `failed` (or passes), and the score the search would record with it."""
    return ladder(failed=failed, fitness=fitness, mode="cpu"), score


@pytest.fixture
def db_path(tmp_path):
    return tmp_path / "runs" / "evolve.db"


@pytest.fixture
def arc(db_path):
    a = Archive(db_path)
    yield a
    a.close()


def new_run(arc, problem="softmax", **options):
    return arc.start_run(problem, f"problems/{problem}", options, "cpu", {"python": "3.11"})


def test_migrate_from_empty(db_path, arc):
    assert db_path.exists()
    db = sqlite_utils.Database(db_path)
    assert {"runs", "candidates", "evaluations", "_evolve_migrations"} <= set(db.table_names())
    names = [r["name"] for r in db["_evolve_migrations"].rows]
    assert names == [fn.__name__ for fn in archive_schema.MIGRATIONS]
    assert names[0] == "m001_initial"
    assert set(Candidate.__dataclass_fields__) == set(db["candidates"].columns_dict)
    db.close()
    arc.close()
    Archive(db_path).close()  # reopening applies nothing twice
    assert sqlite_utils.Database(db_path)["_evolve_migrations"].count == len(names)


def _older_archive(db_path, migrations: int, **candidate):
    """An archive as an older evolve left it: the first `migrations` applied, one run, candidate 7."""
    db_path.parent.mkdir()
    db = sqlite_utils.Database(db_path)
    archive_schema.migrate(db, archive_schema.MIGRATIONS[:migrations])
    db["runs"].insert({"id": 1, "problem": "softmax", "problem_path": "p", "options": "{}", "device": "cpu",
                       "versions": "{}", "started": "2026-01-01T00:00:00+00:00"})
    db["candidates"].insert({"id": 7, "run_id": 1, "hash": source_hash(SOURCE), "source": SOURCE, "proposer": "seed",
                             "created": "2026-01-01T00:00:00+00:00", **candidate})
    return db


def test_migrate_from_previous(db_path):
    db = _older_archive(db_path, 1, status="pending")
    assert "evaluations" not in db.table_names()
    db.close()

    arc = Archive(db_path)
    old = arc.get(7)
    assert old.source == SOURCE and old.parent_ids == () and old.status == "pending"
    assert [c.id for c in arc.pending(1)] == [7]
    arc.record_verdict(7, *verdict())  # the new table works on the old row
    assert arc.evaluation(7)["ok"] is True
    arc.close()
    db = sqlite_utils.Database(db_path)
    assert set(db["evaluations"].columns_dict) == {"candidate_id", "verdict_json", "seconds", "created"}
    assert "idx_candidates_run_status" in {i.name for i in db["candidates"].indexes}
    assert [r["name"] for r in db["_evolve_migrations"].rows] == [fn.__name__ for fn in archive_schema.MIGRATIONS]


def test_tool_calls_archived_before_their_seconds_were_recorded_read_zero(db_path):
    names = [fn.__name__ for fn in archive_schema.MIGRATIONS]
    db = _older_archive(db_path, names.index("m014_tool_call_seconds"), status="invalid")
    db["tool_calls"].insert({"candidate_id": 7, "round": 1, "name": "compile", "result_chars": 9, "tokens_in": 1,
                             "tokens_out": 1, "cost": 0.0})
    db.close()
    arc = Archive(db_path)
    try:
        assert arc.tool_calls(7)[0]["seconds"] == 0 and arc.timeline(1)[0]["tool_seconds"] == 0
        log = [{"round": 1, "name": "check", "arguments": "{}", "result": "runs", "result_chars": 4, "tokens_in": 0,
                "tokens_out": 0, "cost": 0.0, "seconds": 2.5}]
        made = arc.add_candidate(1, source=None, error="no submission", tool_log=log)
        assert arc.tool_calls(made.id)[0]["seconds"] == 2.5  # and stored where the proposer timed it
        assert arc.timeline(1)[-1]["tool_seconds"] == 2.5
    finally:
        arc.close()


def test_verdicts_recorded_before_the_columns_moved_survive(db_path):
    """An archive written when evaluations held its own copy of ok/fitness/score: its verdicts read back whole."""
    db = _older_archive(db_path, 2, status="evaluated", ok=1, fitness=0.7, score=0.7)
    db["evaluations"].insert({"candidate_id": 7, "ok": 1, "fitness": 0.7, "score": 0.7, "verdict_json": '{"ok": true}',
                              "seconds": 3.0, "created": "2026-01-01T00:00:00+00:00"})
    db.close()
    arc = Archive(db_path)
    assert arc.evaluation(7) == {"ok": True} and arc.get(7).fitness == 0.7
    arc.close()
    assert set(sqlite_utils.Database(db_path)["evaluations"].columns_dict) == {"candidate_id", "verdict_json",
                                                                               "seconds", "created"}


def test_wal_and_pragmas(db_path, arc):
    assert arc._conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert arc._conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert arc._conn.execute("PRAGMA busy_timeout").fetchone()[0] == 5000


def test_normalize_source():
    assert normalize_source(SOURCE) == normalize_source(REFORMATTED)
    assert source_hash(SOURCE) == source_hash(REFORMATTED) != source_hash(OTHER)
    assert "Row softmax" not in normalize_source(SOURCE)
    assert normalize_source("def f(:\n  broken   \n\n") == "def f(:\n  broken"
    assert normalize_source('def f():\n    "only a docstring"\n') == "def f():\n    pass"


def test_duplicates_across_runs_and_formatting_not_problems(arc):
    run1 = new_run(arc)
    first = arc.add_candidate(run1, source=SOURCE, model="m", prompt="p", reply="r")
    assert first is not None and first.status == "pending" and first.hash == source_hash(SOURCE)
    assert arc.add_candidate(run1, source=SOURCE) is None
    assert arc.add_candidate(run1, source=REFORMATTED) is None
    run2 = new_run(arc)
    assert arc.add_candidate(run2, source=REFORMATTED) is None  # another run of the same problem
    assert arc.add_candidate(run2, source=OTHER) is not None
    other_problem = new_run(arc, "layernorm")
    assert arc.add_candidate(other_problem, source=SOURCE) is not None
    assert len(arc.candidates(problem="softmax")) == 2
    assert len(arc.candidates()) == 3
    assert arc.known_hashes("softmax") == {source_hash(SOURCE), source_hash(OTHER)}
    assert arc.known_hashes("layernorm") == {source_hash(SOURCE)}


def test_invalid_proposals_are_stored(arc):
    run = new_run(arc)
    bad = arc.add_candidate(run, source=None, model="gpt", template="mutate", prompt="write a kernel",
                            reply="I cannot", tokens_in=100, tokens_out=5, cost=0.01, latency_s=1.5,
                            error="no code block in the reply")
    assert bad.status == "invalid" and bad.error == "no code block in the reply"
    assert (bad.prompt, bad.reply, bad.cost, bad.tokens_in, bad.hash) == ("write a kernel", "I cannot", 0.01, 100, "")
    again = arc.add_candidate(run, source=None, error="HTTP 500")
    assert again is not None and again.id != bad.id  # failures are never deduplicated away
    # a source that failed (diff did not apply) does not block the same source later
    assert arc.add_candidate(run, source=SOURCE, error="diff did not apply").status == "invalid"
    assert arc.add_candidate(run, source=SOURCE).status == "pending"
    assert arc.pending(run)[0].source == SOURCE
    with pytest.raises(ArchiveError, match="invalid"):
        arc.record_verdict(bad.id, *verdict())


def test_record_verdict_and_best(arc):
    run = new_run(arc)
    seed = arc.add_candidate(run, source=SOURCE, proposer="seed", knobs={"BLOCK": 128})
    child = arc.add_candidate(run, source=OTHER, parent_ids=[seed.id], island=1, generation=1)
    wrong = arc.add_candidate(run, source=SOURCE + "\nx = 1\n", parent_ids=[seed.id])
    assert arc.best("softmax") is None
    got = arc.record_verdict(seed.id, *verdict(fitness=0.4, score=0.4))
    assert (got.status, got.ok, got.fitness, got.score, got.knobs) == ("evaluated", True, 0.4, 0.4, {"BLOCK": 128})
    arc.record_verdict(child.id, *verdict(fitness=0.7, score=0.7))
    bad = arc.record_verdict(wrong.id, *verdict(fitness=None, score=9.0, failed="correctness"))
    assert (bad.ok, bad.score, bad.failed_rung, bad.reason) == (False, None, "correctness", "correctness broke")
    best = arc.best("softmax")
    assert best.id == child.id and best.parent_ids == (seed.id,) and best.island == 1
    assert arc.best("softmax", run_id=run).id == child.id
    assert arc.best("layernorm") is None
    assert arc.evaluation(wrong.id)["rungs"][3]["status"] == "failed"
    assert arc.evaluation(12345) is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        best.score = 2.0
    row = arc.runs()[0]
    assert (row["candidates"], row["evaluated"], row["correct"], row["pending"]) == (3, 3, 2, 0)
    assert row["best_score"] == 0.7 and row["best_fitness"] == 0.7 and row["options"] == {}


def test_rerecording_replaces(db_path, arc):
    run = new_run(arc)
    c = arc.add_candidate(run, source=SOURCE)
    arc.record_verdict(c.id, *verdict(fitness=None, score=None, failed="compile"))
    again = arc.record_verdict(c.id, *verdict(fitness=0.9, score=0.9))
    assert again.ok and again.failed_rung is None and again.score == 0.9
    assert arc.evaluation(c.id)["fitness"] == 0.9
    rows = arc._conn.execute("SELECT count(*), max(seconds) FROM evaluations").fetchone()
    assert rows == (1, 1.5)


def test_pending_after_crash(db_path):
    arc = Archive(db_path)
    run = new_run(arc)
    done = arc.add_candidate(run, source=SOURCE)
    arc.record_verdict(done.id, *verdict())
    in_flight = arc.add_candidate(run, source=OTHER, prompt="p")
    later = arc.add_candidate(run, source=SOURCE + "\ny = 2\n")
    # a crash: no close(), a second connection opens the file
    reopened = Archive(db_path)
    assert [c.id for c in reopened.pending(run)] == [in_flight.id, later.id]
    assert reopened.pending(run)[0].prompt == "p"
    assert reopened.last_run("softmax")["ended"] is None
    reopened.record_verdict(in_flight.id, *verdict())
    assert [c.id for c in arc.pending(run)] == [later.id]
    reopened.finish_run(run, "interrupted")
    assert arc.last_run("softmax")["stop_reason"] == "interrupted"
    reopened.close()
    arc.close()


def test_corrupt_file(db_path):
    db_path.parent.mkdir()
    db_path.write_bytes(os.urandom(8192))
    with pytest.raises(ArchiveError) as e:
        Archive(db_path)
    assert str(db_path) in str(e.value) and "not a SQLite database" in str(e.value)
    assert "move it aside or pass --db PATH" in str(e.value)


def test_newer_schema(db_path):
    Archive(db_path).close()
    db = sqlite_utils.Database(db_path)
    db["_evolve_migrations"].insert({"name": "m999_from_the_future", "applied": "2030-01-01"})
    db.close()
    with pytest.raises(ArchiveError, match="upgrade evolve") as e:
        Archive(db_path)
    assert str(db_path) in str(e.value) and "m999_from_the_future" in str(e.value)


def test_secrets_stripped_from_options(arc):
    options = {"model": "gpt", "api_key": "sk-1", "llm": {"OPENAI_API_KEY": "sk-2", "base_url": "http://x",
               "headers": [{"Authorization-Token": "t", "accept": "json"}], "client_secret": "s"},
               "max_tokens": 100, "budget": 5}
    run = arc.start_run("softmax", "problems/softmax", options, "cpu", {})
    stored = arc.last_run("softmax")["options"]
    assert stored == {"model": "gpt", "llm": {"base_url": "http://x", "headers": [{"accept": "json"}]},
                      "max_tokens": 100, "budget": 5}  # a count of tokens is a setting, not a secret
    assert options["api_key"] == "sk-1"  # the caller's dict is untouched
    raw = arc._conn.execute("SELECT options FROM runs WHERE id = ?", [run]).fetchone()[0]
    assert "sk-" not in raw


def test_readable_by_plain_sqlite(db_path, arc):
    run = new_run(arc)
    arc.add_candidate(run, source=SOURCE)
    arc.close()
    with sqlite3.connect(db_path) as conn:
        assert conn.execute("SELECT count(*) FROM candidates").fetchone()[0] == 1
    if shutil.which("sqlite3"):
        out = subprocess.run(["sqlite3", str(db_path), "SELECT problem, status FROM runs JOIN candidates "
                              "ON candidates.run_id = runs.id"], capture_output=True, text=True, check=True)
        assert out.stdout.strip() == "softmax|pending"


def test_spend_sums(arc):
    run = new_run(arc)
    arc.add_candidate(run, source=SOURCE, proposer="seed")
    arc.add_candidate(run, source=OTHER, tokens_in=100, tokens_out=20, cost=0.25)
    arc.add_candidate(run, source=None, error="HTTP 429", tokens_in=50, cost=0.5)
    # a model's duplicate is not evaluated, but the call was paid for: it stays as an invalid row with its spend
    assert arc.add_candidate(run, source=OTHER, tokens_in=7, cost=1.0) is None
    dup = [c for c in arc.candidates(run) if c.error and c.error.startswith("a duplicate of #")]
    assert len(dup) == 1 and dup[0].status == "invalid" and dup[0].hash == "" and dup[0].cost == 1.0
    assert arc.add_candidate(run, source=OTHER, proposer="tuner") is None  # nothing paid: nothing stored
    assert len(arc.candidates(run)) == 4
    assert arc.spend(run) == {"cost": 1.75, "tokens_in": 157, "tokens_out": 20, "calls": 3}
    assert arc.spend(new_run(arc)) == {"cost": 0.0, "tokens_in": 0, "tokens_out": 0, "calls": 0}
    assert arc.runs()[0]["tokens"] == 177 and arc.runs()[0]["cost"] == 1.75
    log = [{"round": 1, "name": "search_context", "arguments": "{}", "result": "r", "result_chars": 1,
            "tokens_in": 3, "tokens_out": 1, "cost": 0.5}]
    assert arc.add_candidate(run, source=OTHER, tokens_in=3, tokens_out=1, cost=0.5, tool_log=log) is None
    second = [c for c in arc.candidates(run) if c.error and c.error.startswith("a duplicate of #")][-1]
    assert [t["name"] for t in arc.tool_calls(second.id)] == ["search_context"]  # its tool calls stay with it
    assert arc.spend(run)["cost"] == 2.25


def test_concurrent_adds_store_one_of_each(arc):
    run = new_run(arc)
    results = []
    sources = [SOURCE + f"\nv = {i % 5}\n" for i in range(40)]
    threads = [threading.Thread(target=lambda s=s: results.append(arc.add_candidate(run, source=s)))
               for s in sources]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(r is not None for r in results) == 5
    assert len(arc.candidates(run)) == 5


def test_missing_candidate_and_run(db_path, arc):
    with pytest.raises(ArchiveError, match=re.escape(f"no candidate 42 in {db_path}")):
        arc.get(42)
    with pytest.raises(ArchiveError, match="no run 3"):
        arc.add_candidate(3, source=SOURCE)
    assert arc.last_run("softmax") is None and arc.runs() == []


def test_one_run_at_a_time_claims_an_archive(tmp_path):
    db = tmp_path / "a.db"
    first, second = Archive(db), Archive(db)
    first.claim_for_run()
    with pytest.raises(ArchiveError, match=r"in use by a running evolve \(pid \d+\)"):
        second.claim_for_run()
    assert second.running_pid() == os.getpid()  # what `evolve status` shows as "running (pid N)"
    first.close()
    assert second.running_pid() is None
    second.claim_for_run()  # released with the first
    second.close()
