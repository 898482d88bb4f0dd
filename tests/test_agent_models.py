"""One-shot and agent models in one run (evolve run --model a --agent-model b), and in one comparison (evolve bench):
how the options are read, which strategy asks which model, what the archive records of each, and how `evolve bench`
keeps a model's agent cells apart from its one-shot ones. The run goes through the local scripted server."""
from pathlib import Path

import pytest
from click.testing import CliRunner

from evolve import api
from evolve.archive import Archive
from evolve.bench import Budget, cell_config, cells
from evolve.cli import _all_models, cli
from evolve.config import LLMConfig, RunConfig, SearchConfig
from evolve.proposer import LLMProposer, ModelSpec, parse_models
from evolve.search import Search
from evolve.strategies import Services
from evolve.strategies.registry import one_shot_share, proposer_of
from llm_server import ScriptedLLM, ToolCalls
from test_agent import FIXED, judged
from test_run import MINI, ROOT, evolve, fenced

PROMPTS = ROOT / "prompts"


class ByKind(ScriptedLLM):
    """Answers an agent session (a request that declares the submit tool) with a submission, any other request with
    a fenced program; each answer a new variant, so none is a duplicate."""

    def _next(self, body, headers):
        with self._lock:
            self.requests.append(body)
            variant = f"{FIXED}\n_VARIANT = {len(self.requests)}\n"
        tools = {t["function"]["name"] for t in body.get("tools") or ()}
        return ToolCalls((("submit", {"source": variant}),)) if "submit" in tools else fenced(variant)


def test_agent_model_parses_to_agent_specs_beside_the_one_shot_ones():
    assert parse_models(["openai/b=0.5"], agent=True) == [ModelSpec("openai/b", 0.5, agent=True)]
    assert ModelSpec("openai/b", agent=True).label == "openai/b (agent)" and ModelSpec("openai/a").label == "openai/a"
    one_shot, agents = parse_models(["openai/a"]), parse_models(["openai/a", "openai/b=2"], agent=True)
    assert _all_models(one_shot, agents, agent=False) == (ModelSpec("openai/a"), ModelSpec("openai/a", agent=True),
                                                          ModelSpec("openai/b", 2.0, agent=True))
    assert all(m.agent for m in _all_models(one_shot, (), agent=True))  # --agent: every model is one
    text = CliRunner().invoke(cli, ["run", "--help"], terminal_width=100).output
    section = text.split("Model calls and context:")[1].split("\n\n")[0]
    assert "--agent-model NAME[=WEIGHT]" in section


def services(proposer, agent=False) -> Services:
    config = RunConfig(problem_dir=str(MINI), search=SearchConfig(agent=agent))
    return Services(config=config, problem=None, archive=None, figures=None, emit=None, rng=None, language="triton",
                    proposer=proposer)


def test_a_turn_asks_each_kind_by_the_weight_of_its_models():
    proposer = LLMProposer([ModelSpec("openai/a", 3.0), ModelSpec("openai/b", 1.0, agent=True)], PROMPTS)
    one_shot, agents = proposer_of(services(proposer), False), proposer_of(services(proposer), True)
    assert [m.name for m in one_shot.models] == ["openai/a"] and [m.name for m in agents.models] == ["openai/b"]
    assert one_shot.rng is agents.rng is proposer.rng  # one seeded choice, one set of call slots
    assert one_shot_share(services(proposer)) == pytest.approx(0.75)
    alone = LLMProposer([ModelSpec("openai/a")], PROMPTS)
    assert one_shot_share(services(alone)) is None and proposer_of(services(alone), True) is None
    # the run-wide --agent (search.agent) makes every model an agent, whatever its spec says
    assert proposer_of(services(alone, agent=True), True) is alone
    assert proposer_of(services(alone, agent=True), False) is None


def test_with_the_bandit_the_kind_a_turn_asks_goes_where_the_gain_per_dollar_is():
    """One-shot and agent models together: the bandit picks among them all, so the turns go to the kind whose model
    gains more per dollar (the weights only its prior), the other still tried now and then."""
    from dataclasses import replace

    from evolve.model_bandit import ModelBandit

    proposer = LLMProposer([ModelSpec("openai/a", 3.0), ModelSpec("openai/b", 1.0, agent=True)], PROMPTS)
    bandit = ModelBandit.of_models(proposer.models, seed=1)
    for _ in range(20):
        bandit.record("openai/a", dollars=0.01, seconds=1.0, gain=0.0)
        bandit.record("openai/b (agent)", dollars=0.01, seconds=1.0, gain=0.2)
    with_bandit = replace(services(proposer), model_choice=bandit)
    shares = [one_shot_share(with_bandit) for _ in range(200)]
    assert set(shares) == {0.0, 1.0} and shares.count(0.0) > 150  # mostly the agent, whose weight was a third


