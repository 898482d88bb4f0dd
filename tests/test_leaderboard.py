"""The leaderboard's numbers, checked against figures computed by hand from archives built here (real SQLite files):
two models, two problems, a model with no correct kernel, two archives merged, a second device kept apart."""
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from evolve.archive import Archive
from evolve.leaderboard import EMBEDDED, board, model_label, text_lines
from verdicts import ladder

ROOT = Path(__file__).resolve().parents[1]
H200, H100 = "NVIDIA H200", "NVIDIA H100"


def shapes(eager, compile_):
    return [{"case": f"bf16 {i}", "ms": 0.1, "speedup_vs_torch": e, "speedup_vs_compile": c, "roofline_fraction": 0.5}
            for i, (e, c) in enumerate(zip(eager, compile_))]


def add(archive, run, source, *, proposer="llm", model=None, cost=0.0, tokens=(0, 0), fitness=None, failed=None,
        invalid=False, eager=(1.0, 1.0), compile_=(1.0, 1.0), parents=()):
    """One candidate with its verdict (a GPU verdict: `fitness` when correct, else failing at rung `failed`)."""
    cand = archive.add_candidate(run, source=None if invalid else source, proposer=proposer, model=model, cost=cost,
                                 tokens_in=tokens[0], tokens_out=tokens[1], parent_ids=parents,
                                 error="garbage reply" if invalid else None)
    if invalid:
        return cand
    verdict = ladder(failed=failed, fitness=fitness, shapes=shapes(eager, compile_))
    return archive.record_verdict(cand.id, verdict, None if failed else fitness)


def run_of(archive, problem, model, device=H200):
    return archive.start_run(problem, f"problems/{problem}", {"models": [{"name": model, "weight": 1.0}]}, device,
                             {"torch": "2.11.0", "triton": "3.6.0", "evolve": "0.1.0"})


@pytest.fixture
def archives(tmp_path):
    """a.db: model alpha on softmax and rmsnorm (H200). b.db: model beta on softmax and rmsnorm (H200; on rmsnorm,
    which has no seed here, beta writes nothing correct) and on softmax on an H100."""
    a, b = Archive(tmp_path / "a.db"), Archive(tmp_path / "b.db")
    ids = {}
    r = run_of(a, "softmax", "m/alpha")
    ids["a_seed"] = add(a, r, "seed 1", proposer="seed", fitness=0.5, eager=(2.0, 2.0), compile_=(1.0, 1.0)).id
    ids["a_fail"] = add(a, r, "k 2", model="m/alpha", cost=0.10, tokens=(100, 50), failed="compile").id
    ids["a_best"] = add(a, r, "k 3", model="m/alpha", cost=0.20, tokens=(200, 80), fitness=0.8, eager=(3.0, 1.2),
                        compile_=(1.5, 1.0), parents=(ids["a_seed"],)).id
    add(a, r, None, model="m/alpha", cost=0.05, tokens=(90, 10), invalid=True)
    a.finish_run(r, "--max-candidates 3 evaluated")
    r = run_of(a, "rmsnorm", "m/alpha")
    add(a, r, "seed 1", proposer="seed", fitness=0.6, eager=(1.0, 1.0), compile_=(0.8, 0.8))
    add(a, r, "k 2", model="m/alpha", cost=0.10, tokens=(100, 40), failed="correctness")
    a.finish_run(r, "--max-candidates 2 evaluated")

    r = run_of(b, "softmax", "m/beta")
    add(b, r, "seed 1", proposer="seed", fitness=0.5, eager=(2.0, 2.0), compile_=(1.0, 1.0))
    add(b, r, "k 2", model="m/beta", cost=0.30, tokens=(300, 90), failed="correctness")
    add(b, r, "k 3", model="m/beta", cost=0.30, tokens=(300, 90), failed="load")
    b.finish_run(r, "--max-candidates 3 evaluated")
    r = run_of(b, "rmsnorm", "m/beta")
    add(b, r, "k 1", model="m/beta", cost=0.40, tokens=(400, 100), failed="correctness")
    b.finish_run(r, "--max-candidates 1 evaluated")
    r = run_of(b, "softmax", "m/beta", device=H100)
    add(b, r, "k 1", model="m/beta", cost=0.50, tokens=(500, 100), fitness=0.9, eager=(4.0, 4.0),
        compile_=(2.0, 2.0))
    b.finish_run(r, "--max-candidates 1 evaluated")
    a.close()
    b.close()
    return tmp_path / "a.db", tmp_path / "b.db", ids


