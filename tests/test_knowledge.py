"""The searchable context: the FTS5 index over context folders, the tools a model calls through litellm's
function-calling API (real HTTP to the scripted local server), and retrieval into the prompt of a model without them."""
import json
import random
import shutil
from pathlib import Path

import pytest
from llm_server import ScriptedLLM, ToolCalls

from evolve.archive import Archive
from evolve.config import LLMConfig, RunConfig
from evolve.harness import EvalOptions
from evolve.knowledge import READ_LINES, ContextIndex, Toolbox, project_context, digest_words, references
from evolve.proposer import LLMProposer, ModelSpec
from evolve.search import Search
from test_proposer import CONTEXT, KERNEL, parent_context
from verdicts import ladder

ROOT = Path(__file__).resolve().parents[1]
PROMPTS = ROOT / "prompts"
MINI = ROOT / "tests" / "data" / "mini_softmax"

NOTES = """# Notes

## Tiling a matmul
Use tl.dot on BLOCK_M x BLOCK_K and BLOCK_K x BLOCK_N tiles and accumulate in float32.

## Online softmax
Keep a running maximum m and a running sum s; when m grows, rescale s by exp(m_old - m_new).
This reads the row once.

## Vectorized loads
Contiguous lanes let the compiler emit 128-bit LDG.E.128 loads.
"""


@pytest.fixture(autouse=True)
def no_openai_key(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


@pytest.fixture
def folder(tmp_path):
    root = tmp_path / "mylib"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "notes.md").write_text(NOTES)
    code = ["import triton", "", "@triton.jit", "def add_kernel(x_ptr, y_ptr, n):", "    pass"]
    (root / "examples").mkdir()
    (root / "examples" / "add.py").write_text("\n".join(code + [f"# line {i}" for i in range(6, 151)]) + "\n")
    (root / ".git").mkdir()
    (root / ".git" / "softmax.md").write_text("online softmax in a hidden folder")
    (root / "big.txt").write_text("x" * (600 << 10))
    (root / "image.png").write_bytes(b"\x89PNG")
    return root


def test_the_index_finds_the_right_passage(folder):
    index = ContextIndex([folder])
    assert set(index.files) == {"mylib/docs/notes.md", "mylib/examples/add.py"}  # hidden, too large, not text: out
    assert index.skipped == 1  # big.txt (the .png is not text and not counted)
    hits = index.search("how do I rescale the running sum in an online softmax?")
    assert hits[0].path == "mylib/docs/notes.md" and hits[0].title == "Online softmax"
    assert "exp(m_old - m_new)" in hits[0].text and (hits[0].start, hits[0].end) == (6, 9)
    assert index.search("LDG.E.128 vectorized")[0].title == "Vectorized loads"
    assert index.search("tl.dot accumulate")[0].title == "Tiling a matmul"
    # stemming: "tiles" and "tiling" meet; one unknown word does not empty the answer
    assert index.search("tiles zzzunknownword")[0].title == "Tiling a matmul"
    assert index.search("!!! ???") == []
    code = index.search("add_kernel")[0]
    assert code.path == "mylib/examples/add.py" and code.title == "add.py: add_kernel" and code.start == 1


def test_read_is_bounded_and_stays_inside_the_index(folder):
    index = ContextIndex([folder])
    text = index.read("mylib/examples/add.py", 3, 4)
    assert text.splitlines() == ["mylib/examples/add.py:3-4 of 150", "    3  @triton.jit",
                                 "    4  def add_kernel(x_ptr, y_ptr, n):"]
    long = index.read("mylib/examples/add.py", 1, 10_000)
    assert long.splitlines()[0] == "mylib/examples/add.py:1-150 of 150" and len(long.splitlines()) == 151
    assert READ_LINES >= 150
    assert index.read("mylib/examples/add.py", 500, 510) == "mylib/examples/add.py has 150 lines"
    outside = index.read("../../../etc/passwd", 1, 5)
    assert outside.startswith("no indexed file") and "root:" not in outside
    near = index.read("add.py", 1, 2)
    assert "did you mean 'mylib/examples/add.py'" in near


