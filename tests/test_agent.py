"""Agent sessions (evolve run --agent) against the local scripted server: the model compiles a broken kernel, reads
the error, fixes it, checks it and submits; the submission is evaluated as any candidate and the session is archived
with it. A model that never submits is bounded and the run goes on; garbage tool arguments come back as errors."""
import json
import random
from dataclasses import replace
from pathlib import Path

import pytest
from llm_server import ScriptedLLM, ToolCalls

from evolve.archive import Archive
from evolve.config import LLMConfig, RunConfig, SearchConfig
from evolve.harness import EvalOptions
from evolve.proposer import LLMProposer, ModelSpec
from evolve.search import Search
from test_run import GOOD
from verdicts import ladder

ROOT = Path(__file__).resolve().parents[1]
MINI = ROOT / "tests" / "data" / "mini_softmax"
PROMPTS = ROOT / "prompts"
FIXED = GOOD.replace("WARPS", "4")
BROKEN = FIXED.replace("tl.max(", "tl.maxx(")  # no such function: the compile rung says so


def judged(path, problem, options):
    """A stand-in for the harness in the fast tests: a file calling tl.maxx fails to compile, others pass."""
    broken = "tl.maxx(" in Path(path).read_text()
    return ladder(failed="compile" if broken else None, fitness=0.5, mode="cpu")


def run_agent(tmp_path, script, evaluate, max_candidates=2, model="openai/scripted", **search):
    config = RunConfig(problem_dir=str(MINI), db=str(tmp_path / "a.db"), eval=EvalOptions(device="cpu"),
                       max_candidates=max_candidates, retime_top=0, artifacts=False, llm=LLMConfig(concurrency=1),
                       search=SearchConfig(agent=True, tune_share=0, compose_share=0, **search))
    with ScriptedLLM() as llm:
        llm.enqueue(*script)
        proposer = LLMProposer([ModelSpec(model)], PROMPTS, api_base=llm.url, timeout_s=10,
                               rng=random.Random(0), concurrency=1)
        archive = Archive(tmp_path / "a.db")
        summary = Search(config, archive, proposer, evaluate=evaluate, known_material=False).run()
        requests = list(llm.requests)
    return archive, summary, requests


def test_a_session_compiles_reads_the_error_fixes_checks_and_submits(tmp_path):
    archive, summary, requests = run_agent(tmp_path, [
        ToolCalls((("compile", {"source": BROKEN}),)),
        ToolCalls((("compile", {"source": FIXED}),)),
        ToolCalls((("check", {"source": FIXED}),)),
        ToolCalls((("submit", {"source": FIXED}),)),
    ], judged)
    try:
        cands = archive.candidates(summary.run_id)
        made = next(c for c in cands if c.proposer == "llm")
        assert made.template == "agent" and made.source.strip() == FIXED.strip() and made.ok
        calls = archive.tool_calls(made.id)
        assert [c["name"] for c in calls] == ["compile", "compile", "check", "submit"]
        assert calls[0]["result"].startswith("failed at compile:") and calls[1]["result"].startswith("compiled")
        assert calls[2]["result"].startswith("runs and is correct")
        assert made.tokens_in >= sum(c["tokens_in"] for c in calls) > 0  # the session's tokens are the candidate's
        sent = json.dumps(requests[1]["messages"])
        assert "failed at compile" in sent  # the model read the error before it fixed the kernel
        assert {t["function"]["name"] for t in requests[0]["tools"]} >= {"compile", "check", "submit"}
    finally:
        archive.close()


def test_a_session_that_never_submits_is_bounded_and_the_run_goes_on(tmp_path):
    rounds = 3
    script = [ToolCalls((("compile", {"source": FIXED}),))] * (rounds + 1) + \
        [ToolCalls((("check", {"source": "not json"}),))]
    archive, summary, requests = run_agent(tmp_path, script + [ToolCalls((("submit", {"source": FIXED}),))],
                                           judged, max_candidates=2, agent_rounds=rounds)
    try:
        cands = archive.candidates(summary.run_id)
        llm = [c for c in cands if c.proposer == "llm"]
        assert llm and llm[0].status == "invalid" and "after 3 rounds" in (llm[0].error or "")
        assert summary.stop_reason.startswith("--max-candidates")  # the run went on past the unbounded session
    finally:
        archive.close()


def test_garbage_tool_arguments_come_back_as_errors(tmp_path):
    archive, summary, _ = run_agent(tmp_path, [
        ToolCalls((("compile", {"src": FIXED}),)),
        ToolCalls((("check", {"source": ""}),)),
        ToolCalls((("submit", {"source": FIXED}),)),
    ], judged)
    try:
        made = next(c for c in archive.candidates(summary.run_id) if c.proposer == "llm")
        results = [c["result"] for c in archive.tool_calls(made.id)]
        assert results[0].startswith("error: give the complete program") and results[1].startswith("error:")
        assert made.ok  # nothing lost: the session went on to its submission
    finally:
        archive.close()