def row(b, problem, model, device=H200):
    found = [r for r in b.rows if (r.problem, r.model, r.device) == (problem, model, device)]
    assert len(found) == 1, [(r.problem, r.model, r.device) for r in b.rows]
    return found[0]


def test_rows_match_the_figures_computed_by_hand(archives):
    a_db, b_db, ids = archives
    b = board([a_db, b_db])
    assert len(b.rows) == 5  # alpha x 2, beta x 2 on the H200, beta on the H100

    alpha = row(b, "softmax", "m/alpha")
    assert alpha.best == 0.8 and alpha.best_candidate["id"] == ids["a_best"]
    assert alpha.vs_eager == pytest.approx(math.sqrt(3.0 * 1.2))
    assert alpha.vs_compile == pytest.approx(math.sqrt(1.5 * 1.0))
    assert alpha.proposals == 3 and alpha.correct == 1 and alpha.compile_failures == 1  # the invalid one counts
    assert alpha.correct_rate == pytest.approx(1 / 3) and alpha.compile_failure_rate == pytest.approx(1 / 3)
    assert alpha.total.dollars == pytest.approx(0.35) and alpha.total.tokens == 150 + 280 + 100
    assert alpha.to_first_correct.dollars == pytest.approx(0.30) and alpha.to_first_correct.tokens == 430
    assert alpha.to_best.dollars == pytest.approx(0.30)
    assert alpha.dollars_per_correct == pytest.approx(0.35)
    assert alpha.seed == 0.5 and alpha.dollars_per_point == pytest.approx(0.35 / 30)  # 30 points over the seed

    rms = row(b, "rmsnorm", "m/alpha")
    assert rms.best == 0.6 and rms.best_candidate["proposer"] == "seed"  # the run's best: the seed
    assert rms.correct_rate == 0.0 and rms.dollars_per_correct is None and rms.dollars_per_point is None

    none = row(b, "rmsnorm", "m/beta")  # no correct kernel at all: the row stays, with nothing to show
    assert none.best is None and none.best_candidate is None and none.vs_eager is None
    assert none.proposals == 1 and none.correct_rate == 0.0 and none.total.dollars == pytest.approx(0.40)
    assert none.to_first_correct is None and none.to_best is None

    beta = row(b, "softmax", "m/beta")
    assert beta.best == 0.5 and beta.compile_failure_rate == pytest.approx(0.5) and beta.total.dollars == 0.6


def test_fast_p_and_geometric_means_stay_within_a_device(archives):
    a_db, b_db, _ = archives
    b = board([a_db, b_db])
    summary = {(s.model, s.device): s for s in b.summaries}
    alpha = summary[("m/alpha", H200)]
    assert (alpha.problems, alpha.solved) == (2, 2)
    # softmax: eager 1.897, compile 1.225; rmsnorm: eager 1.0, compile 0.8
    assert alpha.fast_eager == {"0": 1.0, "1": 0.5, "1.5": 0.5, "2": 0.0}
    assert alpha.fast_compile == {"0": 1.0, "1": 0.5, "1.5": 0.0, "2": 0.0}
    assert alpha.geomean_best == pytest.approx(math.sqrt(0.8 * 0.6))
    assert alpha.geomean_vs_eager == pytest.approx(math.sqrt(math.sqrt(3.6) * 1.0))
    beta = summary[("m/beta", H200)]
    assert (beta.problems, beta.solved) == (2, 1)  # softmax only (the seed); 2.0 is not more than 2
    assert beta.fast_eager == {"0": 0.5, "1": 0.5, "1.5": 0.5, "2": 0.0}
    assert beta.dollars == pytest.approx(1.0)
    other = summary[("m/beta", H100)]  # the H100 run is its own comparison, never averaged with the H200's
    assert (other.problems, other.solved) == (1, 1) and other.fast_eager["2"] == 1.0
    assert other.geomean_best == 0.9 and other.dollars == pytest.approx(0.5)


