"""Write docs/cli.md, the command reference, from the click commands themselves: `python docs/cli.py`.

tests/test_docs.py renders the same text in memory and fails when docs/cli.md differs from it."""
from __future__ import annotations

import sys
from pathlib import Path

import click

WIDTH = 100  # fixed, so the text does not depend on the terminal that renders it
OUT = Path(__file__).resolve().with_name("cli.md")


def _help(command: click.Command, name: str, parent: click.Context | None) -> tuple[str, click.Context]:
    settings = {**command.context_settings, "terminal_width": WIDTH, "max_content_width": WIDTH}
    ctx = click.Context(command, info_name=name, parent=parent, **settings)
    return command.get_help(ctx), ctx


def _sections(command: click.Command, path: list[str], parent: click.Context | None) -> list[str]:
    text, ctx = _help(command, path[-1], parent)
    level = "#" * max(2, len(path))
    out = [f"{level} `{' '.join(path)}`\n", "```\n" + text.rstrip() + "\n```\n"]
    if isinstance(command, click.Group):
        for sub in command.list_commands(ctx):
            out += _sections(command.get_command(ctx, sub), path + [sub], ctx)
    return out


def render() -> str:
    from evolve.cli import cli

    head = ("# Command reference\n\n"
            "Every command's `--help`, generated from the commands themselves by `python docs/cli.py`; "
            "do not edit by hand.\n"
            "`tests/test_docs.py` fails when this file is stale.\n")
    return "\n".join([head] + _sections(cli, ["evolve"], None))


if __name__ == "__main__":
    sys.path.insert(0, str(OUT.parents[1]))
    OUT.write_text(render())
    print(f"wrote {OUT}")