def test_each_tool_asks_the_harness_for_no_more_than_it_needs(tmp_path):
    """compile stops after the compile rung (off the card where the language compiles without one), check after
    correctness, time times one or two named cases (the problem's first by default); a third case, or profiling
    without a GPU, is an error the model reads."""
    asked = []

    def recording(path, problem, options):
        if "evolve-agent-" in str(path):  # the session's, not the lane's
            asked.append(options)
        return judged(path, problem, options)

    archive, summary, _ = run_agent(tmp_path, [
        ToolCalls((("compile", {"source": FIXED}), ("check", {"source": FIXED}), ("time", {"source": FIXED}))),
        ToolCalls((("time", {"source": FIXED, "cases": ["a", "b", "c"]}), ("profile", {"source": FIXED}))),
        ToolCalls((("submit", {"source": FIXED}),)),
    ], recording, max_candidates=2)
    try:
        made = next(c for c in archive.candidates(summary.run_id) if c.proposer == "llm")
        results = {c["name"]: c["result"] for c in archive.tool_calls(made.id)}
        compiled, checked, timed = asked[:3]
        assert (compiled.last_rung, compiled.device) == ("compile", "cpu")
        assert (checked.last_rung, checked.bench_cases) == ("correctness", ())
        assert (timed.last_rung, timed.bench_cases) == ("benchmark", ("fp32 4x256",))  # the CPU case, by default
        assert len(asked) == 3  # the three cases and the profile reached no harness
        assert results["time"].startswith("error: cases is a list of one or two")
        assert results["profile"].startswith("error: profiling needs a GPU")
        assert made.ok
    finally:
        archive.close()


def test_a_harness_call_that_cannot_finish_is_an_error_the_model_reads_and_the_run_goes_on(tmp_path):
    """The harness raised (another evaluation's lease evicted it, the card was busy): the session is told, calls again
    or submits, and nothing ends the run."""
    from evolve.harness.parent.lease import Evicted

    def evicting(path, problem, options):
        if "evolve-agent-" in str(path):
            raise Evicted("stopped and evicted so that another evaluation on the card could be timed")
        return judged(path, problem, options)

    archive, summary, _ = run_agent(tmp_path, [
        ToolCalls((("check", {"source": FIXED}),)),
        ToolCalls((("submit", {"source": FIXED}),)),
    ], evicting)
    try:
        made = next(c for c in archive.candidates(summary.run_id) if c.proposer == "llm")
        (checked, _) = archive.tool_calls(made.id)
        assert checked["result"].startswith("error: the check call could not finish (Evicted"), checked["result"]
        assert made.ok and summary.stop_reason.startswith("--max-candidates")
    finally:
        archive.close()


def test_the_run_keeps_its_limits_while_a_session_is_at_work_and_the_session_ends_with_it(tmp_path):
    """A session whose model takes long (here: a call that hangs) does not hold the loop: the run stops at its budget
    on time, and the session makes no call after that."""
    import time

    import litellm  # noqa: F401 - imported before the clock starts, as a run that has asked before has it
    from llm_server import Hang

    config = RunConfig(problem_dir=str(MINI), db=str(tmp_path / "a.db"), eval=EvalOptions(device="cpu"),
                       budget_s=6.0, retime_top=0, artifacts=False, llm=LLMConfig(concurrency=1, retries=0),
                       search=SearchConfig(agent=True, tune_share=0, compose_share=0))
    with ScriptedLLM() as llm:
        llm.enqueue(Hang(20.0))
        proposer = LLMProposer([ModelSpec("openai/scripted")], PROMPTS, api_base=llm.url, timeout_s=30,
                               rng=random.Random(0), concurrency=1, max_retries=0)
        archive = Archive(tmp_path / "a.db")
        began = time.monotonic()
        summary = Search(config, archive, proposer, evaluate=judged, known_material=False).run()
        took = time.monotonic() - began
        asked = len(llm.requests)
    try:
        assert summary.stop_reason.startswith("--budget") and took < 15, (summary.stop_reason, took)
        assert asked == 1  # the session's hanging call, and none after it: the run did not wait for it
    finally:
        archive.close()


@pytest.mark.parametrize("bound, said", [({"agent_tokens": 5}, "tokens, over its bound of 5"),
                                         ({"agent_dollars": 1e-9}, "over its bound of $0.00")])
def test_a_session_past_its_tokens_or_dollars_ends_and_the_run_goes_on(tmp_path, bound, said):
    archive, summary, requests = run_agent(tmp_path, [ToolCalls((("compile", {"source": FIXED}),)),
                                                      ToolCalls((("submit", {"source": FIXED}),))],
                                           judged, max_candidates=2, model="openai/gpt-4o", **bound)
    try:
        stopped, submitted = [c for c in archive.candidates(summary.run_id) if c.proposer == "llm"]
        assert stopped.status == "invalid" and said in (stopped.error or ""), stopped.error
        assert stopped.tokens_in > 0 and len(archive.tool_calls(stopped.id)) == 1  # one round, counted, no more
        assert submitted.ok and len(requests) == 2  # the next session submitted in its first round
        assert summary.stop_reason.startswith("--max-candidates")
    finally:
        archive.close()


@pytest.mark.slow
def test_a_session_through_the_real_harness(tmp_path):
    """The same session with every compile and check through the sealed harness under the CPU interpreter."""
    from evolve.harness import evaluate

    archive, summary, _ = run_agent(tmp_path, [
        ToolCalls((("compile", {"source": BROKEN}),)),
        ToolCalls((("check", {"source": FIXED}),)),
        ToolCalls((("time", {"source": FIXED}), ("asm", {"source": FIXED, "kind": "ptx"}))),
        ToolCalls((("submit", {"source": FIXED}),)),
    ], evaluate)
    try:
        made = next(c for c in archive.candidates(summary.run_id) if c.proposer == "llm")
        calls = archive.tool_calls(made.id)
        assert calls[0]["result"].startswith("failed at "), calls[0]["result"]
        assert "maxx" in calls[0]["result"]
        assert calls[1]["result"].startswith("runs and is correct"), calls[1]["result"]
        assert calls[2]["result"].startswith("timed (advice, not a verdict"), calls[2]["result"]
        assert "fp32 4x256" in calls[2]["result"]
        assert ".target sm_90" in calls[3]["result"], calls[3]["result"][:500]  # the PTX the compiler made
        assert made.ok
    finally:
        archive.close()