def test_the_project_context_answers_what_a_kernel_writer_asks():
    index = ContextIndex([project_context() / "triton"])
    assert len(index) > 20 and "triton/online_softmax.md" in index.files
    hit = index.search("online softmax running max rescale")[0]
    assert hit.path == "triton/online_softmax.md"
    assert any(h.path == "triton/ptx_sass_guide.md" for h in index.search("LDL STL spill local memory SASS"))
    assert any(h.path == "triton/inline_asm.md" for h in index.search("inline_asm_elementwise PTX"))


def test_the_tools_answer_and_explain_bad_calls(folder):
    reads = []
    box = Toolbox(ContextIndex([folder]), lambda what, kernel: reads.append((what, kernel)) or f"{what} of parent")
    assert "Online softmax" in box.run("search_context", '{"query": "online softmax", "limit": 1}')
    assert box.run("read_context", {"path": "mylib/examples/add.py", "start_line": 4, "end_line": 4}).endswith(
        "def add_kernel(x_ptr, y_ptr, n):")
    assert box.run("read_parent", '{"what": "sass", "kernel": "softmax"}') == "sass of parent"
    assert reads == [("sass", "softmax")]
    assert box.run("search_context", "{not json").startswith("error: the arguments are not JSON")
    assert box.run("search_context", "[1, 2]").startswith("error: the arguments are not JSON")
    assert box.run("delete_files", "{}").startswith("error: no tool 'delete_files'")
    assert box.run("read_context", '{"path": "x", "start_line": "ten", "end_line": 3}').startswith("error:")
    assert Toolbox(None, None).run("read_parent", '{"what": "digest"}').startswith("there is no current program")
    # numbers that are not numbers, a tool that fails, a file gone since indexing: an error for the model to read
    assert box.run("search_context", '{"query": "x", "limit": 1e999}').startswith("error: limit must be a whole")
    assert box.run("read_context", '{"path": "mylib/docs/notes.md", "start_line": 1e999, "end_line": 2}'
                   ).startswith("error:")

    def broken(what, kernel):
        raise RuntimeError("cuobjdump crashed")

    assert Toolbox(None, broken).run("read_parent", '{"what": "sass"}') == \
        "error: the tool failed (RuntimeError: cuobjdump crashed)"
    (folder / "docs" / "notes.md").unlink()
    assert box.run("read_context", '{"path": "mylib/docs/notes.md", "start_line": 1, "end_line": 2}'
                   ).startswith("error: the tool failed (FileNotFoundError")


def test_a_tool_call_round_trip_through_litellm(folder):
    """A model that calls functions (gpt-4o, by litellm's map) searches, reads, then answers: three HTTP calls, the
    tools' answers in the messages, every round's tokens and cost counted, each call logged."""
    box = Toolbox(ContextIndex([folder]), lambda what, kernel: "DIGEST: 2 spills")
    with ScriptedLLM() as llm:
        llm.enqueue(ToolCalls((("search_context", {"query": "online softmax rescale"}),
                               ("read_parent", {"what": "digest"})), content="Let me look."),
                    ToolCalls((("read_context", {"path": "mylib/docs/notes.md", "start_line": 6,
                                                 "end_line": 9}),)),
                    f"Here it is.\n```python\n{KERNEL}```\n")
        proposer = LLMProposer([ModelSpec("openai/gpt-4o")], PROMPTS, api_base=llm.url, timeout_s=10,
                               rng=random.Random(0))
        p = proposer.propose("full_rewrite", parent_context(), KERNEL, box)
        assert p.error is None and p.source.strip() == KERNEL.strip()
        assert len(llm.requests) == 3
        first, second, third = llm.requests
        assert [t["function"]["name"] for t in first["tools"]] == ["search_context", "read_context", "read_parent"]
        assert "search_context" in first["messages"][-1]["content"]  # the prompt points at the tools
        assert "# Reference notes" not in first["messages"][-1]["content"]
        tool_messages = [m for m in second["messages"] if m["role"] == "tool"]
        assert len(tool_messages) == 2 and "exp(m_old - m_new)" in tool_messages[0]["content"]
        assert tool_messages[1]["content"] == "DIGEST: 2 spills"
        assert second["messages"][-3]["tool_calls"][0]["function"]["name"] == "search_context"
        assert third["messages"][-1]["role"] == "tool"
        issued = [c["id"] for c in third["messages"][-2]["tool_calls"]]
        assert third["messages"][-1]["tool_call_id"] == issued[0]  # each answer names the call it answers
        assert "Keep a running maximum" in third["messages"][-1]["content"]
    assert [(t["round"], t["name"]) for t in p.tool_log] == [(1, "search_context"), (1, "read_parent"),
                                                            (2, "read_context")]
    assert p.tool_log[1]["tokens_in"] == 0 and p.tool_log[0]["tokens_in"] > 0  # a round's tokens counted once
    assert p.tokens_in == sum(t["tokens_in"] for t in p.tool_log) + _last_prompt_words(third)
    assert p.cost > sum(t["cost"] for t in p.tool_log) > 0  # priced from litellm's map, every round
    assert p.tool_log[0]["result_chars"] == len(p.tool_log[0]["result"])


