"""A memory across runs (evolve/lessons.py): a run whose model's candidate beats its parent keeps the lesson in the
archive; a second run of the problem, and a run of a problem alike in kind, carry it in their first prompt; a problem
of another kind does not; `evolve lessons` lists and clears them; an archive from before the table migrates."""
import json
import random
import re
from dataclasses import replace
from pathlib import Path

import sqlite_utils
from click.testing import CliRunner
from llm_server import ScriptedLLM

from evolve import archive_schema
from evolve.archive import Archive
from evolve.cli import cli
from evolve.config import LLMConfig, RunConfig, SearchConfig
from evolve.harness import EvalOptions, RungResult, load_problem
from evolve.lessons import bound_of, for_prompt, kind_of, lesson_of, pattern_of, summary_line
from evolve.profiling import Result as ProfileResult
from evolve.proposer import LLMProposer, ModelSpec, ProblemView, ProgramView, PromptContext
from evolve.search import Search
from test_run import fenced, good
from verdicts import ladder

ROOT = Path(__file__).resolve().parents[1]
MINI = ROOT / "tests" / "data" / "mini_softmax"
ROW_MAX = ROOT / "tests" / "data" / "row_max"
MATMUL = ROOT / "problems" / "matmul"
PROMPTS = ROOT / "prompts"
FASTER = good(8) + "\n# faster: eight warps\n"  # the model's candidate, which the stand-in times at half the seed's
SECOND = good(4) + "\n# another try\n"


def timed(ms: float, moved: int, work: int):
    """A passing CPU verdict whose one benchmark case took `ms` and counted these bytes and flops."""
    verdict = ladder(mode="cpu", fitness=None, shapes=({"case": "fp32 4x256", "ms": ms, "roofline_fraction": None,
                                                        "speedup_vs_torch": None},))
    rungs = tuple(replace(r, metrics={"shapes": [{"case": "fp32 4x256", "dtype": "float32", "ms": ms,
                                                  "bytes": moved, "flops": work}]})
                  if r.name == "benchmark" else r for r in verdict.rungs)
    return replace(verdict, rungs=rungs)


def stand_in(path, problem, options):
    """A stand-in for the harness: the model's 'faster' kernel takes half the time of anything else; a matmul's
    case counts far more flops than bytes (compute-bound), the others fewer (memory-bound)."""
    gemm = "matmul" in str(problem)
    moved, work = (3 * 2**24, 2**37) if gemm else (8192, 5120)
    return timed(1.0 if "# faster" in Path(path).read_text() else 2.0, moved, work)


def search(db: Path, problem: Path, replies, lessons: bool = True):
    """One run against the scripted server: the seeds, then one model candidate per reply. Returns the requests."""
    config = RunConfig(problem_dir=str(problem), db=str(db), eval=EvalOptions(device="cpu"),
                       max_candidates=None, retime_top=0, artifacts=False, llm=LLMConfig(concurrency=1),
                       search=SearchConfig(tune_share=0, compose_share=0, diff_share=0.0, lessons=lessons))
    archive = Archive(db)
    material = len(load_problem(problem).seed_files()) + len(load_problem(problem).solution_files("correct"))
    done = sum(c.proposer in ("seed", "solution") for c in archive.candidates(problem=load_problem(problem).name))
    config = replace(config, max_candidates=(material - done) + len(replies))
    with ScriptedLLM() as llm:
        llm.enqueue(*map(fenced, replies))
        proposer = LLMProposer([ModelSpec("openai/scripted")], PROMPTS, api_base=llm.url, timeout_s=10,
                               rng=random.Random(0), concurrency=1)
        try:
            Search(config, archive, proposer, evaluate=stand_in, known_material=False).run()
        finally:
            archive.close()
        return [json.dumps(r["messages"]) for r in llm.requests]


def first_run(tmp_path) -> Path:
    db = tmp_path / "a.db"
    search(db, MINI, [FASTER])
    return db


