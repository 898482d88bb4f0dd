"""The bandit over models in a search, against the local scripted server (real HTTP through litellm, priced from
litellm's bundled price map, a real SQLite archive): the cheap model writes ever faster correct kernels, the dear one
wrong ones, and the bandit gives the cheap one most of the proposals, where a pick by weight splits them about evenly;
`evolve status` and the leaderboard say how the proposals were split and why."""
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from llm_server import ScriptedLLM

from evolve import api
from evolve.archive import Archive
from evolve.cli import cli
from evolve.config import LLMConfig, SearchConfig
from evolve.leaderboard import board, text_lines
from evolve.proposer import parse_models
from evolve.search import Search
from test_agent import FIXED
from test_bench import wrong
from test_run import MINI, evolve, fenced, good
from verdicts import ladder

CHEAP, DEAR = "openai/gpt-4o-mini", "openai/gpt-4o"  # litellm prices both; gpt-4o costs about 16 times as much
PROPOSALS = 30


def interpreted(path, problem, options):
    """A stand-in for the harness under the CPU interpreter (no fitness; the score ranks by interpreter ms): a kernel
    marked _WRONG fails correctness, one marked _SPEED = n runs 1.15**n times faster than the seed."""
    source = Path(path).read_text()
    if "_WRONG" in source:
        return ladder(failed="correctness", mode="cpu")
    found = re.search(r"^_SPEED = (\d+)$", source, re.MULTILINE)
    speed = 1.15 ** int(found.group(1)) if found else 1.0
    return ladder(fitness=None, mode="cpu", shapes=({"case": "fp32 4x256", "ms": 10.0 / speed,
                                                              "roofline_fraction": None, "speedup_vs_torch": None},))


def search(tmp_path, choice: str):
    """A run over both models until PROPOSALS model proposals are evaluated: (the archive's path, its run id, the
    models the server was asked, in order)."""
    db = tmp_path / f"{choice}.db"
    with ScriptedLLM() as llm:
        llm.enqueue_for("gpt-4o-mini", *[fenced(f"{FIXED}\n_SPEED = {n}\n") for n in range(1, 2 * PROPOSALS)])
        llm.enqueue_for("gpt-4o", *[fenced(f"{FIXED}\n_WRONG = {n}\n") for n in range(1, 2 * PROPOSALS)])
        plan = api.plan_run(MINI, models=parse_models([CHEAP, DEAR]), api_base=llm.url, db=str(db), device="cpu",
                            max_candidates=PROPOSALS + 1, retime_top=0, artifacts=False, seed=5,
                            llm=LLMConfig(concurrency=1),
                            search=SearchConfig(tune_share=0, compose_share=0, model_choice=choice, stagnation=100))
        archive = Archive(db)
        try:
            summary = Search(plan.config, archive, api.make_proposer(plan.config, "triton"), evaluate=interpreted,
                             known_material=False).run()
        finally:
            archive.close()
        asked = [r["model"] for r in llm.requests]
    return db, summary.run_id, asked


def test_the_bandit_gives_most_proposals_to_the_model_with_more_gain_per_dollar(tmp_path):
    db, run_id, asked = search(tmp_path, "bandit")
    assert len(asked) >= PROPOSALS
    assert asked.count("gpt-4o-mini") >= 0.7 * len(asked), asked
    assert asked.count("gpt-4o") >= 2  # the dear one was still tried
    archive = Archive(db, read_only=True)
    try:
        assert archive.run(run_id)["options"]["model_choice"] == "bandit"
        made = [c for c in archive.candidates(run_id) if c.proposer == "llm"]
    finally:
        archive.close()
    assert {c.model for c in made} == {CHEAP, DEAR} and all(c.cost > 0 for c in made)

    status = CliRunner().invoke(cli, ["status", "--db", str(db)])
    assert status.exit_code == 0, status.output
    lines = status.output.splitlines()
    assert any("chosen by the bandit (gain per $" in line for line in lines), status.output
    cheap = next(line for line in lines if line.strip().startswith(CHEAP + " "))
    dear = next(line for line in lines if line.strip().startswith(DEAR + " "))
    assert cheap.endswith("most gain per $") and dear.endswith("exploring"), status.output
    cheap_share, dear_share = (int(re.search(r" (\d+)% ", line).group(1)) for line in (cheap, dear))
    assert cheap_share >= 70 and cheap_share + dear_share in (99, 100, 101)
    assert max(len(line) for line in lines[lines.index(cheap) - 2:]) < 100

    row = board([db]).rows[0]
    split = {s["model"]: s for s in row.split}
    assert row.model_choice == "bandit" and split[CHEAP]["proposals"] > 2 * split[DEAR]["proposals"]
    assert split[CHEAP]["gain_per_dollar"] > 0 and split[DEAR]["gain"] == 0
    text = text_lines(board([db]))
    assert any(re.search(rf"{CHEAP} +bandit +{split[CHEAP]['proposals']} ", line) for line in text), text
    assert max(len(line) for line in text) <= 100


def test_a_pick_by_weight_splits_the_proposals_about_evenly(tmp_path):
    db, run_id, asked = search(tmp_path, "weights")
    assert 0.3 * len(asked) <= asked.count("gpt-4o-mini") <= 0.7 * len(asked), asked
    status = CliRunner().invoke(cli, ["status", "--db", str(db)])
    assert "chosen at random by weight" in status.output and "by weight (1)" in status.output, status.output


@pytest.mark.slow
def test_evolve_run_with_two_models_through_the_real_harness_and_status_says_the_split(tmp_path):
    """The command line end to end under the CPU interpreter: the bandit is the default, the run's options say so,
    and `evolve status` prints each model's share and why."""
    db = tmp_path / "cli.db"
    with ScriptedLLM() as llm:
        llm.enqueue_for("gpt-4o-mini", *[fenced(good(w)) for w in (2, 8, 1, 16)])
        llm.enqueue_for("gpt-4o", *[fenced(wrong(w)) for w in (2, 8, 1, 16)])
        out = evolve("run", MINI, "--db", db, "--model", CHEAP, "--model", DEAR, "--api-base", llm.url, "--device",
                     "cpu", "--max-candidates", 4, "--tune-share", 0, "--compose-share", 0, "--concurrency", 1,
                     "--retime", 0, OPENAI_API_KEY="sk-test")
    assert out.returncode == 0, out.stderr[-3000:]
    archive = Archive(db, read_only=True)
    try:
        run = archive.runs()[-1]
    finally:
        archive.close()
    assert run["options"]["model_choice"] == "bandit" and run["options"]["search"]["model_choice"] == "bandit"
    status = evolve("status", "--db", db)
    assert status.returncode == 0 and "model proposals, their models chosen by the bandit" in status.stdout
    assert re.search(rf"{CHEAP} +\d+ +\d+%", status.stdout) and re.search(rf"{DEAR} +\d+ +\d+%", status.stdout)