def test_two_archives_merge_and_filters_apply(archives):
    a_db, b_db, _ = archives
    only_a = board([a_db])
    assert {r.model for r in only_a.rows} == {"m/alpha"}
    merged = board([a_db, b_db], problems={"softmax"}, devices={H200})
    assert {(r.problem, r.model) for r in merged.rows} == {("softmax", "m/alpha"), ("softmax", "m/beta")}
    text = "\n".join(text_lines(merged))
    assert "m/alpha" in text and "m/beta" in text and H100 not in text and "0.800" in text


def test_the_cli_prints_the_same_numbers_as_json(archives):
    a_db, b_db, ids = archives
    env = dict(os.environ, LITELLM_LOCAL_MODEL_COST_MAP="True")
    out = subprocess.run([sys.executable, "-m", "evolve.cli", "leaderboard", "--db", a_db, "--db", b_db, "--json"],
                         capture_output=True, text=True, cwd=ROOT, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    rows = {(r["problem"], r["model"], r["device"]): r for r in data["rows"]}
    assert rows[("softmax", "m/alpha", H200)]["best_candidate"]["id"] == ids["a_best"]
    assert rows[("rmsnorm", "m/beta", H200)]["best"] is None
    models = {(m["model"], m["device"]): m for m in data["models"]}
    assert models[("m/alpha", H200)]["fast_eager"]["1.5"] == 0.5
    assert all(r["progress"] for r in data["runs"])
    table = subprocess.run([sys.executable, "-m", "evolve.cli", "leaderboard", "--db", a_db, "--db", b_db],
                           capture_output=True, text=True, cwd=ROOT, env=env, timeout=120)
    assert table.returncode == 0 and "fast_p" in table.stdout and H100 in table.stdout
    widest = max(table.stdout.splitlines(), key=len)
    assert len(widest) <= 100, widest  # was 157: a terminal of 100 columns shows every table whole
    missing = subprocess.run([sys.executable, "-m", "evolve.cli", "leaderboard", "--db", a_db.parent / "none.db"],
                             capture_output=True, text=True, cwd=ROOT, env=env, timeout=120)
    assert missing.returncode == 2 and "does not exist" in missing.stderr


def test_archives_with_the_same_file_name_keep_apart(archives, tmp_path):
    """runs/evolve.db from two machines: their runs and pages must not take each other's names."""
    import shutil

    a_db, b_db, _ = archives
    (tmp_path / "m1").mkdir()
    (tmp_path / "m2").mkdir()
    one, two = tmp_path / "m1" / "evolve.db", tmp_path / "m2" / "evolve.db"
    shutil.copy(a_db, one)
    shutil.copy(b_db, two)
    b = board([one, two])
    keys = [r.key for r in b.runs]
    assert len(set(keys)) == len(keys) == 5 and {k.split("-")[0] for k in keys} == {"evolve1", "evolve2"}
    assert {r.best_candidate["archive"] for r in b.rows if r.best_candidate} == {"evolve1", "evolve2"}


def test_the_same_archive_given_twice_is_read_once(archives):
    a_db, _, _ = archives
    once, twice = board([a_db]), board([a_db, Path(str(a_db).replace("/a.db", "/./a.db"))])
    assert [(r.problem, r.proposals, r.total.dollars) for r in once.rows] == \
        [(r.problem, r.proposals, r.total.dollars) for r in twice.rows]


def test_pause_does_not_outlive_the_run(tmp_path):
    archive = Archive(tmp_path / "p.db")
    run = archive.start_run("p", "p", {}, "cpu", {})
    archive.set_paused(run, True)
    archive.finish_run(run, "interrupted")
    assert not archive.paused(run)
    archive.set_paused(run, True)
    archive.reopen_run(run)
    assert not archive.paused(run)
    archive.close()


def test_model_labels():
    assert model_label({"models": [{"name": "anthropic/x", "weight": 1}]}) == "anthropic/x"
    assert model_label({"models": [{"name": "a/x"}, {"name": "b/y"}]}) == "a/x+b/y"
    assert model_label({}) == EMBEDDED
    assert model_label({"models": [{"name": "a/x", "agent": False}, {"name": "a/x", "agent": True}]}) == \
        "a/x+a/x (agent)"
    # a run of the run-wide --agent from before each model recorded its flag: every model was an agent
    assert model_label({"models": [{"name": "a/x", "weight": 1.0}], "search": {"agent": True}}) == "a/x (agent)"


def tool(name, seconds, cost=0.0):
    """One entry of a proposal's tool log, as the proposer writes it."""
    return {"round": 1, "name": name, "arguments": "{}", "result": "ok", "result_chars": 2, "tokens_in": 0,
            "tokens_out": 0, "cost": cost, "seconds": seconds}


def test_a_models_agent_and_one_shot_runs_are_rows_of_their_own_with_figures_per_proposal(tmp_path):
    """The same model as an agent and in one answer per proposal: two rows, each with its dollars and its evaluation
    seconds per proposal; an agent's seconds include its session's compiles and checks, the seeds' are no one's."""
    from evolve.config import RunConfig
    from evolve.harness import RUNGS
    from evolve.proposer import ModelSpec

    evaluation = 0.25 * len(RUNGS)  # what a verdict of verdicts.ladder took
    archive = Archive(tmp_path / "g.db")
    versions = {"torch": "2.11.0", "triton": "3.6.0"}
    kinds = {}
    for agent in (False, True):
        options = RunConfig(problem_dir="problems/softmax", models=(ModelSpec("m/alpha", agent=agent),)).public()
        kinds[agent] = archive.start_run("softmax", "problems/softmax", options, H200, versions)
        add(archive, kinds[agent], f"seed {agent}", proposer="seed", fitness=0.5)  # two sources: no duplicate
    add(archive, kinds[False], "k 1", model="m/alpha", cost=0.05, fitness=0.6)
    session = archive.add_candidate(kinds[True], source="k 2", model="m/alpha", template="agent", cost=0.30,
                                    tool_log=[tool("compile", 2.0, cost=0.1), tool("check", 3.0), tool("submit", 0)])
    archive.record_verdict(session.id, ladder(fitness=0.7, shapes=shapes((1.0,), (1.0,))), 0.7)
    archive.add_candidate(kinds[True], source=None, model="m/alpha", template="agent", cost=0.10,
                          error="the model still called tools after 12 rounds", tool_log=[tool("compile", 4.0)])
    for run in kinds.values():
        archive.finish_run(run, "--max-candidates 2 evaluated")
    archive.close()

    b = board([tmp_path / "g.db"])
    one_shot, agent = row(b, "softmax", "m/alpha"), row(b, "softmax", "m/alpha (agent)")
    assert (one_shot.proposals, agent.proposals) == (1, 2) and agent.best == 0.7
    assert one_shot.dollars_per_proposal == pytest.approx(0.05)
    assert one_shot.eval_seconds_per_proposal == pytest.approx(evaluation)
    assert agent.dollars_per_proposal == pytest.approx(0.40 / 2)
    assert agent.eval_seconds_per_proposal == pytest.approx((evaluation + 2.0 + 3.0 + 4.0) / 2)
    rows = {r["model"]: r for r in b.to_json()["rows"]}
    assert rows["m/alpha (agent)"]["eval_seconds_per_proposal"] == agent.eval_seconds_per_proposal
    lines = text_lines(b)
    per_proposal = next(line for line in lines if "m/alpha (agent)" in line and "0.2000" in line)
    assert f"{agent.eval_seconds_per_proposal:.1f}" in per_proposal, lines
    assert max(len(line) for line in lines) <= 100


def test_wall_time_leaves_out_the_time_a_run_sat_stopped(tmp_path):
    """A run that crashed (no end time) and one that stopped, each resumed an hour later: the leaderboard's wall
    time and time-to-kernel count only the time they ran."""
    import sqlite3

    path = tmp_path / "g.db"
    archive = Archive(path)
    crashed = run_of(archive, "softmax", "m/alpha")
    first = add(archive, crashed, "seed 1", proposer="seed", fitness=0.5)
    stopped = run_of(archive, "rmsnorm", "m/alpha")
    add(archive, stopped, "seed 1", proposer="seed", fitness=0.5)
    archive.finish_run(stopped, "interrupted")
    with sqlite3.connect(path) as conn:  # the runs began 10 minutes in the past; the crash and the stop 8 in the past
        for run in (crashed, stopped):
            conn.execute("UPDATE runs SET started = ? WHERE id = ?", ["2026-01-01T10:00:00.000+00:00", run])
            conn.execute("UPDATE candidates SET created = ? WHERE run_id = ?", ["2026-01-01T10:02:00.000+00:00", run])
        conn.execute("UPDATE evaluations SET created = ?", ["2026-01-01T10:02:00.000+00:00"])  # the verdicts too
        conn.execute("UPDATE runs SET ended = ? WHERE id = ?", ["2026-01-01T10:02:30.000+00:00", stopped])
    archive.reopen_run(crashed)
    archive.reopen_run(stopped)
    gaps = {run: archive.run(run)["gaps"] for run in (crashed, stopped)}
    assert gaps[crashed][0][0] == "2026-01-01T10:02:00.000+00:00"  # since its last stored candidate
    assert gaps[stopped][0][0] == "2026-01-01T10:02:30.000+00:00"  # since it stopped
    late = add(archive, crashed, "k 2", model="m/alpha", fitness=0.7)
    archive.finish_run(crashed, "--max-candidates 2 evaluated")
    archive.finish_run(stopped, "--max-candidates 1 evaluated")
    with sqlite3.connect(path) as conn:  # resumed at 11:00, the new kernel at 11:01, both ended at 11:03
        for run in (crashed, stopped):
            (text,) = conn.execute("SELECT gaps FROM runs WHERE id = ?", [run]).fetchone()
            gap = json.loads(text)
            gap[-1][1] = "2026-01-01T11:00:00.000+00:00"
            conn.execute("UPDATE runs SET gaps = ?, ended = ? WHERE id = ?",
                         [json.dumps(gap), "2026-01-01T11:03:00.000+00:00", run])
        conn.execute("UPDATE candidates SET created = ? WHERE id = ?", ["2026-01-01T11:01:00.000+00:00", late.id])
    archive.close()
    b = board([path])
    soft, rms = row(b, "softmax", "m/alpha"), row(b, "rmsnorm", "m/alpha")
    assert soft.total.seconds == pytest.approx(2 * 60 + 3 * 60)  # 10:00-10:02 and 11:00-11:03
    assert rms.total.seconds == pytest.approx(150 + 3 * 60)  # 10:00-10:02:30 and 11:00-11:03
    archive = Archive(path)
    evaluation = next(c for c in archive.timeline(crashed) if c["id"] == late.id)["eval_seconds"]
    archive.close()
    assert first.id < late.id and evaluation > 0
    # the kernel's verdict came 1 minute after the resume, plus its evaluation's seconds
    assert soft.to_best.seconds == pytest.approx(2 * 60 + 60 + evaluation)


def test_a_run_resumed_twice_counts_each_stop_once(tmp_path):
    """crash, resume, crash again before any new candidate, resume: the second gap starts where the first ended."""
    import sqlite3

    path = tmp_path / "t.db"
    archive = Archive(path)
    run = run_of(archive, "softmax", "m/alpha")
    add(archive, run, "seed 1", proposer="seed", fitness=0.5)
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE runs SET started = ? WHERE id = ?", ["2026-01-01T10:00:00.000+00:00", run])
        conn.execute("UPDATE candidates SET created = ? WHERE run_id = ?", ["2026-01-01T10:01:00.000+00:00", run])
        conn.execute("UPDATE evaluations SET created = ?", ["2026-01-01T10:01:30.000+00:00"])
    archive.reopen_run(run)
    with sqlite3.connect(path) as conn:
        (text,) = conn.execute("SELECT gaps FROM runs WHERE id = ?", [run]).fetchone()
        gaps = json.loads(text)
        assert gaps[0][0] == "2026-01-01T10:01:30.000+00:00"  # its last verdict, after its last stored candidate
        gaps[0][1] = "2026-01-01T11:00:00.000+00:00"
        conn.execute("UPDATE runs SET gaps = ? WHERE id = ?", [json.dumps(gaps), run])
    archive.reopen_run(run)  # crashed again with nothing new stored
    gaps = archive.run(run)["gaps"]
    assert len(gaps) == 2 and gaps[1][0] == "2026-01-01T11:00:00.000+00:00"  # from the first resume, not before
    archive.close()


def test_a_models_triton_and_cutedsl_runs_are_rows_of_their_own(tmp_path):
    """The language is part of a row and of a model's summary: one model's Triton and CuTeDSL kernels of a problem on
    one device are compared side by side, never mixed into one best."""
    from evolve.archive import Archive
    from evolve.leaderboard import board, text_lines

    db = tmp_path / "a.db"
    archive = Archive(db)
    options = {"models": [{"name": "anthropic/claude-sonnet-4-5", "weight": 1.0}]}
    for language in ("triton", "cutedsl"):
        archive.start_run("softmax", "problems/softmax", options, "NVIDIA H200", {"torch": "2.11"}, language)
    archive.close()
    b = board([db])
    assert sorted((r.model, r.language) for r in b.rows) == [("anthropic/claude-sonnet-4-5", "cutedsl"),
                                                             ("anthropic/claude-sonnet-4-5", "triton")]
    assert sorted(s.language for s in b.summaries) == ["cutedsl", "triton"]
    lines = text_lines(b)
    assert any("cutedsl" in line and "softmax" in line for line in lines)
    assert {r["language"] for r in b.to_json()["runs"]} == {"triton", "cutedsl"}


def test_a_cpu_interpreter_best_has_no_speed_up_and_no_fast_p_beyond_correct(tmp_path):
    """Interpreter times against torch on the host are thousands of times slower and mean nothing: a CPU best shows
    '-' for eager and compile and for fast_p at p > 0, not 0.00x and 0%; fast_0 still counts the solved problem."""
    archive = Archive(tmp_path / "c.db")
    r = run_of(archive, "softmax", EMBEDDED, device="cpu (Triton interpreter)")
    cand = archive.add_candidate(r, source="seed 1", proposer="seed")
    verdict = ladder(fitness=None, shapes=shapes((0.001, 0.002), (0.001, 0.001)))
    archive.record_verdict(cand.id, verdict, 0.02)
    archive.finish_run(r, "--budget of 5 min used")
    archive.close()
    b = board([tmp_path / "c.db"])
    cpu = row(b, "softmax", EMBEDDED, "cpu (Triton interpreter)")
    assert cpu.cpu_score == 0.02 and cpu.vs_eager is None and cpu.vs_compile is None
    summary = b.summaries[0]
    assert summary.fast_eager == {"0": 1.0, "1": None, "1.5": None, "2": None} and summary.geomean_vs_eager is None
    lines = text_lines(b)
    table = next(line for line in lines if line.strip().startswith("softmax"))
    assert "0.02*" in table and "0.00x" not in table, table
    assert any(re.search(r"100%\s+-\s+-\s+-\s+100%\s+-\s+-\s+-$", line) for line in lines), lines  # fast_p


def test_a_cpu_runs_page_names_its_score_and_what_was_never_evaluated(tmp_path):
    """The site's run page for a model's run on the CPU: the score column says CPU score (not fitness), a proposal the
    run ended before evaluating reads 'not evaluated' (not 'pending'), and a model that cost nothing is not called
    'no model' under the dollars curve."""
    from evolve.site import write_site

    archive = Archive(tmp_path / "c.db")
    r = run_of(archive, "softmax", "openai/scripted", device="cpu (Triton interpreter)")
    seed = archive.add_candidate(r, source="seed 1", proposer="seed")
    archive.record_verdict(seed.id, ladder(fitness=None, shapes=shapes((1.0,), (1.0,))), 0.02)
    archive.add_candidate(r, source="k 2", proposer="llm", model="openai/scripted", parent_ids=(seed.id,))
    archive.finish_run(r, "--budget of 3 min used")
    archive.close()
    page = (write_site(board([tmp_path / "c.db"]), tmp_path / "site", [tmp_path / "c.db"]).parent
            / f"run-c-{r}.html").read_text()
    assert "<th>CPU score</th>" in page and "<th>fitness</th>" not in page
    assert "not evaluated" in page and ">pending<" not in page
    assert "dollars (none spent)" in page and "no model" not in page