def test_a_run_keeps_what_beat_its_parent_with_its_diff_and_gain(tmp_path):
    db = first_run(tmp_path)
    archive = Archive(db, read_only=True)
    try:
        [lesson] = archive.lessons.listing()
        made = archive.get(lesson["candidate_id"])
        assert made.proposer == "llm" and "# faster" in made.source
        assert (lesson["problem"], lesson["kind"], lesson["language"]) == ("mini_softmax", "memory-bound reduction",
                                                                           "triton")
        assert (lesson["measure"], lesson["before"], lesson["after"]) == ("score", 0.5, 1.0)
        assert "+# faster: eight warps" in lesson["diff"] and lesson["parent_id"] == made.parent_ids[0]
        assert lesson["model"] == "openai/scripted" and lesson["run_id"] == made.run_id
    finally:
        archive.close()


def test_a_second_run_starts_from_the_first_runs_lessons(tmp_path):
    db = first_run(tmp_path)
    requests = search(db, MINI, [SECOND])
    assert "# Lessons from earlier runs" in requests[0] and "+# faster: eight warps" in requests[0]
    assert "score 0.5 -> 1 (x2.00)" in requests[0]
    without = search(db, MINI, [good(2)], lessons=False)  # --no-lessons
    assert without and "Lessons from earlier runs" not in without[0]


def test_a_problem_alike_in_kind_gets_the_lesson_and_one_of_another_kind_does_not(tmp_path):
    db = first_run(tmp_path)
    alike = search(db, ROW_MAX, [SECOND])
    assert "# Lessons from earlier runs" in alike[0]
    assert "mini_softmax (memory-bound reduction, like this one)" in alike[0]
    other = search(db, MATMUL, [SECOND])
    assert other and "Lessons from earlier runs" not in other[0]
    archive = Archive(db, read_only=True)
    try:
        kinds = {row["problem"]: row["kind"] for row in archive.lessons.listing()}
        assert kinds["mini_softmax"] == "memory-bound reduction"
    finally:
        archive.close()


def test_evolve_lessons_lists_and_clear_removes(tmp_path):
    db = first_run(tmp_path)
    listed = CliRunner().invoke(cli, ["lessons", "--db", str(db)])
    assert listed.exit_code == 0, listed.output
    header, row = listed.output.splitlines()
    assert header.split()[:4] == ["id", "problem", "kind", "gain"]
    assert "mini_softmax" in row and "memory-bound reduction" in row and "0.5 -> 1 score" in row
    assert "openai/scripted" in row and re.search(r"llm: \+\d+ -\d+ lines$", row)
    other = CliRunner().invoke(cli, ["lessons", "--db", str(db), "--clear", "--problem", "row_max"])
    assert other.output.strip() == "0 lessons removed (row_max)"
    cleared = CliRunner().invoke(cli, ["lessons", "--db", str(db), "--clear", "--problem", str(MINI)])
    assert cleared.exit_code == 0 and cleared.output.strip() == "1 lesson removed (mini_softmax)"
    assert CliRunner().invoke(cli, ["lessons", "--db", str(db)]).output.startswith("no lessons in")


def test_an_archive_from_before_lessons_migrates(tmp_path):
    db_path = tmp_path / "old.db"
    names = [fn.__name__ for fn in archive_schema.MIGRATIONS]
    db = sqlite_utils.Database(db_path)
    archive_schema.migrate(db, archive_schema.MIGRATIONS[:names.index("m015_lessons")])
    assert "lessons" not in db.table_names()
    db.close()
    archive = Archive(db_path)
    try:
        run = archive.start_run("p", "p", {}, "cpu", {})
        cand = archive.add_candidate(run, source="x = 1", proposer="llm")
        lesson_id = archive.lessons.add({"problem": "p", "language": "triton", "run_id": run, "candidate_id": cand.id,
                                         "proposer": "llm", "measure": "score", "before": 1.0, "after": 2.0,
                                         "diff": "+x", "knobs_before": {"B": 1}, "knobs_after": {"B": 2}})
        stored = archive.lessons.of_candidate(cand.id)
        assert stored["id"] == lesson_id and stored["kind"] == "" and stored["knobs_after"] == {"B": 2}
    finally:
        archive.close()


