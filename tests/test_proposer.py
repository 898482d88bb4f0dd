"""The LLM seam, through litellm over real HTTP to a scripted local server (tests/llm_server.py)."""
import random
import shutil
import time
from pathlib import Path

import pytest
from llm_server import Hang, ScriptedLLM, Status, llm_server  # noqa: F401 - llm_server is a fixture

from evolve.proposer import LLMProposer, ModelSpec, Proposal, check_models, parse_models, parse_reply

ROOT = Path(__file__).resolve().parents[1]
PROMPTS = ROOT / "prompts"

KERNEL = '''import torch
import triton
import triton.language as tl


@triton.jit
def copy_kernel(out_ptr, x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


def custom_kernel(x):
    out = torch.empty_like(x)
    n = x.numel()
    copy_kernel[(triton.cdiv(n, 1024),)](out, x, n, BLOCK=1024)
    return out
'''

CONTEXT = {
    "problem": {"name": "copy", "description": "Copy a tensor.", "notes": "It is memory-bound.",
                "contract": "Define custom_kernel(x) launching @triton.jit kernels."},
    "device": "cpu (Triton interpreter)",
    "parent": None,
    "inspirations": [],
    "error": None,
    "knobs_doc": "Declare KNOBS = {...} at module level.",
}


def parent_context(source=KERNEL, **extra):
    parent = {"source": source, "fitness": 0.5, "score": 0.5, "ladder": ["[load] ok", "[compile] ok"],
              "failed_rung": None, "reason": None,
              "kernels": [{"name": "copy_kernel", "regs": 20, "spills": 0, "smem": 0, "num_warps": 4}],
              "shapes": [{"case": "fp32 4096", "ms": 0.01, "roofline_fraction": 0.5, "speedup_vs_torch": 1.1}],
              "correctness": "max_abs=0"}
    return {**CONTEXT, "parent": {**parent, **extra}}


