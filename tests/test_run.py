"""`evolve run` end to end: the embedded default, a scripted LLM over real HTTP, SIGKILL and --resume."""
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kernels import SOFTMAX_KERNEL
from llm_server import Hang, ScriptedLLM, Status

ROOT = Path(__file__).resolve().parents[1]
MINI = ROOT / "tests" / "data" / "mini_softmax"

GOOD = SOFTMAX_KERNEL + """

def custom_kernel(x):
    return launch(x.contiguous(), num_warps=WARPS)
"""


def good(warps: int) -> str:
    return GOOD.replace("WARPS", str(warps))


def fenced(code: str, prose: str = "Here is the kernel.") -> str:
    return f"{prose}\n\n```python\n{code}\n```\n\nIt subtracts the row max first."


def env(**extra):
    e = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    e.update(LITELLM_LOCAL_MODEL_COST_MAP="True", PYTHONUNBUFFERED="1", **extra)
    return e


def evolve(*args, timeout=900, **extra):
    return subprocess.run([sys.executable, "-m", "evolve.cli", *map(str, args)], capture_output=True, text=True,
                          cwd=ROOT, timeout=timeout, env=env(**extra))


def rows(db, sql):
    with sqlite3.connect(db) as conn:
        conn.row_factory = sqlite3.Row
        return [dict(r) for r in conn.execute(sql)]


@pytest.mark.slow
def test_embedded_default_without_key_or_gpu(tmp_path):
    db = tmp_path / "e.db"
    result = evolve("run", MINI, "--db", db, "--max-candidates", 3, "--device", "cpu")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "No model configured" in result.stderr and "--model" in result.stderr
    assert "stopped: --max-candidates 3 evaluated" in result.stdout
    cands = rows(db, "select * from candidates order by id")
    assert [c["proposer"] for c in cands] == ["seed", "tuner", "tuner"]
    assert all(c["status"] == "evaluated" for c in cands)
    assert cands[0]["ok"] and cands[0]["score"] > 0
    assert all(json.loads(c["knobs"]) for c in cands)
    assert len({c["hash"] for c in cands}) == 3
    assert all(c["model"] is None and c["prompt"] is None for c in cands)  # nothing pretends to be an LLM
    run = rows(db, "select * from runs")[0]
    assert run["stop_reason"] == "--max-candidates 3 evaluated" and run["ended"]
    status = evolve("status", "--db", db)
    assert status.returncode == 0 and "mini_softmax" in status.stdout and "--max-candidates 3" in status.stdout
    best_id = run["best_id"]  # the run's reported best: the highest score, or one within the run's noise of it
    top = max(c["score"] for c in cands if c["ok"])
    assert cands[best_id - 1]["ok"] and cands[best_id - 1]["score"] >= top * 0.9
    assert f"#{best_id}" in result.stdout  # the summary names the kernel evolve best exports
    exported = tmp_path / "best.py"
    best = evolve("best", MINI, "--db", db, "--export", exported, "--device", "cpu")
    assert best.returncode == 0, best.stderr[-2000:]
    assert best.stdout.startswith(f"#{best_id} ") and "[correctness] ok" in best.stdout  # re-verified
    assert exported.read_text() == cands[best_id - 1]["source"]
    show = evolve("show", best_id, "--db", db)
    assert show.returncode == 0 and "proposer" in show.stdout and "lineage: #" in show.stdout
    assert evolve("show", 999, "--db", db).returncode == 1


@pytest.mark.slow
def test_scripted_llm_run(tmp_path):
    db = tmp_path / "llm.db"
    bad_diff = "<<<<<<< SEARCH\nthis line is in no parent\n=======\nx = 1\n>>>>>>> REPLACE\n"
    with ScriptedLLM() as llm:
        llm.enqueue(
            Status(429), fenced(good(4)),                                        # retried, then a good kernel
            Status(500), fenced(good(2).replace("e / tl.sum(e, axis=0)", "e / (tl.sum(e, axis=0) + 1.0)"),
                                "I added one to the sum to avoid dividing by zero."),  # retried; a wrong kernel
            "def custom_kernel(x):\n    return (\n",                             # a syntax error ...
            fenced(good(8)),                                                     # ... and its repair
            bad_diff,                                                            # a diff that applies nowhere
            Hang(60), good(16),                                                  # no answer, then bare code
            fenced(good(1)), fenced(good(32)),
        )
        result = evolve("run", MINI, "--db", db, "--model", "openai/scripted", "--api-base", llm.url,
                        "--max-candidates", 6, "--device", "cpu", "--tune-share", 0, "--llm-timeout", 10,
                        "--concurrency", 1, "--seed", 1, OPENAI_API_KEY="sk-test-not-for-the-archive")
        served = len(llm.requests)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    assert "stopped: --max-candidates 6 evaluated" in result.stdout
    cands = rows(db, "select * from candidates order by id")
    evaluated = [c for c in cands if c["status"] == "evaluated"]
    assert len(evaluated) == 6
    llm_rows = [c for c in cands if c["proposer"] == "llm"]
    assert all(c["model"] == "openai/scripted" and c["prompt"] and "softmax" in c["prompt"] for c in llm_rows)
    assert all(c["tokens_in"] > 0 and c["tokens_out"] > 0 for c in llm_rows if c["reply"])
    wrong = [c for c in evaluated if c["failed_rung"] == "correctness"]
    assert wrong and "max_rel" in wrong[0]["reason"]
    assert "(out " in wrong[0]["reason"] and "(input 0 there: " in wrong[0]["reason"]  # the values at the worst element
    broken = [c for c in evaluated if c["failed_rung"] == "load"]
    assert broken and "SyntaxError" in broken[0]["reason"]
    repairs = [c for c in cands if c["template"] == "repair"]
    assert repairs and json.loads(repairs[0]["parent_ids"]) == [broken[0]["id"]] and repairs[0]["ok"]
    invalid = [c for c in cands if c["status"] == "invalid"]
    assert invalid and any("does not match" in (c["error"] or "") or "no code" in (c["error"] or "").lower()
                           for c in invalid)
    assert sum(bool(c["ok"]) for c in evaluated) >= 4  # seed, two good kernels, the repair
    assert served >= len(llm_rows) + 3  # 429, 500 and the hang were retried
    with open(db, "rb") as f:
        assert b"sk-test-not-for-the-archive" not in f.read()
    show = evolve("show", repairs[0]["id"], "--db", db)
    assert show.returncode == 0 and "template repair" in show.stdout and "--- reply ---" in show.stdout


