"""`evolve mcp` driven over stdio by the MCP SDK's own client: the tools it lists, a seed evaluated under the CPU
interpreter through the sealed harness, an archived candidate shown and its trace refused for want of a GPU, the
context searched, a run paused, and a
malformed call answered as an error with the server still up."""
import asyncio
import json
import os
import sys
from pathlib import Path

import pytest

pytest.importorskip("mcp")

from mcp.client.session import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402

from evolve.archive import Archive  # noqa: E402
from evolve.tool_registry import MCP, PARAMETERS, TOOLS  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
MINI = ROOT / "tests" / "data" / "mini_softmax"


def session_calls(calls, cwd, roots=(ROOT / "problems", ROOT / "tests" / "data")):
    """Start `evolve mcp --problems ROOT...`, make the calls [(tool, arguments)] in order; their results (tool None:
    list the tools)."""
    async def go():
        flags = [flag for root in roots for flag in ("--problems", str(root))]
        params = StdioServerParameters(command=sys.executable, args=["-m", "evolve.cli", "mcp", *flags], cwd=str(cwd),
                                       env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True",
                                            "CUDA_VISIBLE_DEVICES": ""})  # as on a machine without a GPU
        results = []
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                for tool, arguments in calls:
                    if tool is None:
                        results.append(await session.list_tools())
                    else:
                        results.append(await session.call_tool(tool, arguments))
        return results

    return asyncio.run(go())


def text(result) -> str:
    return "\n".join(c.text for c in result.content if getattr(c, "text", None))


def summary_and_json(result) -> tuple[str, dict]:
    """An answer's first line, and the JSON after it."""
    head, _, rest = text(result).partition("\n")
    return head, json.loads(rest)


def test_an_agent_drives_evolve_over_mcp(tmp_path):
    db = tmp_path / "evolve.db"
    archive = Archive(str(db))
    run = archive.start_run("mini_softmax", str(MINI), {}, "cpu", {})
    cand = archive.add_candidate(run, source=(MINI / "seeds" / "softmax_rows.py").read_text(), proposer="seed")
    seed = str(MINI / "seeds" / "softmax_rows.py")
    tools, problems, verdict, bad, shown, traced, traced_file, found, paused, after = session_calls([
        (None, None),
        ("list_problems", {}),
        ("evaluate", {"problem": str(MINI), "candidate": seed, "device": "cpu"}),
        ("evaluate", {"problem": str(MINI)}),  # neither a candidate nor a source
        ("show", {"candidate_id": cand.id, "db": str(db)}),
        ("trace", {"candidate_id": cand.id, "db": str(db)}),  # its sections are marked; no GPU to time them
        ("trace", {"source": (MINI / "seeds" / "softmax_rows.py").read_text(), "problem": str(MINI)}),
        ("search_context", {"query": "online softmax running max", "language": "triton"}),
        ("pause", {"db": str(db)}),
        (None, None),
    ], tmp_path)
    names = {t.name for t in tools.tools}
    assert names == set(MCP)
    listed = json.loads(text(problems)) if not problems.structured_content else problems.structured_content
    assert "softmax" in json.dumps(listed) and "cutedsl" in json.dumps(listed)
    assert not verdict.is_error, text(verdict)
    said, ladder = summary_and_json(verdict)
    assert ladder["ok"] is True and [r["name"] for r in ladder["rungs"]][:3] == ["load", "compile", "run"]
    assert said.startswith("passed") and "softmax_row_kernel x" in said, said  # one line before the JSON
    kernels = ladder["kernels_compiled"]  # each distinct specialization once, counted
    assert len({json.dumps(k, sort_keys=True) for k in kernels}) == len(kernels)
    assert all(k["specializations"] >= 1 for k in kernels)
    assert bad.is_error and "exactly one of candidate" in text(bad)
    assert not shown.is_error and f"candidate #{cand.id}" in text(shown)
    assert traced.is_error and "tracing needs a GPU" in text(traced)
    assert traced_file.is_error and "tracing needs a GPU" in text(traced_file)
    assert not found.is_error and "softmax" in text(found).lower()
    assert not paused.is_error and "paused" in text(paused)
    assert {t.name for t in after.tools} == names  # the server outlived the malformed call
    assert Archive(str(db)).runs()[-1]["paused"]


