"""Candidate languages behind one interface (evolve/lang): a problem names those it accepts, a run or an eval the one
it asks for, and an installed package can add one under the entry-point group evolve.languages."""
import shutil
from dataclasses import replace
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest
from click.testing import CliRunner

from evolve import lang
from evolve.cli import cli
from evolve.harness import EvalOptions, ProblemError, evaluate, load_problem

ROOT = Path(__file__).resolve().parents[1]
MINI = ROOT / "tests" / "data" / "mini_softmax"
SEED = ROOT / "problems" / "softmax" / "seeds" / "softmax_rows.py"


def test_triton_is_built_in_and_an_unknown_name_says_which_exist():
    assert "triton" in lang.names() and lang.get().name == lang.DEFAULT == "triton"
    triton = lang.get("triton")
    assert triton.without_gpu == "interpret" and "sass" in triton.artifact_kinds
    assert "custom_kernel(*inputs)" in triton.prompt_contract(("torch.softmax",))
    with pytest.raises(lang.UnknownLanguage, match="no candidate language 'cobol': the languages here are .*triton"):
        lang.get("cobol")


def test_an_installed_package_adds_a_language_through_its_entry_point(monkeypatch):
    points = [EntryPoint("borrowed", "evolve.lang.triton:LANGUAGE", lang.ENTRY_POINTS),
              EntryPoint("broken", "evolve.lang:DEFAULT", lang.ENTRY_POINTS)]
    monkeypatch.setattr(lang, "_entry_points", lambda: points)
    assert {"borrowed", "broken", "triton"} <= set(lang.names())
    assert lang.get("borrowed") is lang.get("triton")
    with pytest.raises(lang.UnknownLanguage, match="is not an evolve.lang.Language"):
        lang.get("broken")


@pytest.mark.parametrize("name", ["triton", "cutedsl", "tilelang"])
def test_docs_carry_each_language_rule_table(name):
    marker = "contract table" if name == "triton" else f"{name} contract table"
    page = (ROOT / "docs" / "languages.md").read_text()
    block = page.split(f"<!-- {marker} -->")[1].split(f"<!-- end of {marker} -->")[0]
    assert block.strip() == lang.get(name).rule_table(), \
        f"docs/languages.md's {name} rule table is stale: paste `python -m evolve.lang.{name}`"


@pytest.fixture
def folder(tmp_path):
    target = tmp_path / "mini"
    shutil.copytree(MINI, target)
    return target


def _languages(folder: Path, line: str) -> Path:
    toml = folder / "problem.toml"
    toml.write_text(line + "\n" + toml.read_text())
    return folder


def test_a_problem_accepts_triton_unless_it_names_its_languages(folder):
    assert load_problem(folder).languages == ("triton",)
    assert load_problem(_languages(folder, 'languages = ["triton"]')).languages == ("triton",)


@pytest.mark.parametrize("line, message", [
    ('languages = ["cobol"]', "languages names 'cobol'; the languages here are cutedsl, tilelang, triton"),
    ('languages = "triton"', "languages must be a non-empty list"),
    ("languages = []", "languages must be a non-empty list"),
])
def test_a_problem_naming_no_language_evolve_has_is_refused(folder, line, message):
    with pytest.raises(ProblemError, match=message):
        load_problem(_languages(folder, line))


def test_the_load_rung_refuses_a_language_the_problem_does_not_accept(folder, monkeypatch):
    monkeypatch.setattr(lang, "BUILT_IN", {**lang.BUILT_IN, "other": "evolve.lang.triton"})
    problem = _languages(folder, 'languages = ["other"]')
    verdict = evaluate(SEED, problem, EvalOptions(device="cpu", language="triton"))
    load = verdict.rung("load")
    assert load.status == "failed" and "accepts candidates in other, not triton" in load.reason
    assert not verdict.setup  # refused before any process started