@pytest.mark.slow
def test_sigkill_then_resume_loses_and_duplicates_nothing(tmp_path):
    db = tmp_path / "k.db"
    args = [sys.executable, "-m", "evolve.cli", "run", str(MINI), "--db", str(db), "--max-candidates", "5",
            "--device", "cpu"]
    proc = subprocess.Popen(args, cwd=ROOT, env=env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    deadline = time.monotonic() + 600
    killed_with = None
    while time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.2)
        if db.exists():
            try:
                done = rows(db, "select count(*) n from candidates where status = 'evaluated'")[0]["n"]
                pending = rows(db, "select id from candidates where status = 'pending'")
            except sqlite3.OperationalError:
                continue
            if done >= 2 and pending:
                killed_with = pending[0]["id"]
                os.killpg(proc.pid, signal.SIGKILL)
                break
    proc.wait(timeout=30)
    assert killed_with is not None, "the run finished before it could be killed mid-evaluation"
    before = rows(db, "select * from candidates order by id")
    assert rows(db, "select stop_reason from runs")[0]["stop_reason"] is None
    result = evolve("run", MINI, "--db", db, "--resume", "--max-candidates", 5, "--device", "cpu")
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"re-evaluating #{killed_with}" in result.stdout
    after = rows(db, "select * from candidates order by id")
    assert [c["id"] for c in after][: len(before)] == [c["id"] for c in before]  # nothing lost
    assert len({c["hash"] for c in after}) == len(after)  # nothing duplicated
    assert sum(c["status"] == "evaluated" for c in after) == 5
    assert not any(c["status"] == "pending" for c in after)
    evaluations = rows(db, "select candidate_id, count(*) n from evaluations group by candidate_id")
    assert all(e["n"] == 1 for e in evaluations) and len(evaluations) == 5
    runs = rows(db, "select * from runs")
    assert len(runs) == 1 and runs[0]["stop_reason"] == "--max-candidates 5 evaluated"


def test_missing_api_key_is_a_clear_error(tmp_path):
    result = evolve("run", MINI, "--db", tmp_path / "x.db", "--model", "anthropic/claude-sonnet-4-5")
    assert result.returncode == 2
    assert "ANTHROPIC_API_KEY" in result.stderr
    assert not (tmp_path / "x.db").exists()


def test_a_missing_key_is_said_before_anything_slow_is_imported(tmp_path):
    """The missing-key error took 15 s or more to appear: torch (loading the problem) and litellm (asking it about the
    key) were imported first. Now the key is looked up first, by run and by bench, and the message names the
    variable to set (and, where litellm takes another one too, that one)."""
    script = ("import sys\nfrom evolve.cli import cli\ntry:\n    cli(sys.argv[1:])\nexcept SystemExit as exc:\n"
              "    print('exit', exc.code, 'torch' in sys.modules, 'litellm' in sys.modules)\n")
    models = ("--model", "anthropic/claude-sonnet-4-5", "--model", "gemini/gemini-2.5-pro")
    for args in (("run", MINI, "--db", tmp_path / "x.db", *models),
                 ("bench", "--problem", MINI, "--budget-per-cell", "2", "--db", tmp_path / "b.db", *models)):
        result = subprocess.run([sys.executable, "-c", script, *map(str, args)], capture_output=True, text=True,
                                cwd=ROOT, timeout=300, env={k: v for k, v in env().items()
                                                            if k != "ANTHROPIC_AUTH_TOKEN"})
        assert result.stdout.split() == ["exit", "2", "False", "False"], (args, result.stdout, result.stderr)
        assert "anthropic/claude-sonnet-4-5: ANTHROPIC_API_KEY is not set" in result.stderr
        assert "gemini/gemini-2.5-pro: GEMINI_API_KEY is not set (nor GOOGLE_API_KEY" in result.stderr
        assert "export GEMINI_API_KEY=..." in result.stderr
    assert not (tmp_path / "x.db").exists() and not (tmp_path / "b.db").exists()


def test_resume_without_a_run_is_a_clear_error(tmp_path):
    result = evolve("run", MINI, "--db", tmp_path / "none.db", "--resume")
    assert result.returncode == 2 and "does not exist" in result.stderr


def test_corrupt_database_is_a_clear_error(tmp_path):
    db = tmp_path / "bad.db"
    db.write_bytes(b"this is not sqlite" * 100)
    result = evolve("status", "--db", db)
    assert result.returncode == 2 and "bad.db" in result.stderr
    assert db.read_bytes() == b"this is not sqlite" * 100  # left as it was