def test_a_run_with_a_one_shot_and_an_agent_model_archives_each_as_its_kind(tmp_path):
    db = tmp_path / "m.db"
    with ByKind() as llm:
        plan = api.plan_run(MINI, models=parse_models(["openai/one"]), agent_models=parse_models(["openai/two"]),
                            api_base=llm.url, db=str(db), device="cpu", max_candidates=7, retime_top=0,
                            artifacts=False, llm=LLMConfig(concurrency=1),
                            search=SearchConfig(tune_share=0, compose_share=0))
        archive = Archive(db)
        try:
            proposer = api.make_proposer(plan.config, "triton")
            summary = Search(plan.config, archive, proposer, evaluate=judged, known_material=False).run()
            made = [c for c in archive.candidates(summary.run_id) if c.proposer == "llm"]
            options = archive.run(summary.run_id)["options"]
            calls = [archive.tool_calls(c.id) for c in made if c.model == "openai/two"]
        finally:
            archive.close()
        asked = {r["model"]: {t["function"]["name"] for t in r.get("tools") or ()} for r in llm.requests}
    assert {c.template for c in made if c.model == "openai/two"} == {"agent"}
    assert {c.template for c in made if c.model == "openai/one"} <= {"full_rewrite", "diff_edit"}
    assert {c.model for c in made} == {"openai/one", "openai/two"}, [(c.model, c.template) for c in made]
    assert "submit" in asked["two"] and "submit" not in asked["one"]  # the one-shot model never had the agent's tools
    assert [(m["name"], m["agent"]) for m in options["models"]] == [("openai/one", False), ("openai/two", True)]
    assert calls and all([t["name"] for t in session] == ["submit"] and "seconds" in session[0] for session in calls)


def test_bench_gives_a_models_agent_entry_cells_of_its_own(tmp_path):
    model, agent = ModelSpec("openai/gpt-4o-mini"), ModelSpec("openai/gpt-4o-mini", agent=True)
    todo = cells([(str(MINI), "mini_softmax")], [model, agent])
    budget = Budget(text="2", candidates=2)
    tags = [cell.tag("bench", budget) for cell in todo]
    assert tags[0] == {"name": "bench", "problem": "mini_softmax", "model": model.name, "budget": "2"}
    assert tags[1] == {**tags[0], "agent": True}  # found again on resume, never taken for the one-shot cell
    config = cell_config(RunConfig(problem_dir=str(MINI)), todo[1], tags[1], budget, None)
    assert config.public()["models"] == [{"name": model.name, "weight": 1.0, "agent": True}]
    args = ["--problem", MINI, "--budget-per-cell", "2", "--db", tmp_path / "b.db"]
    twice = evolve("bench", "--agent-model", model.name, "--agent-model", model.name, *args, OPENAI_API_KEY="sk-x")
    assert twice.returncode == 2 and "named twice" in twice.stderr
    none = evolve("bench", *args)
    assert none.returncode == 2 and "--agent-model" in none.stderr


@pytest.mark.slow
def test_evolve_run_with_a_model_and_an_agent_model_through_the_real_harness(tmp_path):
    """The command line end to end: both kinds asked, both evaluated under the CPU interpreter, options recorded."""
    db = tmp_path / "cli.db"
    with ByKind() as llm:
        out = evolve("run", MINI, "--db", db, "--model", "openai/one", "--agent-model", "openai/two", "--api-base",
                     llm.url, "--device", "cpu", "--max-candidates", 5, "--tune-share", 0, "--compose-share", 0,
                     "--concurrency", 1, "--retime", 0)
    assert out.returncode == 0, out.stderr[-3000:]
    archive = Archive(db, read_only=True)
    try:
        run = archive.runs()[-1]
        made = {c.model: c.template for c in archive.candidates(run["id"]) if c.proposer == "llm"}
    finally:
        archive.close()
    assert made.get("openai/two") == "agent" and made.get("openai/one") in ("full_rewrite", "diff_edit"), made
    assert [m["agent"] for m in run["options"]["models"]] == [False, True] and not run["options"]["search"]["agent"]
    assert "stopped: --max-candidates 5 evaluated" in out.stdout



@pytest.mark.slow
def test_bench_bounds_its_agent_sessions_as_run_does(tmp_path):
    """evolve bench takes evolve run's four bounds on a session, and each cell's run records them."""
    with ByKind() as llm:
        done = evolve("bench", "--agent-model", "openai/gpt-4o-mini", "--problem", MINI, "--budget-per-cell", "1",
                      "--db", tmp_path / "b.db", "--api-base", llm.url, "--device", "cpu", "--agent-rounds", "3",
                      "--agent-tokens", "900", "--agent-dollars", "0.5", "--agent-time", "2m")
    assert done.returncode == 0, done.stderr[-2000:]
    from evolve.archive import Archive

    (run,) = Archive(tmp_path / "b.db").runs()
    search = run["options"]["search"]
    assert (search["agent_rounds"], search["agent_tokens"], search["agent_dollars"], search["agent_seconds"]) == \
        (3, 900, 0.5, 120.0)
    assert run["options"]["models"] == [{"name": "openai/gpt-4o-mini", "weight": 1.0, "agent": True}]
