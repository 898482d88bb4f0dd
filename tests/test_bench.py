"""`evolve bench` end to end: two models over the local scripted OpenAI-compatible server (real HTTP through
litellm, priced from litellm's bundled price map), two problems, real evaluations under the CPU interpreter, one
archive; cells isolated from each other; the same command again resumes and finds every cell done."""
import json
import sqlite3

import pytest

from llm_server import ScriptedLLM
from test_run import GOOD, MINI, ROOT, evolve, fenced, good

TWO = ROOT / "tests" / "data" / "two_regimes"
A, B = "openai/gpt-4o-mini", "openai/gpt-4o"  # names litellm has prices for; the scripted server answers both


def wrong(warps: int) -> str:  # runs, and is wrong: one added to every row's sum
    return good(warps).replace("e / tl.sum(e, axis=0)", "e / (tl.sum(e, axis=0) + 1.0)")


def rows(db, sql, *args):
    with sqlite3.connect(db) as conn:
        conn.row_factory = sqlite3.Row
        return [dict(r) for r in conn.execute(sql, args)]


@pytest.mark.slow
def test_bench_compares_two_models_on_two_problems(tmp_path):
    assert "e / tl.sum(e, axis=0)" in GOOD
    db = tmp_path / "bench.db"
    args = ["bench", "--model", A, "--model", B, "--problem", MINI, "--problem", TWO, "--budget-per-cell", "2",
            "--db", db, "--device", "cpu", "--tune-share", "0", "--compose-share", "0", "--concurrency", "1",
            "--llm-timeout", "20", "--seed", "3"]
    with ScriptedLLM() as llm:
        # cells run problem by problem, model by model: (mini, A) (mini, B) (two, A) (two, B); mini has a seed
        llm.enqueue(fenced(good(4)),                     # mini, A: the seed, then a correct kernel
                    fenced(wrong(4)),                    # mini, B: the seed, then a wrong one
                    fenced(good(4)), fenced(good(2)),    # two, A: the same source as on mini is no duplicate here
                    fenced(wrong(4)), fenced(wrong(2)))  # two, B: nothing correct
        first = evolve(*args, "--api-base", llm.url, OPENAI_API_KEY="sk-test")
        served = len(llm.requests)
        assert first.returncode == 0, first.stdout[-2000:] + first.stderr[-3000:]
        assert served == 6 and llm.remaining == 0
        assert {r["model"] for r in llm.requests} == {"gpt-4o-mini", "gpt-4o"}

        runs = rows(db, "SELECT * FROM runs ORDER BY id")
        assert len(runs) == 4
        tags = [json.loads(r["options"])["bench"] for r in runs]
        assert [(t["problem"], t["model"]) for t in tags] == [("mini_softmax", A), ("mini_softmax", B),
                                                             ("two_regimes", A), ("two_regimes", B)]
        assert all(t["name"] == "bench" and t["budget"] == "2" for t in tags)
        assert all(json.loads(r["options"])["isolated"] and json.loads(r["options"])["seed"] == 3 for r in runs)
        per_run = {r["id"]: rows(db, "SELECT * FROM candidates WHERE run_id = ? ORDER BY id", r["id"]) for r in runs}
        assert all(sum(c["status"] == "evaluated" for c in cs) == 2 for cs in per_run.values())
        assert [c["proposer"] for c in per_run[1]] == ["seed", "llm"] and per_run[1][1]["ok"] == 1
        assert per_run[2][1]["failed_rung"] == "correctness"
        assert per_run[3][0]["hash"] == per_run[1][1]["hash"]  # isolated: another cell's kernel is no duplicate
        assert not any(c["ok"] for c in per_run[4])

        # the leaderboard printed at the end, and its numbers against the archive's own sums
        assert "two_regimes" in first.stdout and "fast_p" in first.stdout
        board = evolve("leaderboard", "--db", db, "--json")
        assert board.returncode == 0, board.stderr
        data = json.loads(board.stdout)
        got = {(r["problem"], r["model"]): r for r in data["rows"]}
        assert len(got) == 4
        for run in runs:
            tag = json.loads(run["options"])["bench"]
            r = got[(tag["problem"], tag["model"])]
            cost = sum(c["cost"] for c in per_run[run["id"]])
            tokens = sum(c["tokens_in"] + c["tokens_out"] for c in per_run[run["id"]])
            assert cost > 0 and r["total"]["dollars"] == pytest.approx(cost) and r["total"]["tokens"] == tokens
            assert r["proposals"] == sum(c["proposer"] == "llm" for c in per_run[run["id"]])
        assert got[("two_regimes", B)]["best_candidate"] is None  # no correct kernel: the row stays
        assert got[("two_regimes", A)]["correct_rate"] == 1.0
        assert got[("two_regimes", A)]["dollars_per_correct"] == pytest.approx(
            sum(c["cost"] for c in per_run[3]) / 2)
        models = {m["model"]: m for m in data["models"]}
        assert models[A]["fast_eager"]["0"] == 1.0 and models[B]["fast_eager"]["0"] == 0.5
        assert models[A]["solved"] == 2 and models[B]["solved"] == 1

        again = evolve(*args, "--api-base", llm.url, OPENAI_API_KEY="sk-test")  # resumes: every cell is done
        assert again.returncode == 0, again.stderr[-2000:]
        assert again.stderr.count(": done (run ") == 4 and len(llm.requests) == served
        assert len(rows(db, "SELECT id FROM runs")) == 4