def _last_prompt_words(body) -> int:
    return sum(len(str(m.get("content") or "").split()) for m in body["messages"])


def test_tool_rounds_are_bounded_and_a_model_without_tools_gets_none(folder):
    box = Toolbox(ContextIndex([folder]), None)
    with ScriptedLLM() as llm:
        llm.enqueue(*[ToolCalls((("search_context", {"query": "softmax"}),))] * 3)
        proposer = LLMProposer([ModelSpec("openai/gpt-4o")], PROMPTS, api_base=llm.url, timeout_s=10,
                               rng=random.Random(0), tool_rounds=2)
        p = proposer.propose("full_rewrite", CONTEXT, None, box)
        assert p.source is None and p.error == "the model still called tools after 2 rounds"
        assert len(llm.requests) == 3 and len(p.tool_log) == 2
        assert "last of 2 tool rounds" in llm.requests[2]["messages"][-1]["content"]

        llm.enqueue(f"```python\n{KERNEL}```")
        plain = LLMProposer([ModelSpec("openai/scripted-model")], PROMPTS, api_base=llm.url, timeout_s=10,
                            rng=random.Random(0))
        q = plain.propose("full_rewrite", {**CONTEXT, "references": [
            {"path": "mylib/docs/notes.md", "start": 6, "end": 9, "title": "Online softmax", "text": "RESCALE"}]},
            None, box)
        assert q.error is None and q.tool_log == ()
        assert "tools" not in llm.requests[-1]  # litellm says this model does not call functions
        prompt = llm.requests[-1]["messages"][-1]["content"]
        assert "# Reference notes" in prompt and "From mylib/docs/notes.md, lines 6-9 (Online softmax):" in prompt
        assert "RESCALE" in prompt

        llm.enqueue(f"```python\n{KERNEL}```")
        off = LLMProposer([ModelSpec("openai/gpt-4o")], PROMPTS, api_base=llm.url, timeout_s=10,
                          rng=random.Random(0), tools="off")
        assert off.propose("full_rewrite", CONTEXT, None, box).error is None and "tools" not in llm.requests[-1]


def test_the_digest_words_follow_the_parents_digest():
    assert digest_words(()) == ""
    flagged = {"spills": 4, "total": {"global_loads": {"32": 10}}, "loop": {"barriers": 2}}
    words = digest_words([flagged, flagged])  # two specializations flag the same: each word once
    assert words == "spills local memory registers vectorized 128-bit loads contiguous barriers reduction loop"
    assert digest_words([{"spills": 0, "total": {"global_loads": {"128": 4, "32": 1}}}]) == ""


def test_folders_that_share_a_name_keep_apart_and_hidden_ones_are_not_walked(tmp_path):
    for side in ("a", "b"):
        (tmp_path / side / "notes").mkdir(parents=True)
        (tmp_path / side / "notes" / "x.md").write_text(f"## From {side}\nzebra {side}\n")
    (tmp_path / "a" / "notes" / ".hidden").mkdir()
    (tmp_path / "a" / "notes" / ".hidden" / "y.md").write_text("## Hidden\nzebra\n")
    index = ContextIndex([tmp_path / "a" / "notes", tmp_path / "b" / "notes"])
    assert sorted(index.files) == ["notes-2/x.md", "notes/x.md"]
    assert {h.title for h in index.search("zebra")} == {"From a", "From b"}