def test_a_gain_within_the_margin_teaches_nothing(tmp_path):
    archive = Archive(tmp_path / "m.db")
    try:
        run = archive.start_run("mini_softmax", str(MINI), {}, "cpu", {})
        parent = archive.add_candidate(run, source=good(4), proposer="seed")
        parent = archive.record_verdict(parent.id, timed(2.0, 8192, 5120), 0.5)
        problem = load_problem(MINI)
        for warps, score, teaches in ((2, 0.51, False), (8, 0.6, True)):
            cand = archive.add_candidate(run, source=good(warps), parent_ids=(parent.id,), proposer="llm")
            verdict = timed(1 / score, 8192, 5120)
            cand = archive.record_verdict(cand.id, verdict, score)
            assert (lesson_of(archive, problem, "triton", cand, verdict) is not None) is teaches
    finally:
        archive.close()


def test_a_problems_kind_is_its_bound_and_what_its_words_say():
    problem = load_problem(MINI)
    assert pattern_of(problem) == "reduction" and pattern_of(load_problem(MATMUL)) == "GEMM-like"
    assert bound_of(timed(1.0, 8192, 5120)) == "memory" and bound_of(timed(1.0, 100, 10**6)) == "compute"
    assert kind_of(problem, None) == "reduction"  # no benchmark figures yet: the bound is unknown
    # on a GPU the roofline's own peaks decide: 100 flops a byte is memory-bound against a 1000:1 balance
    gpu = timed(1.0, 10**6, 10**8)
    gpu = replace(gpu, rungs=tuple(replace(r, metrics={"peaks": {"bandwidth": 1e12, "flops": {"float32": 1e15}}})
                                   if r.name == "roofline" else r for r in gpu.rungs))
    assert bound_of(gpu) == "memory" and bound_of(timed(1.0, 10**6, 10**8)) == "compute"
    assert isinstance(gpu.rung("roofline"), RungResult)


def test_a_tuners_lesson_shows_its_knobs_the_hints_and_the_profile_in_every_template(tmp_path):
    """A tuner's win is a change of settings: the prompt names the knobs changed, the person's hint its prompt carried
    and the slower kernel's profile line; the full rewrite, the edit and the agent's prompt all carry it."""
    archive = Archive(tmp_path / "t.db")
    try:
        run = archive.start_run("mini_softmax", str(MINI), {}, "cpu", {})
        hint = archive.hints.add(run, "try more warps on long rows")
        parent = archive.add_candidate(run, source=good(4), proposer="seed", knobs={"LOOP_WARPS": 8, "CHUNK": 4096})
        parent = archive.record_verdict(parent.id, timed(2.0, 8192, 5120), 0.5)
        archive.profiles.store(parent.id, "cpu", ProfileResult(True, 1.0, "", {"verdict": "memory-bound; DRAM 61%"}))
        cand = archive.add_candidate(run, source=good(8), parent_ids=(parent.id,), proposer="tuner",
                                     knobs={"LOOP_WARPS": 16, "CHUNK": 4096}, hint_ids=(hint,))
        cand = archive.record_verdict(cand.id, timed(1.0, 8192, 5120), 1.0)
        lesson = lesson_of(archive, load_problem(MINI), "triton", cand, timed(1.0, 8192, 5120))
        archive.lessons.add(lesson)
        [stored] = archive.lessons.listing()
        assert summary_line(stored) == "knobs LOOP_WARPS 8 -> 16"
        context = PromptContext(problem=ProblemView(name="mini_softmax", description="d", notes="",
                                                               contract=""), device="cpu", knobs_doc="",
                                           lessons=(for_prompt(stored, "mini_softmax"),))
        proposer = LLMProposer([ModelSpec("openai/x")], PROMPTS)
        for template in ("full_rewrite", "diff_edit", "agent"):
            parent_view = ProgramView(source=good(4)) if template == "diff_edit" else None
            text = proposer.render(template, replace(context, parent=parent_view))[1]["content"]
            assert "Lesson 1: this problem, score 0.5 -> 1 (x2.00)" in text, template
            assert "Knob settings changed: LOOP_WARPS 8 -> 16" in text
            assert "The person's hints then: try more warps on long rows" in text
            assert "The slower kernel's profile: memory-bound; DRAM 61%" in text
    finally:
        archive.close()
