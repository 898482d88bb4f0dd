"""Docs that fail when stale: every command has help and appears in the README."""
from pathlib import Path

from click.testing import CliRunner

from evolve.cli import cli

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def test_every_command_has_help_and_is_documented():
    runner = CliRunner()
    for name, command in cli.commands.items():
        assert command.help and len(command.help) > 40, name
        result = runner.invoke(cli, [name, "--help"])
        assert result.exit_code == 0 and "Usage" in result.output
        assert f"evolve {name}" in README, f"README does not mention 'evolve {name}'"
        for param in command.params:
            for opt in getattr(param, "opts", []):
                if opt.startswith("--") and opt != "--help":
                    assert opt in README, f"README does not mention {name} {opt}"


def test_readme_quickstart_has_two_commands():
    block = README.split("## Quickstart", 1)[1].split("```", 2)[1]
    commands = [line for line in block.splitlines()[1:] if line.strip() and not line.startswith("#")]
    assert len(commands) == 2, commands
    assert "evolve run problems/softmax" in commands[0]
    assert "pytest" in commands[1]


def test_problem_notes_stand_alone():
    """A model reads notes.md with nothing else: no path outside the problem's repository may appear in it."""
    import re

    outside = re.compile(r"(?<![\w.])(/(?:work|home|root|tmp|Users|mnt)/\S+|\.\./\S+)")
    notes = sorted((ROOT / "problems").glob("*/notes.md"))
    assert notes
    for path in notes:
        found = outside.findall(path.read_text())
        assert not found, f"{path.relative_to(ROOT)} cites {found}"