def test_references_take_the_problem_then_the_digest_then_the_description(folder):
    index = ContextIndex([folder])
    found = references(index, "online_softmax", "accumulate with tl.dot", [{"spills": 0, "total": {
        "global_loads": {"32": 4}}}])
    assert [h.title for h in found] == ["Online softmax", "Vectorized loads", "Tiling a matmul"]
    assert [h.title for h in references(index, "online_softmax", "", (), limit=1)] == ["Online softmax"]


def test_a_run_logs_tool_calls_and_gives_references_to_models_without_tools(tmp_path, folder):
    """A run with a function-calling model: its proposal searched the problem's own context folder and a --context
    folder, and the archive holds each call with its tokens and cost; the candidate's tokens are the sum."""
    problem = tmp_path / "mini"
    shutil.copytree(MINI, problem)
    (problem / "context").mkdir()
    (problem / "context" / "hints.md").write_text("## Problem hint\nThe zebra trick: load rows in pairs.\n")

    def evaluate(path, problem_path, options):
        return ladder(fitness=0.5, shapes=[{"case": "fp32 4096x1024", "ms": 0.01, "roofline_fraction": 0.5,
                                            "speedup_vs_torch": 1.0, "speedup_vs_compile": 1.0, "spread": 0.01}])

    db = tmp_path / "k.db"
    config = RunConfig(problem_dir=str(problem), db=str(db), eval=EvalOptions(device="cpu"), max_candidates=2,
                       context_dirs=(str(folder),), llm=LLMConfig(concurrency=1))
    events = []
    with ScriptedLLM() as llm:
        llm.enqueue(ToolCalls((("search_context", {"query": "zebra trick"}),)),
                    ToolCalls((("search_context", {"query": "online softmax"}),
                               ("read_parent", {"what": "ttgir"}))),
                    f"```python\n{KERNEL}```")
        proposer = LLMProposer([ModelSpec("openai/gpt-4o")], PROMPTS, api_base=llm.url, timeout_s=10,
                               rng=random.Random(0), concurrency=1)
        archive = Archive(db)
        try:
            summary = Search(config, archive, proposer, evaluate=evaluate, on_event=events.append).run()
            context_event = next(e for e in events if e["kind"] == "context")
            assert len(context_event["folders"]) == 3  # the project's, the problem's, --context
            cands = archive.candidates(summary.run_id)
            made = next(c for c in cands if c.proposer == "llm")
            calls = archive.tool_calls(made.id)
            assert [(c["round"], c["name"]) for c in calls] == [(1, "search_context"), (2, "search_context"),
                                                               (2, "read_parent")]
            assert "zebra trick" in calls[0]["result"] and "mini/context/hints.md" in calls[0]["result"]
            assert "Online softmax" in calls[1]["result"] and "mylib/docs/notes.md" in calls[1]["result"]
            assert calls[2]["result"].startswith("no ttgir kept for the current program")
            assert made.tokens_in > sum(c["tokens_in"] for c in calls) > 0
            assert made.cost > sum(c["cost"] for c in calls) > 0  # the last call (the answer) costs too
            assert json.loads(calls[0]["arguments"]) == {"query": "zebra trick"}
            from test_run import evolve

            shown = evolve("show", str(made.id), "--db", db, "--no-prompt")
            assert "tool calls (3, over 2 rounds; tokens and cost are in the totals above):" in shown.stdout
            assert 'round 1: search_context({"query": "zebra trick"}) -> ' in shown.stdout
        finally:
            archive.close()

    # the same with a model litellm says does not call functions: no tools, the best passages in the prompt
    with ScriptedLLM() as llm:
        llm.enqueue(f"```python\n{KERNEL.replace('1024', '2048')}```")
        config2 = RunConfig(problem_dir=str(problem), db=str(tmp_path / "r.db"), eval=EvalOptions(device="cpu"),
                            max_candidates=2, context_dirs=(str(folder),), llm=LLMConfig(concurrency=1))
        proposer = LLMProposer([ModelSpec("openai/scripted-model")], PROMPTS, api_base=llm.url, timeout_s=10,
                               rng=random.Random(0), concurrency=1)
        archive = Archive(tmp_path / "r.db")
        try:
            Search(config2, archive, proposer, evaluate=evaluate).run()
            assert "tools" not in llm.requests[0]
            prompt = llm.requests[0]["messages"][-1]["content"]
            assert "# Reference notes" in prompt and prompt.count("\nFrom ") == 3
        finally:
            archive.close()