def test_bench_refuses_bad_arguments(tmp_path):
    out = evolve("bench", "--model", A, "--problem", MINI, "--budget-per-cell", "soon", "--db", tmp_path / "b.db")
    assert out.returncode == 2 and "cannot read budget 'soon'" in out.stderr
    twice = evolve("bench", "--model", A, "--model", A, "--problem", MINI, "--budget-per-cell", "2", "--db",
                   tmp_path / "b.db")
    assert twice.returncode == 2 and "named twice" in twice.stderr
    nokey = evolve("bench", "--model", "anthropic/claude-sonnet-4-5", "--problem", MINI, "--budget-per-cell", "$1",
                   "--db", tmp_path / "b.db")
    assert nokey.returncode == 2 and "ANTHROPIC_API_KEY" in nokey.stderr


def test_a_provider_that_gives_nothing_usable_stops_the_run(tmp_path):
    """Every limit but this one counts evaluated candidates: garbage replies (or a broken provider) must not be asked
    for forever."""
    db = tmp_path / "garbage.db"
    with ScriptedLLM() as llm:
        llm.enqueue(*["I cannot help with that."] * 25)
        out = evolve("run", MINI, "--db", db, "--model", "openai/scripted", "--api-base", llm.url, "--device", "cpu",
                     "--max-candidates", 5, "--tune-share", 0, "--compose-share", 0, "--concurrency", 1,
                     OPENAI_API_KEY="sk-test")
        asked = len(llm.requests)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "20 proposals in a row gave nothing to evaluate" in out.stdout and "--api-base" in out.stdout
    cands = rows(db, "SELECT proposer, status FROM candidates ORDER BY id")
    assert cands[0] == {"proposer": "seed", "status": "evaluated"}
    assert sum(c["status"] == "invalid" for c in cands) == 20 and asked == 20


def test_bench_cells_per_language_and_a_language_a_problem_refuses():
    """--language (repeatable) gives a model cells per language, tagged so that a resumed comparison finds each;
    without it a cell is the problem's first language, tagged as before languages existed."""
    from evolve.bench import Budget, cells, cell_config
    from evolve.config import RunConfig
    from evolve.proposer import ModelSpec

    model = ModelSpec(A)
    todo = cells([("p", "mini_softmax")], [model], ("triton", "cutedsl"))
    assert [c.language for c in todo] == ["triton", "cutedsl"]
    budget = Budget(text="2", candidates=2)
    assert todo[1].tag("bench", budget) == {"name": "bench", "problem": "mini_softmax", "model": A, "budget": "2",
                                            "language": "cutedsl"}
    assert "language" not in cells([("p", "mini_softmax")], [model])[0].tag("bench", budget)
    assert cell_config(RunConfig(problem_dir="p"), todo[1], {}, budget, None).eval.language == "cutedsl"
    refused = evolve("bench", "--model", A, "--problem", MINI, "--budget-per-cell", "2", "--language", "cutedsl",
                     "--db", "unused.db", OPENAI_API_KEY="sk-test")
    assert refused.returncode == 2 and "--language cutedsl: mini_softmax accepts candidates in triton" in refused.stderr