@pytest.fixture(autouse=True)
def no_openai_key(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


def make(server, **kw):
    kw = {"timeout_s": 10.0, "backoff_s": 0.01, "max_retries": 4, "rng": random.Random(0), **kw}
    models = kw.pop("models", [ModelSpec("openai/scripted-model")])
    return LLMProposer(models, PROMPTS, api_base=server.url, **kw)


def fenced(code, lang="python"):
    return f"```{lang}\n{code}```"


# -- through HTTP -----------------------------------------------------------------------------------------------------
def test_fenced_kernel(llm_server):
    llm_server.enqueue("Here is a kernel.\n\n" + fenced(KERNEL) + "\n")
    p = make(llm_server).propose("full_rewrite", CONTEXT)
    assert isinstance(p, Proposal)
    assert p.error is None and p.source == KERNEL
    assert p.model == "openai/scripted-model" and p.template == "full_rewrite"
    assert p.attempts == 1 and p.reply.startswith("Here is a kernel.")
    body = llm_server.requests[0]
    assert body["model"] == "scripted-model" and body["temperature"] == 0.8
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert "Copy a tensor." in body["messages"][0]["content"]
    assert "### system" in p.prompt and "### user" in p.prompt and "Copy a tensor." in p.prompt
    assert p.latency_s > 0


def test_prose_wrapped_code_takes_last_python_block(llm_server):
    draft = KERNEL.replace("1024", "512")
    shell = fenced("pip install triton\n", "bash")
    reply = (f"First a draft:\n{fenced(draft)}\nActually, better:\n{shell}\n"
             f"{fenced(KERNEL)}\nThis loads once and stores once.")
    llm_server.enqueue(reply)
    p = make(llm_server).propose("full_rewrite", CONTEXT)
    assert p.error is None and p.source == KERNEL


def test_bare_code(llm_server):
    llm_server.enqueue(KERNEL)
    p = make(llm_server).propose("repair", {**parent_context(), "error": "NameError: tl"})
    assert p.error is None and p.source.strip() == KERNEL.strip()
    assert "NameError: tl" in llm_server.requests[0]["messages"][1]["content"]


def test_diff_that_applies(llm_server):
    reply = ("Use a bigger block.\n"
             "<<<<<<< SEARCH\n    copy_kernel[(triton.cdiv(n, 1024),)](out, x, n, BLOCK=1024)\n=======\n"
             "    copy_kernel[(triton.cdiv(n, 4096),)](out, x, n, BLOCK=4096, num_warps=8)\n>>>>>>> REPLACE\n"
             "<<<<<<< SEARCH\n    out = torch.empty_like(x)   \n=======\n    out = torch.empty_like(x)  # new memory\n"
             ">>>>>>> REPLACE\n")
    llm_server.enqueue(reply)
    p = make(llm_server).propose("diff_edit", parent_context(), parent_source=KERNEL)
    assert p.error is None, p.error
    assert "BLOCK=4096, num_warps=8" in p.source and "# new memory" in p.source and "BLOCK=1024)" not in p.source
    assert "<<<<<<< SEARCH" in llm_server.requests[0]["messages"][1]["content"]  # the format is asked for


def test_prompts_show_no_test_header_and_a_diff_applies_to_what_they_show(llm_server):
    """A problem's solution files start with `# expect: ok`, check-problem's metadata: the archive keeps it, but no
    prompt shows it (as the current program, an inspiration or the program to repair), and a diff to the program
    the prompt showed gives a child without it."""
    headed = "# expect: ok\n" + KERNEL
    proposer = LLMProposer([ModelSpec("openai/x")], PROMPTS)
    context = {**parent_context(source=headed), "inspirations": [
        {"source": "#expect: run: boom\n" + KERNEL, "fitness": 0.7, "score": 0.7, "ladder": []}]}
    for template in ("full_rewrite", "diff_edit", "repair"):
        user = proposer.render(template, {**context, "error": "x"})[1]["content"]
        assert "expect:" not in user and "import triton.language as tl" in user, template
    reply = ("<<<<<<< SEARCH\nimport torch\nimport triton\n=======\nimport torch\nimport triton  # edited\n"
             ">>>>>>> REPLACE\n")
    llm_server.enqueue(reply)
    p = make(llm_server).propose("diff_edit", context, parent_source=headed)
    assert p.error is None, p.error
    assert p.source == KERNEL.replace("import triton\n", "import triton  # edited\n", 1)
    assert "expect:" not in llm_server.requests[0]["messages"][1]["content"]


def test_diff_that_does_not_apply(llm_server):
    reply = ("<<<<<<< SEARCH\n    out = torch.empty_like(x)\n=======\n    out = torch.empty(x.shape)\n>>>>>>> REPLACE\n"
             "<<<<<<< SEARCH\n    n = x.size()\n=======\n    n = x.numel()\n>>>>>>> REPLACE\n")
    llm_server.enqueue(reply)
    p = make(llm_server).propose("diff_edit", parent_context(), parent_source=KERNEL)
    assert p.source is None
    assert p.error == "diff block 2 of 2 does not match the parent: n = x.size()"
    assert p.reply == reply


def test_diff_reply_with_full_program_is_a_rewrite(llm_server):
    llm_server.enqueue("I rewrote it:\n" + fenced(KERNEL))
    p = make(llm_server).propose("diff_edit", parent_context(), parent_source="def custom_kernel(x):\n    pass\n")
    assert p.error is None and p.source == KERNEL


def test_syntax_error_reply(llm_server):
    broken = KERNEL.replace("def custom_kernel(x):", "def custom_kernel(x)")
    llm_server.enqueue(fenced(broken))
    p = make(llm_server).propose("full_rewrite", CONTEXT)
    # passed on as a program: the load rung reports the SyntaxError and the repair loop sends it back
    assert p.error is None and p.source == broken


def test_no_code_in_reply(llm_server):
    llm_server.enqueue("I cannot help with that.")
    p = make(llm_server).propose("full_rewrite", CONTEXT)
    assert p.source is None and p.error == "no code defining custom_kernel in the reply"


def test_429_then_success(llm_server):
    llm_server.enqueue(Status(429), fenced(KERNEL))
    p = make(llm_server).propose("full_rewrite", CONTEXT)
    assert p.error is None and p.attempts == 2
    assert len(llm_server.requests) == 2  # litellm and the openai client did not retry on their own


def test_500_500_then_success(llm_server):
    llm_server.enqueue(Status(500), Status(503), fenced(KERNEL))
    p = make(llm_server).propose("full_rewrite", CONTEXT)
    assert p.error is None and p.attempts == 3 and len(llm_server.requests) == 3


def test_hang_longer_than_timeout_then_success(llm_server):
    llm_server.enqueue(Hang(3.0), fenced(KERNEL))
    start = time.monotonic()
    p = make(llm_server, timeout_s=1.0).propose("full_rewrite", CONTEXT)
    assert p.error is None and p.attempts == 2
    assert time.monotonic() - start < 2.9


def test_retries_exhausted(llm_server):
    llm_server.enqueue(*[Status(500)] * 3)
    p = make(llm_server, max_retries=2).propose("full_rewrite", CONTEXT)
    assert p.source is None and p.reply is None and p.attempts == 3
    assert "InternalServerError" in p.error and "(after 3 attempts)" in p.error and "\n" not in p.error
    assert p.tokens_in == p.tokens_out == 0 and p.cost == 0.0


@pytest.mark.parametrize("code", [400, 401, 404])
def test_client_errors_are_not_retried(llm_server, code):
    llm_server.enqueue(Status(code), fenced(KERNEL))
    p = make(llm_server).propose("full_rewrite", CONTEXT)
    assert p.source is None and p.attempts == 1 and len(llm_server.requests) == 1


def test_tokens_counted(llm_server):
    llm_server.enqueue(fenced(KERNEL))
    p = make(llm_server).propose("full_rewrite", CONTEXT)
    words_in = sum(len(m["content"].split()) for m in llm_server.requests[0]["messages"])
    assert p.tokens_in == words_in and p.tokens_out == len(fenced(KERNEL).split())
    assert p.cost == 0.0  # litellm has no price for a local model


def test_cost_for_a_priced_model(llm_server):
    llm_server.enqueue(fenced(KERNEL))
    p = make(llm_server, models=[ModelSpec("openai/gpt-4o")]).propose("full_rewrite", CONTEXT)
    assert p.error is None and p.cost > 0


def test_weighted_model_choice(llm_server):
    models = [ModelSpec("openai/never", 0.0), ModelSpec("openai/always", 1.0)]
    proposer = make(llm_server, models=models, rng=random.Random(1))
    assert {proposer.pick_model().name for _ in range(50)} == {"openai/always"}
    llm_server.enqueue(fenced(KERNEL))
    assert proposer.propose("full_rewrite", CONTEXT).model == "openai/always"
    assert llm_server.requests[0]["model"] == "always"
    mixed = [ModelSpec("openai/a", 1.0), ModelSpec("openai/b", 3.0)]
    picks = [make(llm_server, models=mixed, rng=random.Random(7)).pick_model().name for _ in range(3)]
    assert len(set(picks)) == 1  # same seed, same choice


def test_concurrent_proposals(llm_server):
    from concurrent.futures import ThreadPoolExecutor

    llm_server.enqueue(*[fenced(KERNEL)] * 6)
    proposer = make(llm_server, concurrency=2)
    with ThreadPoolExecutor(6) as pool:
        results = list(pool.map(lambda _: proposer.propose("full_rewrite", CONTEXT), range(6)))
    assert all(r.source == KERNEL for r in results)


def test_api_key_is_used_but_never_stored(llm_server, monkeypatch):
    secret = "sk-test-SECRET-0123456789"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    llm_server.enqueue(fenced(KERNEL), Status(401, {"error": {"message": f"bad key {secret}"}}))
    proposer = make(llm_server)
    p = proposer.propose("full_rewrite", CONTEXT)
    assert llm_server.headers[0]["authorization"] == f"Bearer {secret}"
    assert secret not in p.prompt and secret not in p.reply
    failed = proposer.propose("full_rewrite", CONTEXT)
    assert failed.source is None and secret not in failed.error and "***" in failed.error


def test_no_key_with_api_base_sends_placeholder(llm_server):
    llm_server.enqueue(fenced(KERNEL))
    make(llm_server).propose("full_rewrite", CONTEXT)
    assert llm_server.headers[0]["authorization"] == "Bearer not-needed"


def test_scripted_server_exhausted_and_models(llm_server):
    import json
    import urllib.error
    import urllib.request

    with urllib.request.urlopen(llm_server.url + "/models") as r:
        assert json.load(r)["data"][0]["id"] == "scripted"
    req = urllib.request.Request(llm_server.url + "/chat/completions", data=b'{"messages": []}', method="POST")
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(req)
    assert info.value.code == 500 and "exhausted" in info.value.read().decode()


# -- without HTTP ----------------------------------------------------------------------------------------------------
def test_check_models_names_the_missing_key(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    problems = check_models([ModelSpec("anthropic/claude-sonnet-4-5")], api_base=None)
    assert len(problems) == 1
    assert "ANTHROPIC_API_KEY" in problems[0] and "--api-base" in problems[0]
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-0123456789")
    assert check_models(["anthropic/claude-sonnet-4-5"], api_base=None) == []
    unknown = check_models(["no-such-model-xyz"], api_base=None)
    assert len(unknown) == 1 and "provider" in unknown[0]


def test_a_bare_model_name_has_its_missing_key_named_without_litellm(monkeypatch):
    """`--model gpt-5` or `--model claude-sonnet-4-5`, without a provider prefix: litellm's bundled model map names
    the provider, read as a file, so a missing key is said at once rather than after litellm's import (10 s or more
    on a small machine); a name the map lacks is left to litellm."""
    import sys

    from evolve.proposer import check_keys

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    problems, rest = check_keys([ModelSpec("gpt-5"), ModelSpec("claude-sonnet-4-5"), ModelSpec("no-such-model-xyz")],
                                api_base=None)
    assert len(problems) == 2 and "gpt-5: OPENAI_API_KEY is not set" in problems[0], problems
    assert "claude-sonnet-4-5: ANTHROPIC_API_KEY is not set" in problems[1], problems
    assert rest == [ModelSpec("no-such-model-xyz")]
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789")
    assert check_keys(["gpt-5"], api_base=None) == ([], [])
    if "litellm" not in sys.modules:  # this process has not imported it for another test
        check_keys(["gpt-5", "claude-sonnet-4-5"], api_base=None)
        assert "litellm" not in sys.modules


def test_an_api_base_is_checked_before_the_run(llm_server):
    """With --api-base no key is needed, but something must answer there: a refused port or a malformed URL is
    named before the run starts (it used to surface as 'HTTP 500' after retries, with the run going on)."""
    assert check_models([ModelSpec("openai/local")], api_base=llm_server.url) == []
    assert check_models([ModelSpec("anthropic/claude-sonnet-4-5")], api_base=llm_server.url) == []
    refused = check_models([ModelSpec("openai/local")], api_base="http://127.0.0.1:1/v1")
    assert len(refused) == 1 and "nothing answers there" in refused[0] and "127.0.0.1:1" in refused[0]
    malformed = check_models([ModelSpec("openai/local")], api_base="127.0.0.1:8000/v1")
    assert len(malformed) == 1 and "not an http(s) URL" in malformed[0]


def test_parse_models():
    assert parse_models(["a/b", "c/d=0.3", "e=0"]) == [ModelSpec("a/b"), ModelSpec("c/d", 0.3), ModelSpec("e", 0.0)]
    for bad, fragment in [(["a=x"], "not a number"), (["a=-1"], ">= 0"), (["a=0"], "positive"), (["=1"], "no name"),
                          (["a=inf"], "finite")]:
        with pytest.raises(ValueError, match=fragment):
            parse_models(bad)


def test_parse_reply_edges():
    assert parse_reply(fenced(KERNEL, "py"), "full_rewrite", None) == (KERNEL, None)
    assert parse_reply(fenced(KERNEL, ""), "repair", None) == (KERNEL, None)  # unlabelled fence
    assert (parse_reply(fenced("x = 1\n"), "full_rewrite", None)[1]
            == "the reply's code blocks do not define custom_kernel")
    source, error = parse_reply(f"Sure! Here it is:\n\n{KERNEL}\nThat should be fast.", "full_rewrite", None)
    assert error is None and "def custom_kernel" in source
    diff = "<<<<<<< SEARCH\nn = 1\n=======\nn = 2\n>>>>>>> REPLACE\n"
    assert parse_reply(diff, "diff_edit", None) == (None, "diff_edit reply but no parent source to apply it to")
    bad = "<<<<<<< SEARCH\ndef custom_kernel(x):\n=======\ndef custom_kernel(x:\n>>>>>>> REPLACE\n"
    source, error = parse_reply(bad, "diff_edit", KERNEL)
    assert error is None and "def custom_kernel(x:" in source  # applied; the load rung reports the syntax error


def test_templates_render_without_parent_and_with_failure():
    proposer = LLMProposer([ModelSpec("openai/x")], PROMPTS)
    messages = proposer.render("full_rewrite", CONTEXT)
    assert "Copy a tensor." in messages[0]["content"] and "```python" in messages[1]["content"]
    failed = parent_context(failed_rung="correctness", reason="max_rel 0.3 > 1e-4", fitness=None, score=None)
    user = proposer.render("diff_edit", {**failed, "inspirations": [
        {"source": KERNEL, "fitness": 0.7, "score": 0.7, "ladder": ["[load] ok"]}]})[1]["content"]
    assert "FAILED at the correctness rung: max_rel 0.3 > 1e-4" in user and "fitness 0.700" in user
    with pytest.raises(ValueError):
        proposer.render("nonsense", CONTEXT)


def test_the_typed_prompt_context_renders_as_its_dict(tmp_path):
    """The search hands the templates a PromptContext: every field a template reads is declared there, and it
    renders exactly as the same values given as a dict."""
    from evolve.proposer import ProblemView, ProgramView, PromptContext

    raw = parent_context(failed_rung="run", reason="boom")
    parent = ProgramView(**{**raw["parent"], "ladder": tuple(raw["parent"]["ladder"]),
                            "kernels": tuple(raw["parent"]["kernels"]), "shapes": tuple(raw["parent"]["shapes"])})
    typed = PromptContext(problem=ProblemView(**raw["problem"]), device=raw["device"], knobs_doc=raw["knobs_doc"],
                          parent=parent, inspirations=(ProgramView(source=KERNEL, fitness=0.4, score=0.4),),
                          error=None)
    proposer = LLMProposer([ModelSpec("openai/x")], PROMPTS)
    as_dict = {**raw, "inspirations": [{"source": KERNEL, "fitness": 0.4, "score": 0.4, "ladder": [],
                                         "failed_rung": None, "reason": None, "kernels": [], "shapes": [],
                                         "correctness": None}]}
    for template in ("full_rewrite", "diff_edit", "repair"):
        assert proposer.render(template, typed) == proposer.render(template, as_dict)
    assert "It FAILED at the run rung: boom" in proposer.render("diff_edit", typed)[1]["content"]


def test_the_prompt_says_which_shapes_the_problem_accepts():
    """A kernel is checked on shapes drawn from the problem's [accepts] (harness/measurer/drawn_shapes.py): the model is
    told."""
    from dataclasses import replace

    from evolve.harness.shared.formats import load_problem
    from evolve.prompt_context import accepted_shapes
    from evolve.proposer import ProblemView, PromptContext

    accepts = accepted_shapes(load_problem(Path(__file__).parents[1] / "problems" / "attention"))
    assert accepts == "B from 1 to 32, H from 1 to 32, S from 1 to 16384, D one of 64, 128"
    context = PromptContext(problem=ProblemView(name="p", description="d", notes="", contract="", accepts=accepts),
                            device="H200", knobs_doc="", parent=None, inspirations=(), error=None)
    proposer = LLMProposer([ModelSpec("openai/x")], PROMPTS)
    system = proposer.render("full_rewrite", context)[0]["content"]
    assert f"every shape the problem accepts ({accepts})" in system.replace("\n", " ")
    fixed = replace(context, problem=replace(context.problem, accepts=""))
    assert "accepts" not in proposer.render("full_rewrite", fixed)[0]["content"]


def test_a_languages_own_templates_come_before_the_shared_ones(tmp_path):
    """Language.prompt_folder: a folder in the prompt templates whose files a run in that language reads first; a
    template it does not have is the shared one."""
    from dataclasses import replace

    from evolve.lang import get
    from evolve.proposer import default_prompts, prompt_folders

    root = tmp_path / "prompts"
    shutil.copytree(default_prompts(), root)
    (root / "mylang").mkdir()
    (root / "mylang" / "system.j2").write_text("You write MyLang kernels for {{ problem.name }}.\n")
    mine = replace(get("triton"), name="mylang", prompt_folder="mylang")
    assert prompt_folders(get("triton"), root) == [root]
    messages = LLMProposer([ModelSpec("openai/x")], prompt_folders(mine, root)).render("full_rewrite", CONTEXT)
    assert messages[0]["content"].startswith("You write MyLang kernels for ")
    assert "```python" in messages[1]["content"]  # full_rewrite.j2: the shared one
