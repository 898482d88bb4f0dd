"""A person in the loop: `evolve hint` reaches the next prompts of a run that goes on (over the scripted server, real
HTTP), `evolve show` marks who saw it and explains a candidate against its parent, `evolve pause` / `evolve resume`
hold the loop without losing what is in flight. The hints and pauses are given by separate `evolve` processes
writing to the archive while the run holds it, as a person would."""
import os
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

from evolve.archive import Archive
from evolve.config import RunConfig, SearchConfig
from evolve.harness import EvalOptions
from evolve.proposer import LLMProposer, ModelSpec, default_prompts
from evolve.render import against_parent
from evolve.search import Search
from llm_server import ScriptedLLM
from test_run import fenced, good
from verdicts import ladder

ROOT = Path(__file__).resolve().parents[1]
MINI = ROOT / "tests" / "data" / "mini_softmax"
HINT = "try an online softmax above 16K columns"


def evolve(*args):
    env = dict(os.environ, LITELLM_LOCAL_MODEL_COST_MAP="True")
    return subprocess.run([sys.executable, "-m", "evolve.cli", *map(str, args)], capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=120)


def passing(path, problem, options):
    """A CPU verdict that passes, its row as the roofline rung writes one (no roofline, no baselines)."""
    row = {"case": "fp32 4x256", "ms": 1.0 + len(Path(path).read_text()) % 7, "roofline_fraction": None,
           "speedup_vs_torch": None, "speedup_vs_compile": None, "spread": None}
    return ladder(fitness=None, mode="cpu", shapes=[row])


def search_with(db, llm, evaluate, **config):
    cfg = RunConfig(problem_dir=str(MINI), db=str(db), models=(ModelSpec("openai/scripted", 1.0),), api_base=llm.url,
                    eval=EvalOptions(device="cpu"), search=SearchConfig(tune_share=0.0, compose_share=0.0),
                    **config)
    proposer = LLMProposer([ModelSpec("openai/scripted", 1.0)], default_prompts(), api_base=llm.url, concurrency=1,
                           timeout_s=20)
    events = []
    return Search(cfg, Archive(db), proposer, on_event=events.append, evaluate=evaluate), events


def test_a_hint_given_while_the_run_goes_on_reaches_the_next_prompts(tmp_path):
    db = tmp_path / "hint.db"
    seen = {"n": 0}

    def evaluate(path, problem, options):
        seen["n"] += 1
        if seen["n"] == 2:  # the person speaks after the first model-written kernel has been evaluated
            out = evolve("hint", "--db", db, HINT)
            assert out.returncode == 0 and "hint #1 given to run 1" in out.stdout, out.stderr
        return passing(path, problem, options)

    with ScriptedLLM() as llm:
        llm.enqueue(*[fenced(good(w)) for w in (1, 2, 4, 8)])
        search, _ = search_with(db, llm, evaluate, max_candidates=4)
        search.run()
        prompts = [r["messages"][1]["content"] for r in llm.requests]
    assert len(prompts) == 3  # the seed, then three model-written kernels
    assert HINT not in prompts[0]
    assert all("# Hints from the person running this search" in p and HINT in p for p in prompts[1:])
    archive = Archive(db)
    llm_cands = [c for c in archive.candidates(1) if c.proposer == "llm"]
    assert [c.hint_ids for c in llm_cands] == [(), (1,), (1,)]
    assert archive.hints.of_run(1)[0]["text"] == HINT
    archive.close()
    shown = evolve("show", llm_cands[1].id, "--db", db, "--no-prompt")
    assert shown.returncode == 0 and "saw hint #1" in shown.stdout and HINT in shown.stdout
    assert "saw hint" not in evolve("show", llm_cands[0].id, "--db", db, "--no-prompt").stdout


def test_pause_holds_the_loop_and_resume_lets_it_go_on(tmp_path):
    db = tmp_path / "pause.db"
    stamps = []

    def evaluate(path, problem, options):
        stamps.append(time.monotonic())
        if len(stamps) == 2:
            assert evolve("pause", "--db", db).returncode == 0
            threading.Timer(2.0, lambda: evolve("resume", "--db", db)).start()
        return passing(path, problem, options)

    with ScriptedLLM() as llm:
        llm.enqueue(*[fenced(good(w)) for w in (1, 2, 4, 8)])
        search, events = search_with(db, llm, evaluate, max_candidates=4, budget_s=600.0)
        summary = search.run()
    kinds = [e["kind"] for e in events]
    assert "paused" in kinds and "resumed" in kinds and kinds.index("paused") < kinds.index("resumed")
    assert summary.evaluated == 4 and "--max-candidates 4" in summary.stop_reason
    assert stamps[2] - stamps[1] >= 1.5  # nothing new started while paused
    assert search.paused_s >= 1.5  # and the pause is not charged to --budget
    archive = Archive(db)
    assert not archive.paused(1)
    archive.close()


def test_pause_and_hint_name_the_run_and_refuse_what_is_not_there(tmp_path):
    db = tmp_path / "none.db"
    assert evolve("hint", "--db", db, HINT).returncode == 2  # no archive
    Archive(db).close()
    out = evolve("pause", "--db", db)
    assert out.returncode == 1 and "no runs" in out.stderr
    archive = Archive(db)
    archive.start_run("mini_softmax", str(MINI), {}, "cpu (Triton interpreter)", {})
    archive.close()
    assert evolve("hint", "--db", db, "--run", 7, HINT).returncode == 1
    assert evolve("hint", "--db", db, "  ").returncode == 2
    assert "run 1" in evolve("resume", "--db", db).stdout


def test_show_explains_a_candidate_against_its_parent():
    def with_kernels(verdict, kernels):
        rungs = tuple(replace(r, metrics={"kernels": kernels}) if r.name == "compile" else r for r in verdict.rungs)
        return replace(verdict, rungs=rungs)

    rows = lambda a, b, fa, fb: [{"case": "bf16 4096x1024", "ms": a, "roofline_fraction": fa},  # noqa: E731
                                 {"case": "bf16 1024x131072", "ms": b, "roofline_fraction": fb}]
    parent_v = with_kernels(ladder(fitness=0.5, shapes=rows(0.010, 0.400, 0.50, 0.50)),
                            [{"name": "softmax_kernel", "regs": 40, "spills": 0, "smem": 0, "num_warps": 4}])
    child_v = with_kernels(ladder(fitness=0.6, shapes=rows(0.010, 0.200, 0.50, 1.00)),
                           [{"name": "softmax_kernel", "regs": 96, "spills": 12, "smem": 0, "num_warps": 8}])

    class C:
        def __init__(self, id, score, proposer):
            self.id, self.score, self.proposer = id, score, proposer

    lines = against_parent(child_v, parent_v, C(2, 0.6, "llm"), C(1, 0.5, "seed"))
    text = "\n".join(lines)
    assert "against its parent #1 (seed)" in text and "+20.0%" in text
    assert "2.00x" in text and "0.50 -> 1.00" in text and "1.00x" in text
    assert "kernel softmax_kernel: regs 40 -> 96, spills 0 -> 12, num_warps 4 -> 8" in text
    failed = ladder(failed="correctness")
    assert against_parent(failed, parent_v, C(3, None, "llm"), C(1, 0.5, "seed")) == [
        "against its parent #1 (seed): this one failed at correctness, the parent passed"]
