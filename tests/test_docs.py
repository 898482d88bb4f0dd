"""Docs that fail when stale: README and docs/ name every command, docs/cli.md is what click prints, the quickstart is
the one CI runs, and the links and paths the docs name exist."""
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from evolve.cli import cli

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
DOCS = ROOT / "docs"
CLI_MD = DOCS / "cli.md"
# The pages people write (docs/cli.md is generated, so it cannot show that a command is documented).
WRITTEN = {"README.md": README} | {f"docs/{p.name}": p.read_text() for p in sorted(DOCS.glob("*.md")) if p != CLI_MD}
EVERY_PAGE = WRITTEN | {"docs/cli.md": CLI_MD.read_text()}


def _cli_reference():
    spec = importlib.util.spec_from_file_location("docs_cli", DOCS / "cli.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_command_has_help_and_is_documented():
    runner = CliRunner()
    written = "\n".join(WRITTEN.values())
    for name, command in cli.commands.items():
        assert command.help and len(command.help) > 40, name
        result = runner.invoke(cli, [name, "--help"])
        assert result.exit_code == 0 and "Usage" in result.output
        assert f"evolve {name}" in written, f"neither README nor docs/ mentions 'evolve {name}'"
    for name in ("run", "eval", "best", "leaderboard", "bench", "init", "check-problem"):
        assert f"`evolve {name}`" in README, f"README's next steps do not name 'evolve {name}'"


def test_cli_reference_is_current():
    """docs/cli.md is every command's --help as click renders it; `python docs/cli.py` writes it."""
    expected = _cli_reference().render()
    assert CLI_MD.read_text() == expected, "docs/cli.md is stale: run `python docs/cli.py`"
    for command in cli.commands.values():
        for param in command.params:
            for opt in param.opts if isinstance(param, click.Option) else ():
                assert opt in expected, f"docs/cli.md does not show {command.name} {opt}"


def _quickstart():
    block = README.split("## Quickstart", 1)[1].split("```", 2)[1]
    return [line for line in block.splitlines()[1:] if line.strip() and not line.startswith("#")]


def test_readme_quickstart_has_two_commands():
    commands = _quickstart()
    assert len(commands) == 2, commands
    assert "evolve run problems/softmax" in commands[0]
    assert "pytest" in commands[1]


def test_ci_runs_the_readme_test_command_on_the_same_torch():
    """.ci/run installs the torch the quickstart installs, then runs the README's test command as it is written."""
    ci = (ROOT / ".ci" / "run").read_text()
    install, test = _quickstart()
    assert test in ci.splitlines(), f".ci/run does not run the README's test command: {test}"
    pins = re.findall(r"torch==[\w.+]+", ci)
    assert pins and all(pin in install for pin in pins), (pins, install)
    assert "--index-url https://download.pytorch.org/whl/cpu" in install  # no multi-GB CUDA build without a GPU


def _slug(heading: str) -> str:
    """The anchor GitHub gives a heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(text: str) -> set:
    text = re.sub(r"(?ms)^```.*?^```", "", text)
    return {_slug(m) for m in re.findall(r"(?m)^#{1,6} (.+)$", text)}


def test_links_between_pages_resolve():
    for page, text in EVERY_PAGE.items():
        base = (ROOT / page).parent
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            file = (base / path).resolve() if path else ROOT / page
            assert file.exists(), f"{page} links to {target}, which does not exist"
            if anchor:
                assert anchor in _anchors(file.read_text()), f"{page} links to {target}: no such heading"


def test_every_doc_is_linked_from_readme():
    for path in sorted(DOCS.glob("*.md")):
        assert f"](docs/{path.name})" in README, f"README does not link docs/{path.name}"


def test_paths_the_docs_name_exist():
    """A file or folder of the repository named in backquotes (`evolve/compose.py`, `prompts/*.j2`) is there."""
    tops = ("evolve/", "benchmarks/", "tests/", "prompts/", "problems/", "context/", "leaderboard/", "docs/", ".ci/")
    for page, text in WRITTEN.items():
        for name in re.findall(r"`([^`\s<>]+)`", text):
            if not name.startswith(tops):
                continue
            found = list(ROOT.glob(name.rstrip("/"))) if "*" in name else [ROOT / name]
            assert found and all(p.exists() for p in found), f"{page} names {name}, which does not exist"
    for name in re.findall(r"`([\w/]+\.py)`", WRITTEN["docs/code.md"]):  # the code map names files by their own names
        if not name.startswith(tops):
            assert list(ROOT.glob(f"evolve/**/{name}")), f"docs/code.md names {name}, which is not in evolve/"


def test_problem_notes_stand_alone():
    """A model reads notes.md with nothing else: no path outside the problem's repository may appear in it."""
    outside = re.compile(r"(?<![\w.])(/(?:work|home|root|tmp|Users|mnt)/\S+|\.\./\S+)")
    notes = sorted((ROOT / "problems").glob("*/notes.md"))
    assert notes
    for path in notes:
        found = outside.findall(path.read_text())
        assert not found, f"{path.relative_to(ROOT)} cites {found}"


@pytest.mark.slow
def test_the_python_api_example_runs_as_written(tmp_path):
    """docs/python-api.md's first example, run as written from a folder with the repository's problems: the lines it
    prints start as the page shows them."""
    page = (DOCS / "python-api.md").read_text()
    code = page.split("```python\n", 1)[1].split("```", 1)[0]
    shown = page.split("What it printed", 1)[1].split("```\n", 1)[1].split("```", 1)[0].splitlines()
    (tmp_path / "problems").symlink_to(ROOT / "problems")
    (tmp_path / "example.py").write_text(code)
    done = subprocess.run([sys.executable, "example.py"], cwd=tmp_path, capture_output=True, text=True, timeout=900,
                          env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"})
    assert done.returncode == 0, done.stderr[-3000:]
    printed = done.stdout.splitlines()
    assert [line.split(":")[0] for line in printed] == ["verdict", "run", "best", "board"], done.stdout
    assert printed[0] == shown[0] and printed[3] == shown[3]  # the ladder's rungs, the leaderboard's row
    assert printed[1].startswith("run: --max-candidates 2 evaluated | 2 evaluated, best #")
    assert printed[2].split()[-1] == "True"  # the best's archived verdict passed