def test_a_call_names_only_problems_under_the_roots_and_no_value_is_an_option(tmp_path):
    """An agent with nothing but these tools once wrote a source through one evaluate call (its folder named in a
    failure reason) and named that file as another call's problem: a KernelBench problem is code, and the measurer
    ran it outside the jail. Problems now come only from the roots the server was started with; the folder a call's
    source is written to is named in no answer; a value that looks like an option (`hint(text="--help")` printed the
    CLI's help) is the value."""
    db = tmp_path / "evolve.db"
    archive = Archive(str(db))
    run = archive.start_run("mini_softmax", str(MINI), {}, "cpu", {})
    planted = tmp_path / "problem.py"  # a KernelBench file anywhere else
    planted.write_text("import os\nos.system('touch ' + %r)\n" % str(tmp_path / "ran"))
    broken = "def custom_kernel(x):\n    return undefined_name(x)\n"
    by_path, by_name, outside, sent, helped, best_help = session_calls([
        ("evaluate", {"problem": str(MINI), "source": broken, "device": "cpu"}),
        ("evaluate", {"problem": "mini_softmax", "source": broken, "device": "cpu"}),
        ("evaluate", {"problem": str(planted), "source": broken, "device": "cpu"}),
        ("read_problem", {"problem": "../../etc"}),
        ("hint", {"text": "--help", "db": str(db), "run": run}),
        ("best", {"problem": "--help", "db": str(db)}),
    ], tmp_path)
    for answer in (by_path, by_name):
        assert not answer.is_error, text(answer)
        assert "evolve-mcp-" not in text(answer) and tempfile_root() not in text(answer)
        said, verdict = summary_and_json(answer)
        assert verdict["ok"] is False and said.startswith("failed at "), said
    assert outside.is_error and "not a problem under" in text(outside)
    assert not (tmp_path / "ran").exists()
    assert sent.is_error and "not a problem under" in text(sent)
    assert not helped.is_error and "Usage" not in text(helped)
    assert [h["text"] for h in Archive(str(db)).hints.of_run(run)] == ["--help"]
    assert best_help.is_error and "not a problem under" in text(best_help)


def tempfile_root() -> str:
    import tempfile

    return tempfile.gettempdir() + "/evolve-mcp"


def test_an_unexpected_failure_keeps_its_message_and_the_server_goes_on(tmp_path):
    """A tool that fails in a way nothing foresaw (here read_problem on a problem whose notes.md is not UTF-8)
    answers with the exception and its message, never a bare "Error executing tool"; the next call is answered."""
    folder = tmp_path / "problems" / "garbled"
    folder.mkdir(parents=True)
    (folder / "problem.toml").write_text('name = "garbled"\n')
    (folder / "notes.md").write_bytes(b"\xff\xfe\xfa notes")
    failed, listed = session_calls([("read_problem", {"problem": "garbled"}), (None, None)], tmp_path,
                                   roots=(tmp_path / "problems",))
    assert failed.is_error and "read_problem failed: UnicodeDecodeError" in text(failed), text(failed)
    assert "evaluate" in {t.name for t in listed.tools}


def test_evolve_mcp_without_the_sdk_says_how_to_install_it(tmp_path):
    """Without the MCP SDK the command exits 2 with the install line, before a client sees a closed connection."""
    import subprocess

    (tmp_path / "mcp.py").write_text("raise ImportError('no MCP SDK here')\n")  # shadows the installed SDK
    done = subprocess.run([sys.executable, "-m", "evolve.cli", "mcp", "--problems", str(ROOT / "problems")],
                          cwd=ROOT, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
                          env={**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}"})
    assert done.returncode == 2 and "pip install 'evolve[mcp]'" in done.stderr, done.stderr[-2000:]
    assert "Traceback" not in done.stderr


def test_every_parameter_of_every_tool_says_what_it_is(tmp_path):
    """The schema a client reads names each tool's parameters with a description, never a bare name and type."""
    (listed,) = session_calls([(None, None)], tmp_path)
    bare = [f"{tool.name}.{name}" for tool in listed.tools
            for name, schema in (tool.input_schema.get("properties") or {}).items() if not schema.get("description")]
    assert not bare, bare
    assert all(tool.description and len(tool.description) > 40 for tool in listed.tools)
    for tool in listed.tools:  # as the registry writes them, which an agent session is offered too
        assert tool.description == TOOLS[tool.name].description
        properties = tool.input_schema["properties"]
        assert set(properties) == set(TOOLS[tool.name].parameters), tool.name
        assert all(properties[p]["description"] == PARAMETERS[p].description for p in properties)


def test_compile_check_time_and_asm_answer_a_line_then_json(tmp_path):
    """The tools an agent session has, over MCP: each a one-line summary, then JSON (asm: the compiler's text)."""
    seed = (MINI / "seeds" / "softmax_rows.py").read_text()
    broken, checked, timed, ptx = session_calls([
        ("compile", {"problem": "mini_softmax", "source": seed.replace("tl.max(", "tl.maxx(")}),
        ("check", {"problem": "mini_softmax", "source": seed}),
        ("time", {"problem": "mini_softmax", "source": seed}),
        ("asm", {"problem": "mini_softmax", "source": seed, "kind": "ptx"}),
    ], tmp_path)
    said, body = summary_and_json(broken)
    assert said.startswith("failed at ") and "maxx" in said and not body["ok"]
    said, body = summary_and_json(checked)
    assert said.startswith("runs and is correct") and [r["name"] for r in body["rungs"]][-1] == "correctness"
    said, body = summary_and_json(timed)
    assert said.startswith("timed (advice, not a verdict") and [c["case"] for c in body["cases"]] == ["fp32 4x256"]
    assert ".target sm_90" in text(ptx) and "<source>" not in text(ptx)