def test_evolve_eval_and_run_say_which_languages_there_are(folder):
    runner = CliRunner()
    result = runner.invoke(cli, ["eval", str(SEED), str(folder), "--language", "cobol"])
    assert result.exit_code == 2 and "--language: no candidate language 'cobol'" in result.output
    result = runner.invoke(cli, ["run", str(folder), "--language", "cobol", "--device", "cpu"])
    assert result.exit_code == 2 and "no candidate language 'cobol'" in result.output


INSTALLED = '''from dataclasses import replace

from evolve.lang import get

# Triton's own parts under other names, as a language that has no CPU interpreter, and one that has nothing without
# a GPU, would declare them
COMPILE_ONLY = replace(get("triton"), name="triton-sm90", without_gpu="compile")
GPU_ONLY = replace(get("triton"), name="triton-gpu-only", without_gpu="none")
'''


@pytest.fixture
def installed(tmp_path, monkeypatch):
    """A package installed the way pip lays one out (a module and its dist-info with entry points), on the path of
    this process and of every process an evaluation starts."""
    site = tmp_path / "site"
    (site / "evolve_test_languages").mkdir(parents=True)
    (site / "evolve_test_languages" / "__init__.py").write_text(INSTALLED)
    info = site / "evolve_test_languages-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: evolve-test-languages\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[evolve.languages]\ntriton-sm90 = evolve_test_languages:COMPILE_ONLY\n"
                                           "triton-gpu-only = evolve_test_languages:GPU_ONLY\n")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("PYTHONPATH", str(site))
    return site


def test_a_language_without_an_interpreter_gets_the_compile_rung_only_on_a_cpu(folder, installed, tmp_path):
    """Which rungs run without a GPU is the language's to say (Language.without_gpu): one that can only compile
    loads and compiles for sm_90 in the compile-only runner, and the rungs that need its kernels to run are skipped
    with the reason; nothing can pass that way."""
    _languages(folder, 'languages = ["triton", "triton-sm90", "triton-gpu-only"]')
    assert {"triton-sm90", "triton-gpu-only"} <= set(lang.names())
    options = EvalOptions(device="cpu", language="triton-sm90", fork_server=False, cache_dir=str(tmp_path / "cache"))
    verdict = evaluate(SEED, folder, options)
    status = {r.name: r.status for r in verdict.rungs}
    assert status == {"load": "ok", "compile": "ok", "run": "skipped", "correctness": "skipped",
                      "benchmark": "skipped", "roofline": "skipped"}, [(r.name, r.reason) for r in verdict.rungs]
    assert verdict.rung("compile").metrics["kernels"]  # really compiled, in the runner the language named
    assert "triton-sm90 has no CPU interpreter" in verdict.rung("run").reason
    assert all(verdict.rung(name).reason == "no GPU: not run (the run rung says why)"
               for name in ("correctness", "benchmark", "roofline"))
    assert not verdict.ok and verdict.failure is None and verdict.device == "cpu (compile only)"


def test_a_language_with_nothing_to_do_without_a_gpu_starts_no_process_on_a_cpu(folder, installed, tmp_path):
    _languages(folder, 'languages = ["triton", "triton-gpu-only"]')
    options = EvalOptions(device="cpu", language="triton-gpu-only", cache_dir=str(tmp_path / "cache"))
    verdict = evaluate(SEED, folder, options)
    assert [r.status for r in verdict.rungs] == ["skipped"] * 6
    assert "triton-gpu-only kernels can be neither run nor compiled without one" in verdict.rung("load").reason
    assert verdict.rung("roofline").reason == "no GPU: not run (the load rung says why)"
    assert not verdict.ok and verdict.failure is None and verdict.setup == ()


def test_a_problem_that_names_its_languages_has_no_unknown_key(folder):
    """`languages` is a key of problem.toml: the commands' check of misspelt keys knows it."""
    from evolve.problems import toml_key_faults

    assert toml_key_faults(_languages(folder, 'languages = ["triton"]')) == []
    assert toml_key_faults(_languages(folder, 'language = ["triton"]'))  # the misspelling is still caught
