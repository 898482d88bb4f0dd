"""The `evolve` command. Each subcommand parses, calls one library function, and prints."""
from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import click

from . import __version__


def _fail(message: str, code: int = 2):
    click.echo(f"error: {message}", err=True)
    sys.exit(code)


def _json_safe(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return value


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="evolve")
def cli():
    """evolve: LLMs write Triton kernels; a sealed rung ladder (load, compile, run, correctness, benchmark,
    roofline) decides which are correct and how close to the hardware's limit they run."""


@cli.command("eval")
@click.argument("candidate", type=click.Path(exists=True, dir_okay=False))
@click.argument("problem", type=click.Path(exists=True, file_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object (the verdict) on stdout, nothing else.")
@click.option("--dump", "dump_dir", type=click.Path(file_okay=False),
              help="Also write each kernel's TTIR, TTGIR, LLIR, PTX, cubin and SASS into this folder.")
@click.option("--device", type=click.Choice(["auto", "cuda", "cpu"]), default="auto", show_default=True,
              help="cuda: time on the GPU; cpu: compile for sm_90 and run under the Triton interpreter.")
@click.option("--timeout", "timeout_s", type=float, default=600.0, show_default=True,
              help="Wall-clock limit in seconds for each sandboxed child; it is killed with its process group.")
@click.option("--max-memory", "max_rss_gb", type=float, default=32.0, show_default=True,
              help="Host memory limit of the child in GB.")
@click.option("--cache-dir", type=click.Path(file_okay=False), default=None,
              help="Where measured device peaks and baseline timings are cached [default: ~/.cache/evolve].")
def eval_command(candidate, problem, as_json, dump_dir, device, timeout_s, max_rss_gb, cache_dir):
    """Run CANDIDATE (a .py file defining custom_kernel) up the rung ladder of PROBLEM (a problem folder).

    Exit code 0 only if every rung passed; 1 if a rung failed; 2 for bad input.
    """
    from .harness import EvalOptions, ProblemError, evaluate
    from .render import ladder_lines, shape_table

    options = EvalOptions(device=device, timeout_s=timeout_s, max_rss_gb=max_rss_gb, dump_dir=dump_dir,
                          **({"cache_dir": cache_dir} if cache_dir else {}))
    printed = []

    def live(rung):
        if not as_json and rung["name"] not in ("benchmark", "roofline"):
            printed.append(rung["name"])
            click.echo(ladder_lines({"rungs": [rung], "shapes": []})[0])

    try:
        verdict = evaluate(candidate, problem, options, on_rung=live)
    except ProblemError as exc:
        _fail(str(exc))
    except KeyboardInterrupt:
        _fail("interrupted", 130)
    if as_json:
        click.echo(json.dumps(_json_safe(verdict), indent=1))
    else:
        for rung, line in zip(verdict["rungs"], ladder_lines(verdict)):
            if rung["name"] not in printed:
                click.echo(line)
        for line in shape_table(verdict):
            click.echo(line)
        if dump_dir and any(r["name"] == "compile" and r["status"] == "ok" for r in verdict["rungs"]):
            click.echo(f"compiler artifacts written to {Path(dump_dir).resolve()}")
    sys.exit(0 if verdict["ok"] else 1)


def main():
    cli()


if __name__ == "__main__":
    main()
