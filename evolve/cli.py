"""The `evolve` command. Each subcommand parses, calls one library function, and prints."""
from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import click

from . import __version__
from . import defaults as D


def _fail(message: str, code: int = 2):
    click.echo(f"error: {message}", err=True)
    sys.exit(code)


class Terminated(KeyboardInterrupt):
    """SIGTERM (a service manager, a job scheduler, `timeout`): the command stops as on Ctrl-C, and exits 143."""


_STOPPING: list = []  # the signal that began the stop (SIGINT or SIGTERM), once one came


def _on_stop_signal(signum, frame):
    """The first Ctrl-C or SIGTERM stops the command; any after it, until the command returns, is ignored, so the
    stop it began is not cut short halfway (a second signal raised inside a lock's release leaves the lock broken,
    and the run unclosed)."""
    import signal

    if _STOPPING:
        return
    _STOPPING.append(signum)
    raise Terminated("SIGTERM") if signum == signal.SIGTERM else KeyboardInterrupt()


def _stop_on_signals() -> None:
    """While this command runs, Ctrl-C and SIGTERM stop it once and cleanly (the run closed in the archive). When it
    returns, the handlers before are put back; where a signal stopped it, a further one ends the process at once
    instead (its archive is closed by then; exit waits for a model's call in flight, which that ends)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return  # only the main thread sets handlers (a command called from a test's thread)
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    _STOPPING.clear()
    for sig in before:
        signal.signal(sig, _on_stop_signal)

    def returned():
        for sig, handler in before.items():
            signal.signal(sig, _exit_now if _STOPPING else handler)

    ctx = click.get_current_context(silent=True)
    if ctx is not None:
        ctx.call_on_close(returned)


def _exit_now(signum, frame):
    import os

    os._exit(_interrupted_code())


def _interrupted_code() -> int:
    """The exit code of a stopped command: 143 after SIGTERM, 130 after Ctrl-C (the shells' conventions)."""
    import signal

    return 143 if _STOPPING[:1] == [signal.SIGTERM] else 130


def _say_isolation(card: bool) -> None:
    """What keeps evaluations apart that this machine lacks, each with what it leaves open (harness/parent/isolation.py;
    on a card, harness/parent/device_share.py)."""
    from .harness.parent import device_share, isolation

    gaps = isolation.here().gaps() + ([device_share.gap()] if card else [])
    for gap in filter(None, gaps):
        click.echo(f"isolation: {gap}", err=True)


def _check_keys(problem) -> None:
    """Refuse a problem.toml with a key no table holds (a misspelt `call =` under [forbid] would forbid nothing)."""
    from .problems import toml_key_faults

    faults = toml_key_faults(problem)
    if faults:
        _fail("\n".join(faults))


def _json_safe(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return value


class _Sectioned(click.Command):
    """A command whose --help lists its options under headings, in the order given: the few a newcomer needs first.
    `sections` is ((heading, (parameter name, ...)), ...), "help" naming -h/--help; an option no heading names goes
    under "Other options".
    Every heading's first column has the same width, so the sections read as one table."""

    def __init__(self, *args, sections=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.sections = tuple(sections)

    def format_options(self, ctx, formatter):
        help_option = self.get_help_option(ctx)
        records = {"help" if p is help_option else p.name: r for p in self.get_params(ctx)
                   if not isinstance(p, click.Argument) and (r := p.get_help_record(ctx)) is not None}
        groups = [(title, [records.pop(n) for n in names if n in records]) for title, names in self.sections]
        groups.append(("Other options", list(records.values())))
        width = min(30, max((len(term) for _, rows in groups for term, _ in rows), default=0))
        for title, rows in groups:
            if rows:
                with formatter.section(title):
                    formatter.write_dl([(term.ljust(width), text) for term, text in rows])


# evolve run's options, as its --help groups them
RUN_SECTIONS = (
    ("Start here", ("models", "api_base", "budget", "max_candidates", "device", "language", "db", "resume", "help")),
    ("When to stop", ("max_cost", "target", "stagnation")),
    ("Search", ("seed", "islands", "repairs", "tune_share", "diversity", "compose_share", "tune_trials", "lessons")),
    ("Model calls and context", ("model_choice", "concurrency", "llm_timeout", "llm_retries", "tools",
                                 "tool_rounds", "context_dirs", "agent", "agent_models", "agent_rounds", "agent_tokens",
                                 "agent_dollars", "agent_seconds")),
    ("Evaluation", ("timeout_s", "cache_dir", "artifacts", "fair_window", "race")),
    ("GPUs and clusters", ("gpus", "per_gpu", "cluster", "cluster_lanes")),
    ("Profiling and re-timing (GPU only)", ("profile_top", "profile_every", "profile_as_root", "retime_top",
                                           "retime_rounds")),
)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="evolve")
def cli():
    """evolve: LLMs write Triton kernels; a sealed rung ladder (load, compile, run, correctness, benchmark,
    roofline) decides which are correct and how close to the hardware's limit they run."""


def _language_of_file(candidate, problem) -> str | None:
    """Without --language: the language of the problem's whose package the candidate imports (a CuTeDSL file
    imports cutlass), said on stderr; None (the problem's first) where none or several are."""
    from .harness import ProblemError, load_problem
    from .lang import named_by_imports

    try:
        accepted = load_problem(problem).languages
        source = Path(candidate).read_text()
    except (ProblemError, OSError, UnicodeDecodeError):
        return None  # evaluate says what is wrong with either
    found = named_by_imports(source, accepted)
    if found and found != accepted[0]:
        click.echo(f"{Path(candidate).name} imports {found}'s package: evaluated as {found} (--language)", err=True)
        return found
    return None


def _timeout_for(problem, timeout_s: float | None) -> float:
    """--timeout as given, else the default for the problem's inputs (said on stderr where it was raised)."""
    from .api import SetupError, load, timeout_for

    try:
        timeout_s, note = timeout_for(load(problem), timeout_s)
    except SetupError as exc:
        _fail(str(exc))
    if note:
        click.echo(note, err=True)
    return timeout_s


def _check_language(language: str | None, problem=None) -> None:
    """--language names a language evolve has, one the problem accepts, and one installed here (exit 2
    otherwise). Without --language, the problem's first language must be installed."""
    from .api import SetupError, check_language

    try:
        check_language(language, problem)
    except SetupError as exc:
        _fail(str(exc))


@cli.command("eval")
@click.argument("candidate", type=click.Path(exists=True, dir_okay=False))
@click.argument("problem", type=click.Path(exists=True))
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object (the verdict) on stdout, nothing else.")
@click.option("--dump", "dump_dir", type=click.Path(file_okay=False),
              help="Also write each kernel's TTIR, TTGIR, LLIR, PTX, cubin and SASS into this folder.")
@click.option("--device", type=click.Choice(["auto", "cuda", "cpu"]), default="auto", show_default=True,
              help="cuda: time on the GPU; cpu: compile for sm_90a and run under the Triton interpreter.")
@click.option("--timeout", "timeout_s", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Wall-clock limit in seconds for one evaluation; its processes are killed with their groups "
                   f"[default: {D.EVAL_TIMEOUT_S:g}; {D.LARGE_INPUT_TIMEOUT_S:g} for inputs of a gigabyte or more].")
@click.option("--max-memory", "max_rss_gb", type=click.FloatRange(min=0, min_open=True), default=D.MAX_MEMORY_GB,
              show_default=True,
              help="Host memory limit in GB of all the candidate's processes hold (the kernel's limit on their "
                   "cgroup where the machine has one).")
@click.option("--cache-dir", type=click.Path(file_okay=False), default=None,
              help="Where measured device peaks and baseline timings are cached [default: ~/.cache/evolve].")
@click.option("--language", default=None, metavar="NAME",
              help="The candidate's language (triton, cutedsl, tilelang) [default: the one of the problem's whose "
                   "package the file imports, else the problem's first].")
@click.option("--stop-after", "last_rung", type=click.Choice(["compile", "correctness", "benchmark"]),
              default="benchmark", show_default=True,
              help="The last rung to climb; the rest are skipped, and the exit code is 1 (a check, not a verdict).")
@click.option("--case", "cases", multiple=True, metavar="LABEL",
              help="Time only this benchmark case (repeatable), e.g. 'fp32 4096x4096': its figures are advice, "
                   "and no fitness is given.")
def eval_command(candidate, problem, as_json, dump_dir, device, timeout_s, max_rss_gb, cache_dir, language,
                 last_rung, cases):
    """Run CANDIDATE (a .py file defining custom_kernel) up the rung ladder of PROBLEM (an evolve problem folder, a
    GPU MODE task folder or a KernelBench .py file).

    Exit code 0 when no rung failed and the candidate was benchmarked (without a GPU the roofline rung is skipped,
    and a language with no CPU interpreter is only compiled, which exits 1); 1 otherwise; 2 for bad input.
    """
    _stop_on_signals()
    _check_keys(problem)
    from .harness import EvalOptions, ProblemError, evaluate
    from .harness.parent.ladder import gpu_available
    from .render import ladder_lines, rung_line, shape_table

    _check_language(language)
    language = language or _language_of_file(candidate, problem)
    timeout_s = _timeout_for(problem, timeout_s)
    options = EvalOptions(device=device, timeout_s=timeout_s, max_rss_gb=max_rss_gb, dump_dir=dump_dir,
                          language=language, last_rung=last_rung, bench_cases=tuple(cases),
                          **({"cache_dir": cache_dir} if cache_dir else {}))
    printed = []
    _say_isolation(device != "cpu" and gpu_available())

    def live(rung):
        if not as_json and rung.name not in ("benchmark", "roofline"):
            printed.append(rung.name)
            click.echo(rung_line(rung))

    try:
        verdict = evaluate(candidate, problem, options, on_rung=live)
    except ProblemError as exc:
        _fail(str(exc))
    except KeyboardInterrupt:
        _fail("interrupted", _interrupted_code())
    if as_json:
        click.echo(json.dumps(_json_safe(verdict.to_json()), indent=1))
    else:
        for rung, line in zip(verdict.rungs, ladder_lines(verdict)):
            if rung.name not in printed:
                click.echo(line)
        for line in shape_table(verdict):
            click.echo(line)
        if dump_dir and verdict.rung("compile").ok:
            click.echo(f"compiler artifacts written to {Path(dump_dir).resolve()}")
    sys.exit(0 if verdict.ok else 1)


class _Duration(click.ParamType):
    """--budget: '90m', '8h', '45s' -> seconds."""
    name = "DURATION"

    def convert(self, value, param, ctx):
        from .config import parse_duration

        if isinstance(value, (int, float)):
            return float(value)
        try:
            return parse_duration(value)
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


def _agent_bounds(f):
    """evolve run's and evolve bench's bounds on one agent session."""
    for option in reversed([
            click.option("--agent-rounds", type=click.IntRange(min=1), default=D.AGENT_ROUNDS, show_default=True,
                         help="With --agent or --agent-model: model calls that may ask for tools in one session."),
            click.option("--agent-tokens", type=click.IntRange(min=1), default=D.AGENT_TOKENS, show_default=True,
                         help="With --agent or --agent-model: tokens one session may use (prompt and reply, every "
                              "round)."),
            click.option("--agent-dollars", type=click.FloatRange(min=0, min_open=True), default=D.AGENT_DOLLARS,
                         show_default=True, help="With --agent or --agent-model: dollars one session may cost."),
            click.option("--agent-time", "agent_seconds", type=_Duration(), default=f"{D.AGENT_SECONDS:g}s",
                         show_default=True, help="With --agent or --agent-model: wall time one session may take, "
                                                 "model calls and tools together ('20m').")]):
        f = option(f)
    return f


class _PerGpu(click.ParamType):
    """--per-gpu: 'auto' or a count of 1 to 16."""
    name = "N|auto"

    def get_metavar(self, *args, **kwargs):
        return "N|auto"

    def convert(self, value, param, ctx):
        if str(value).strip().lower() == "auto":
            return "auto"
        try:
            count = int(value)
        except ValueError:
            count = 0
        if not 1 <= count <= 16:
            self.fail(f"{value!r}: give 'auto' or a number of evaluations from 1 to 16", param, ctx)
        return count


class _Model(click.ParamType):
    """--model (and --agent-model, agent=True): 'provider/name' or 'provider/name=weight' -> ModelSpec."""
    name = "NAME[=WEIGHT]"

    def __init__(self, agent: bool = False):
        self.agent = agent

    def convert(self, value, param, ctx):
        from .proposer import ModelSpec, parse_models

        if isinstance(value, ModelSpec):
            return value
        try:
            return parse_models([value], agent=self.agent)[0]
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


def _all_models(models, agent_models, agent: bool) -> tuple:
    """--model's specs (every one an agent with --agent) and then --agent-model's."""
    from dataclasses import replace

    return tuple(replace(m, agent=True) if agent else m for m in models) + tuple(agent_models)


def _db_option(f):
    return click.option("--db", default=D.DB, show_default=True, type=click.Path(dir_okay=False),
                        help="The SQLite archive.")(f)


def _open_archive(db, must_exist=True, read_only=False):
    """read_only: the command only reads, so an archive this process may not write is read all the same."""
    from .archive import Archive, ArchiveError

    if must_exist and not Path(db).exists():
        _fail(f"{db} does not exist: start a run with `evolve run PROBLEM` or pass --db PATH")
    try:
        return Archive(db, read_only=read_only)
    except ArchiveError as exc:
        _fail(str(exc))


@cli.command("run", cls=_Sectioned, sections=RUN_SECTIONS)
@click.argument("problem", type=click.Path(exists=True))
@click.option("--model", "models", multiple=True, type=_Model(),
              help="A litellm model string; repeat for an ensemble, with optional weights (name=0.3). Keys come from "
                   "the provider's usual environment variable (ANTHROPIC_API_KEY, OPENAI_API_KEY, ...). Without a "
                   "model the run uses its embedded default: the knob tuner over the seeds and archived kernels.")
@click.option("--api-base", help="Base URL of an OpenAI-compatible server; use with --model openai/<name>.")
@click.option("--model-choice", type=click.Choice(["bandit", "weights"]), default=D.MODEL_CHOICE, show_default=True,
              help="With several models, how each proposal's model is chosen: bandit gives the budget to the models "
                   "whose proposals gain the most fitness per dollar (per second where a model has no price), the "
                   "weights as its prior, and keeps trying the others; weights picks at random by weight. evolve "
                   "status says how the budget was split and why.")
@click.option("--max-candidates", type=click.IntRange(min=1), help="Stop after this many evaluated candidates.")
@click.option("--budget", type=_Duration(),
              help="Stop after this much wall time: 90m, 8h, 45s [default without a GPU, when no other "
                   "limit is given: 5m; with a GPU: none].")
@click.option("--max-cost", type=click.FloatRange(min=0, min_open=True),
              help="Stop once LLM spend reaches this many US dollars.")
@click.option("--target", type=click.FloatRange(min=0, max=1.05, min_open=True), default=D.TARGET, show_default=True,
              help="Stop when the best fitness reaches this fraction of the roofline (GPU only).")
@_db_option
@click.option("--resume", is_flag=True, help="Continue the last run of this problem (after a crash or Ctrl-C).")
@click.option("--seed", type=int, default=D.SEED, show_default=True, help="Seed of the search's random choices.")
@click.option("--islands", type=click.IntRange(min=1), default=D.ISLANDS, show_default=True,
              help="Number of islands in the population.")
@click.option("--repairs", type=click.IntRange(min=0), default=D.REPAIRS, show_default=True,
              help="Load/compile failures sent back to the model before a candidate counts as dead.")
@click.option("--stagnation", type=click.IntRange(min=1), default=D.STAGNATION, show_default=True,
              help="Stop after this many evaluated candidates without an improvement.")
@click.option("--concurrency", type=click.IntRange(min=1), default=D.CONCURRENCY, show_default=True,
              help="Most LLM calls in flight at once.")
@click.option("--tune-share", type=click.FloatRange(0, 1), default=D.TUNE_SHARE, show_default=True,
              help="With a model configured, the share of steps given to the knob tuner instead of the model.")
@click.option("--diversity", type=click.FloatRange(0, 1), default=D.DIVERSITY, show_default=True,
              help="The share of parents drawn across the diversity archive's cells (structure family, tile size, "
                   "registers) rather than from the top; 0: from the top only, as before the archive.")
@click.option("--compose-share", type=click.FloatRange(0, 1), default=D.COMPOSE_SHARE, show_default=True,
              help="With a model configured, the share of steps that look for a shape-dispatch composite (one file "
                   "that calls, per shape regime, the archived kernel fastest there); one is evaluated only when its "
                   "predicted fitness beats the best by more than the timing noise. Without a model every step looks.")
@click.option("--tune-trials", type=click.IntRange(min=1),
              help="Knob settings the tuner tries per program structure [default: 6 with a model; 64 without one, "
                   "where the tuner is the whole search].")
@click.option("--llm-timeout", type=click.FloatRange(min=0, min_open=True), default=D.LLM_TIMEOUT_S, show_default=True,
              help="Seconds to wait for one LLM reply before retrying.")
@click.option("--llm-retries", type=click.IntRange(min=0), default=D.LLM_RETRIES, show_default=True,
              help="Retries of an LLM call on rate limits, 5xx errors and timeouts (exponential backoff).")
@click.option("--device", type=click.Choice(["auto", "cuda", "cpu"]), default="auto", show_default=True,
              help="Where candidates are evaluated (cpu: sm_90a compile + Triton interpreter).")
@click.option("--timeout", "timeout_s", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Wall-clock limit in seconds of each evaluation; a candidate that hangs costs this much. An honest "
                   "softmax evaluation takes about 11-18 s on an H200 (40 s the first time on a device) and 10-30 s "
                   f"under the CPU interpreter on 2 cores [default: {D.EVAL_TIMEOUT_S:g}; "
                   f"{D.LARGE_INPUT_TIMEOUT_S:g} for inputs of a gigabyte or more].")
@click.option("--cache-dir", type=click.Path(file_okay=False), default=None,
              help="Where measured device peaks and baseline timings are cached [default: ~/.cache/evolve].")
@click.option("--race/--no-race", default=True, show_default=True,
              help="On a GPU: time a candidate's benchmark cases shortest first and stop once it can no longer reach "
                   "the best (its best possible fitness below the best's less its noise and 5%); such a kernel is "
                   "archived correct with a partial figure and no fitness. --no-race times every case of every one.")
@click.option("--artifacts/--no-artifacts", default=True, show_default=True,
              help="Keep each candidate's TTIR, TTGIR, LLIR, PTX and cubin in the archive (evolve show --asm; its SASS "
                   "is disassembled from the cubin when read, outside the evaluation).")
@click.option("--profile", "profile_top", type=click.IntRange(min=0), default=D.PROFILE_TOP, show_default=True,
              help="On a GPU with Nsight Compute (ncu): profile the best N correct candidates not yet profiled, "
                   "every --profile-every evaluations and at the end, on one benchmark case; the summary goes to the "
                   "archive and the next prompts. 0: off. Never changes a fitness.")
@click.option("--profile-every", type=click.IntRange(min=1), default=D.PROFILE_EVERY, show_default=True,
              help="Evaluations between profiling rounds.")
@click.option("--context", "context_dirs", multiple=True, type=click.Path(exists=True, file_okay=False),
              metavar="DIR", help="A folder of notes or examples (a clone of a library's examples, say) added to the "
                                  "searchable context; repeatable. The project's notes for the language "
                                  "(context/<language>/) and the problem's context/ are always in it.")
@click.option("--tools", type=click.Choice(["auto", "on", "off"]), default=D.TOOLS, show_default=True,
              help="Context tools for the model (search_context, read_context, read_parent): auto gives them to "
                   "models litellm says call functions; the others get the best passages in the prompt.")
@click.option("--agent", is_flag=True,
              help="Every model is an agent: each of its proposals is a tool session in which the model compiles and "
                   "checks versions through the sealed harness, reads the notes, and submits one program, which is "
                   "then evaluated as any candidate (docs/search.md, Agent sessions).")
@click.option("--agent-model", "agent_models", multiple=True, type=_Model(agent=True),
              help="A model whose proposals are agent sessions, beside the --model ones, which stay one answer each; "
                   "repeatable, with optional weights (name=0.3) in the same ensemble: a turn asks a one-shot or an "
                   "agent model as --model-choice picks among them all. The same model may be named both ways (two "
                   "entries).")
@_agent_bounds
@click.option("--tool-rounds", type=click.IntRange(min=0), default=D.TOOL_ROUNDS, show_default=True,
              help="Model calls per proposal that may ask for tools (each is counted in tokens and cost).")
@click.option("--retime", "retime_top", type=click.IntRange(min=0), default=D.RETIME_TOP, show_default=True,
              help="On a GPU, at the end of a run: re-time the best N correct candidates against each other, "
                   "interleaved, and report each one's spread (0 or 1: not); one above the held best in every "
                   "round is reported as the run's best. Never changes a fitness.")
@click.option("--retime-rounds", type=click.IntRange(min=1), default=D.RETIME_ROUNDS, show_default=True,
              help="Rounds of --retime.")
@click.option("--profile-as-root", is_flag=True,
              help="Profile even when running as root (the profiler's child may write under /proc, which as root "
                   "reaches /proc/sys).")
@click.option("--gpus", default=None, metavar="LIST",
              help="The cards to evaluate on, one lane each, as indices of the visible cards or UUIDs: --gpus 0,1 "
                   "[default: every visible card]. No benchmark shares its card (see --per-gpu).")
@click.option("--per-gpu", type=_PerGpu(), default="auto", show_default=True,
              help="Evaluations at once on each card: their compile, run and correctness rungs overlap, and each "
                   "benchmark takes the card's timing lease, stopping the others while it times. auto: as many as "
                   "the machine allows, at most 8 (2 CPU cores, 4 GiB of host memory and 13 GiB of the card's "
                   "memory each); 1 without a GPU.")
@click.option("--fair-window", default=D.FAIR_WINDOW, show_default=True, metavar="DURATION",
              help="A GPU candidate's win over the best counts only against a figure of the best timed on the same "
                   "card within this long; otherwise the best is timed again on that card first (0: never).")
@click.option("--cluster", default=None, metavar="ADDRESS",
              help="Evaluate on a Ray cluster: 'auto' (the cluster this machine belongs to) or its address "
                   "(ray://host:10001, host:6379). One lane per GPU, each a Ray actor; this process keeps the loop and "
                   "the archive. Every node needs evolve installed and the problem folder at the same path.")
@click.option("--cluster-lanes", type=click.IntRange(min=1), default=None,
              help="Lanes on the cluster [default: one per GPU in it; with --device cpu, 1].")
@click.option("--language", default=None, metavar="NAME",
              help="The language candidates are written in (triton, cutedsl, tilelang) [default: the first the "
                   "problem accepts].")
@click.option("--lessons/--no-lessons", default=True, show_default=True,
              help="Prompts carry the lessons of earlier runs in this archive (what beat its parent, for this "
                   "problem and problems alike in kind; `evolve lessons`). The run keeps its own either way.")
def run_command(problem, models, api_base, max_candidates, budget, max_cost, target, db, resume, seed, islands,
                repairs, stagnation, concurrency, tune_share, compose_share, tune_trials, llm_timeout, llm_retries,
                device, timeout_s, cache_dir, artifacts, profile_top, profile_every, context_dirs, tools, agent,
                agent_models, agent_rounds, agent_tokens, agent_dollars, agent_seconds, tool_rounds,
                retime_top, retime_rounds, profile_as_root, gpus, per_gpu, fair_window, race, cluster, cluster_lanes,
                language, lessons, model_choice, diversity):
    """Evolve kernels for PROBLEM (an evolve problem folder, a GPU MODE task folder or a KernelBench .py file)
    unattended; every proposal and verdict goes to the archive (--db).

    Stops at --target, --max-candidates, --budget, --max-cost or after --stagnation candidates without
    improvement, and says which. Ctrl-C (or SIGTERM) stops cleanly; --resume continues.
    """
    _stop_on_signals()
    # What the arguments alone decide, before anything imports torch (a second or more)
    if cluster and gpus is not None:
        _fail("--gpus picks cards of this machine; on a cluster use --cluster-lanes N")
    if cluster_lanes and not cluster:
        _fail("--cluster-lanes needs --cluster")
    if cluster and per_gpu not in ("auto", 1):
        _fail("--per-gpu is for this machine's cards; a cluster lane is one GPU each (--cluster-lanes N)")
    from .config import parse_duration

    try:
        fair_window_s = 0.0 if fair_window.strip() in ("0", "0s", "off") else parse_duration(fair_window)
    except ValueError as exc:
        _fail(f"--fair-window: {exc}")
    models = _all_models(models, agent_models, agent)
    if models and not any(m.weight > 0 for m in models):
        _fail("every model has weight 0; give at least one a positive weight")
    # the models' keys before torch and litellm are imported (seconds each): a missing key is said at once
    from .proposer import check_models

    problems = check_models(list(models), api_base) if models else []
    if problems:
        _fail("\n".join(problems))
    from . import api
    from .archive import ArchiveError
    from .config import LLMConfig, ProfileConfig, SearchConfig
    from .harness import ProblemError
    from .progress import Progress

    try:
        plan = api.plan_run(
            problem, models=models, api_base=api_base, db=db, device=device, max_candidates=max_candidates,
            budget_s=budget, max_cost=max_cost, timeout_s=timeout_s, per_gpu=per_gpu,
            gpus=_cards(gpus, device, cluster), cluster=cluster, language=language, cache_dir=cache_dir,
            target=target, resume=resume, seed=seed, artifacts=artifacts, retime_top=retime_top,
            retime_rounds=retime_rounds, cluster_lanes=cluster_lanes, fair_window_s=fair_window_s, race=race,
            search=SearchConfig(islands=islands, repairs=repairs, stagnation=stagnation, tune_share=tune_share,
                                compose_share=compose_share, tuner_trials=tune_trials, agent=agent,
                                agent_rounds=agent_rounds, agent_tokens=agent_tokens, agent_dollars=agent_dollars,
                                agent_seconds=agent_seconds, lessons=lessons, model_choice=model_choice,
                                diversity=diversity),
            profile=ProfileConfig(top=profile_top, every=profile_every, as_root=profile_as_root),
            context_dirs=tuple(str(Path(d).resolve()) for d in context_dirs),
            llm=LLMConfig(timeout_s=llm_timeout, retries=llm_retries, concurrency=concurrency, tools=tools,
                          tool_rounds=tool_rounds))
    except api.SetupError as exc:
        _fail(str(exc))
    for note in plan.notes:
        click.echo(note, err=True)
    click.echo(("No GPU: candidates are compiled for sm_90a and run under the Triton interpreter, about 10-30 s each "
                "on 2 cores. " if plan.on_cpu else "") + "The run stops " + ", ".join(plan.limits) + ", or on Ctrl-C.",
               err=True)
    _say_isolation(not plan.on_cpu)
    if not models:
        click.echo("No model configured: running the embedded default (the problem's seeds and correct solutions, "
                   "then the knob tuner over them and the archive's kernels, and shape-dispatch composites of the "
                   "fastest per shape; no LLM is called). To add one: --model anthropic/claude-sonnet-4-5 with "
                   "ANTHROPIC_API_KEY set, or --model openai/NAME --api-base http://127.0.0.1:8000/v1.", err=True)
    archive = _open_archive(db, must_exist=resume)
    from .cluster import ClusterError
    from .search import SearchFailed

    try:
        api.check_startable(plan, archive)
        with Progress(plan.config, archive) as progress:
            summary = api.start_search(plan, archive, on_event=progress).run()
    except api.SetupError as exc:
        _fail(str(exc))
    except (ProblemError, LookupError, ArchiveError, ClusterError) as exc:
        _fail(str(exc.args[0]) if exc.args else str(exc))  # args[0]: a KeyError's str() adds quotes
    except SearchFailed as exc:
        _fail(str(exc), 1)
    _print_summary(summary, archive, problem)
    if summary.interrupted:
        sys.exit(_interrupted_code())  # a script can tell an interrupted run from a finished one


def _cards(gpus: str | None, device: str, cluster) -> tuple[str, ...] | None:
    """--gpus as card UUIDs or indexes of this machine's visible cards (exit 2 for ones that are not there)."""
    if gpus is None:
        return None
    from .harness.parent.ladder import gpu_available
    from .pipeline import parse_gpus, visible_gpus

    if device == "cpu" or (device == "auto" and not gpu_available() and not cluster):
        _fail(f"--gpus {gpus}: no GPU is visible here (or --device cpu was given)")
    try:
        cards = parse_gpus(gpus)
    except ValueError as exc:
        _fail(str(exc))
    visible = visible_gpus()
    if cards is None:
        return None
    wrong = [c for c in cards if c.isdigit() and int(c) >= len(visible)]
    if wrong:
        _fail(f"--gpus {gpus}: {len(visible)} card(s) are visible here, numbered 0 to {len(visible) - 1}")
    return tuple(visible[int(c)] if c.isdigit() else c for c in cards)


def _print_summary(summary, archive, problem):
    click.echo(f"stopped: {summary.stop_reason}")
    plural = "candidate" if summary.evaluated == 1 else "candidates"
    if summary.session_evaluated is None:
        click.echo(f"run {summary.run_id}: {summary.evaluated} {plural} evaluated, {summary.correct} correct, "
                   f"{summary.seconds / 60:.1f} min, ${summary.cost:.4f} spent")
    else:
        click.echo(f"run {summary.run_id}: {summary.evaluated} {plural} evaluated in all ({summary.session_evaluated} "
                   f"since it was resumed, in {summary.seconds / 60:.1f} min), {summary.correct} correct, "
                   f"${summary.cost:.4f} spent in all")
    best = summary.best
    for failed, audit in summary.audit_failed:
        click.echo(f"#{failed.id} ({failed.score:.3g}) is left out: {audit.line}")
    if best is None:
        click.echo("no correct kernel yet" if summary.audit is None else f"no kernel reported: {summary.audit.line}")
    else:
        kind = f"fitness {best.fitness:.3f}" if best.fitness is not None else f"cpu interpreter score {best.score:.3g}"
        seed = summary.seed_best
        versus = f" (best seed: #{seed.id} {seed.score:.3g})" if seed and seed.id != best.id else ""
        click.echo(f"best: #{best.id} {kind}{versus}")
        click.echo(f"  {_found(summary, archive)}")
        if summary.audit is not None:
            click.echo(f"  {summary.audit.line}")
        tie = summary.near_tie
        if tie is not None:
            click.echo(f"  #{tie.id} measured {tie.score:.3g}, above it by less than the timing noise: not counted as "
                       f"an improvement")
        verdict = archive.verdict(best.id)
        from .render import shape_table

        for line in shape_table(verdict) if verdict else ():
            click.echo(line)
        click.echo(f"export it with: evolve best {problem} --db {summary.db} --export best.py")
    if summary.retimed:
        from .retime import report

        rounds = max(len(r.figures) for r in summary.retimed)
        for line in report(list(summary.retimed), rounds, "fraction of roofline", summary.promoted):
            click.echo(line)
    click.echo(f"archive: {summary.db}")


PROPOSERS = (("seed", "seed"), ("solution", "correct solution"), ("tuner", "tuned setting"),
             ("composer", "shape-dispatch composite"), ("llm", "model proposal"))


def _found(summary, archive) -> str:
    """What the run searched, by kind, and what its best is against the best seed, as a speed ratio."""
    counts: dict = {}
    for cand in archive.candidates(summary.run_id):
        if cand.status == "evaluated":
            counts[cand.proposer] = counts.get(cand.proposer, 0) + 1
    kinds = [f"{counts[key]} {label}{'s' if counts[key] > 1 else ''}" for key, label in PROPOSERS if counts.get(key)]
    searched = "searched " + ", ".join(kinds) if kinds else "searched nothing new"
    best, seed = summary.best, summary.seed_best
    if seed is None or seed.score is None or best.score is None:
        return searched
    if seed.id == best.id:
        return f"{searched}; nothing beat the seed (#{seed.id})"
    ratio = best.score / seed.score  # either score is a rate (1/time, or bound/time): their ratio is a speed-up
    where = "under the interpreter" if best.fitness is None else "on the GPU"
    return f"{searched}; the best (#{best.id}, {best.proposer}) is {ratio:.2f}x as fast as the seed (#{seed.id}) " \
           f"{where}, over the timed shapes (geometric mean)"


@cli.command("bench")
@click.option("--model", "models", multiple=True, type=_Model(),
              help="A litellm model string; repeat to compare several (each gets its own cells).")
@click.option("--agent-model", "agent_models", multiple=True, type=_Model(agent=True),
              help="A model whose proposals are agent sessions (docs/search.md, Agent sessions); repeatable. Each "
                   "gets cells of its own, beside the --model ones: name a model both ways to compare it as an agent "
                   "and as one answer per proposal.")
@click.option("--agent", is_flag=True, help="Every model of the comparison (--model too) is an agent.")
@click.option("--problem", "problems", multiple=True, required=True, type=click.Path(exists=True),
              help="A problem folder (or GPU MODE folder, KernelBench file); repeat for several.")
@click.option("--budget-per-cell", "budget", required=True,
              help="What each (model, problem) cell may spend: a duration (30m, 2h), a number of evaluated "
                   "candidates (40) or LLM dollars ($2).")
@click.option("--name", default="bench", show_default=True,
              help="The comparison's name: running the same command again resumes it (finished cells are skipped).")
@click.option("--db", default=D.BENCH_DB, show_default=True, type=click.Path(dir_okay=False),
              help="The SQLite archive every cell writes to.")
@click.option("--api-base", help="Base URL of an OpenAI-compatible server; use with --model openai/<name>.")
@click.option("--seed", type=int, default=D.SEED, show_default=True, help="The search seed, the same for every cell.")
@click.option("--concurrency", type=click.IntRange(min=1), default=D.CONCURRENCY, show_default=True,
              help="Most LLM calls in flight at once.")
@click.option("--tune-share", type=click.FloatRange(0, 1), default=D.TUNE_SHARE, show_default=True,
              help="Share of steps given to the knob tuner.")
@click.option("--compose-share", type=click.FloatRange(0, 1), default=D.COMPOSE_SHARE, show_default=True,
              help="Share of steps that look for a shape-dispatch composite.")
@click.option("--llm-timeout", type=click.FloatRange(min=0, min_open=True), default=D.LLM_TIMEOUT_S, show_default=True,
              help="Seconds to wait for one LLM reply before retrying.")
@click.option("--llm-retries", type=click.IntRange(min=0), default=D.LLM_RETRIES, show_default=True,
              help="Retries of an LLM call on rate limits, 5xx errors and timeouts.")
@click.option("--device", type=click.Choice(["auto", "cuda", "cpu"]), default="auto", show_default=True,
              help="Where candidates are evaluated.")
@click.option("--timeout", "timeout_s", type=click.FloatRange(min=0, min_open=True), default=None,
              help=f"Wall-clock limit in seconds of each evaluation [default: {D.EVAL_TIMEOUT_S:g}; "
                   f"{D.LARGE_INPUT_TIMEOUT_S:g} for inputs of a gigabyte or more].")
@click.option("--per-gpu", type=_PerGpu(), default="auto", show_default=True,
              help="Evaluations at once on the card, as for evolve run (the same for every cell).")
@click.option("--language", "languages", multiple=True,
              help="A candidate language (triton, cutedsl, tilelang); repeat to compare a model's kernels in "
                   "several (each gets its own cells). Default: each problem's first.")
@_agent_bounds
def bench_command(models, agent_models, agent, problems, budget, name, db, api_base, seed, concurrency, tune_share,
                  compose_share, llm_timeout, llm_retries, device, timeout_s, per_gpu, languages, agent_rounds,
                  agent_tokens, agent_dollars, agent_seconds):
    """Compare models fairly: one search per (model, problem), each with the same budget, search seed and settings,
    on the same device, into one archive; then the leaderboard of the comparison. A model as an agent (--agent-model,
    or every one with --agent) is an entry of its own, with its own cells and leaderboard rows.

    Cells run one at a time (problem by problem, the models of a problem one after another), each isolated from the
    archive's other runs, so every model starts from the same seeds. Ctrl-C stops; the same command resumes.
    """
    _stop_on_signals()
    from . import api
    from .archive import ArchiveError
    from .bench import cell_config, cells, existing, finished, parse_budget, spent_seconds
    from .config import LLMConfig, RunConfig, SearchConfig
    from .harness import EvalOptions, ProblemError
    from .harness.parent.problem_facts import input_bytes
    from .progress import Progress
    from .proposer import check_models
    from .search import Search

    try:
        per_cell = parse_budget(budget)
    except ValueError as exc:
        _fail(str(exc))
    models = _all_models(models, agent_models, agent)
    if not models:
        _fail("give a model to compare: --model NAME or --agent-model NAME (repeatable)")
    entries = [m.label for m in models]
    if len(set(entries)) != len(entries):
        _fail("a model is named twice; give each --model (and each --agent-model) once")
    issues = check_models(list(models), api_base)  # before any problem is loaded (torch takes seconds to import)
    if issues:
        _fail("\n".join(issues))
    loaded, largest = [], None
    for path in problems:
        try:
            problem = api.load(path)
        except api.SetupError as exc:
            _fail(str(exc))
        loaded.append((path, problem.name))
        if largest is None or input_bytes(problem) > input_bytes(largest):
            largest = problem
        for language in languages:
            _check_language(language, problem)
    from .harness.parent.ladder import gpu_available
    from .pipeline import lanes_per_card

    on_card = device == "cuda" or (device == "auto" and gpu_available())
    lanes = lanes_per_card(per_gpu, on_card, None, input_bytes(largest))
    if per_gpu == "auto" and on_card and input_bytes(largest) >= D.LARGE_INPUT_BYTES:
        click.echo(f"{largest.name}: {lanes} evaluation{'s' if lanes > 1 else ''} per card at most, as its memory "
                   f"holds them with these inputs (--per-gpu changes it)", err=True)
    per_gpu, timeout_s = lanes, _timeout_for(largest.path, timeout_s)
    archive = _open_archive(db, must_exist=False)
    base = RunConfig(problem_dir=problems[0], db=db, api_base=api_base, seed=seed,
                     search=SearchConfig(tune_share=tune_share, compose_share=compose_share, agent_rounds=agent_rounds,
                                         agent_tokens=agent_tokens, agent_dollars=agent_dollars,
                                         agent_seconds=agent_seconds),
                     eval=EvalOptions(device=device, timeout_s=timeout_s, prewarm=True, per_gpu=per_gpu),
                     # cells compare what models wrote within their budget: no re-timing rounds after each
                     retime_top=0,
                     llm=LLMConfig(timeout_s=llm_timeout, retries=llm_retries, concurrency=concurrency))
    todo = cells(loaded, models, languages or (None,))
    for i, cell in enumerate(todo, 1):
        tag = cell.tag(name, per_cell)
        run = existing(archive, cell, tag)
        label = f"cell {i}/{len(todo)}: {cell.problem_name} with {cell.model.label}" + \
            (f" in {cell.language}" if cell.language else "")
        if run is not None and finished(run):
            click.echo(f"{label}: done (run {run['id']}: {run['stop_reason']})", err=True)
            continue
        config = cell_config(base, cell, tag, per_cell, run["id"] if run else None,
                             spent_seconds(archive, run["id"]) if run else 0.0)
        click.echo(f"{label}: {'resuming run ' + str(run['id']) if run else 'starting'}, budget {per_cell.text}",
                   err=True)
        proposer = api.make_proposer(config, config.eval.language or api.load(cell.problem).languages[0])
        try:
            with Progress(config, archive) as progress:
                summary = Search(config, archive, proposer, on_event=progress).run()
        except (ProblemError, LookupError, ArchiveError) as exc:
            _fail(str(exc.args[0]) if exc.args else str(exc))
        click.echo(f"{label}: stopped: {summary.stop_reason}", err=True)
        if summary.interrupted:
            click.echo("the comparison stopped; run the same command again to resume it", err=True)
            sys.exit(_interrupted_code())
    archive.close()
    from .leaderboard import board, text_lines

    for line in text_lines(board([db], problems=[n for _, n in loaded])):
        click.echo(line)


@cli.command("leaderboard")
@click.option("--db", "dbs", multiple=True, type=click.Path(dir_okay=False),
              help="An archive to read; repeat to merge several [default: runs/evolve.db and runs/bench.db, those "
                   "that exist].")
@click.option("--problem", "problems", multiple=True, help="Only this problem (its name); repeat for several.")
@click.option("--device", "devices", multiple=True, help="Only this device (as `evolve status` names it).")
@click.option("--json", "as_json", is_flag=True, help="Print the same numbers as JSON.")
@click.option("--html", "html_dir", type=click.Path(file_okay=False),
              help="Write a static site (plain files, no network) to this folder.")
def leaderboard_command(dbs, problems, devices, as_json, html_dir):
    """Compare models per problem and device from one or more archives: best fraction of roofline, speed-ups against
    torch eager and torch.compile, correct and compile-failure rates, fast_p, geometric means, tokens, dollars and
    wall time (in all, until the first correct kernel, until the best). Figures from different devices are never
    combined."""
    from .archive import ArchiveError
    from .leaderboard import board, text_lines

    paths = list(dbs) or [p for p in ("runs/evolve.db", "runs/bench.db") if Path(p).exists()]
    if not paths:
        _fail("no archive: pass --db PATH (evolve run writes runs/evolve.db, evolve bench runs/bench.db)")
    for path in paths:
        if not Path(path).exists():
            _fail(f"{path} does not exist: pass --db PATH to an archive")
    try:
        b = board(paths, problems=set(problems) or None, devices=set(devices) or None)
    except ArchiveError as exc:
        _fail(str(exc))
    if html_dir:
        from .site import write_site

        index = write_site(b, Path(html_dir), paths)
        click.echo(f"site written: {index}", err=True)
    if as_json:
        click.echo(json.dumps(_json_safe(b.to_json()), indent=1))
    elif not html_dir:
        for line in text_lines(b):
            click.echo(line)


@cli.command("status")
@_db_option
def status_command(db):
    """Runs in the archive: problem, progress, best so far, spend, and why each stopped."""
    archive = _open_archive(db, read_only=True)
    runs = archive.runs()
    if not runs:
        click.echo(f"no runs in {db}")
        return
    click.echo(f"{'run':>4}  {'problem':<12}{'started':<21}{'cands':>6}{'correct':>8}{'best':>9}{'cost $':>9}  state")
    pid = archive.running_pid()  # the evolve run holding the archive, if one is
    last_open = max((r["id"] for r in runs if not r.get("ended")), default=None)
    for r in runs:
        best = r.get("best_fitness") if r.get("best_fitness") is not None else r.get("best_score")
        best_text = f"{best:.3f}" if best is not None else "-"
        state = r.get("stop_reason") or ""
        if not r.get("ended"):
            state = (f"running (pid {pid})" if pid and r["id"] == last_open
                     else "not running and never finished (a crash or kill -9): --resume continues it")
        click.echo(f"{r['id']:>4}  {r['problem']:<12}{str(r['started'])[:19]:<21}{r['candidates']:>6}"
                   f"{r['correct']:>8}{best_text:>9}{r['cost'] or 0:>9.4f}  {state}")
    from .diversity import run_elites

    cells = run_elites(archive, runs[-1]["id"])  # the last run's diversity archive (docs/search.md, Diversity)
    click.echo(f"run {runs[-1]['id']}: {len(cells)} cells occupied across {len({c.family for c in cells})} structure "
               "families (evolve leaderboard --html draws the grid)")
    _print_splits(archive, runs)


def _print_splits(archive, runs) -> None:
    """How each run with several models split its proposals among them, and why (model_split.py)."""
    from .model_split import GAIN_NOTE, run_split, split_lines

    splits = [(r["id"], run_split(archive, r["id"])) for r in runs]
    lines = [line for run_id, split in splits if split is not None for line in split_lines(run_id, split)]
    if lines:
        click.echo("\n" + "\n".join(lines + [GAIN_NOTE]))


class _Unstored:
    """An archive open read-only, as `evolve best` hands it to the launch audit's pick: a new audit result is said,
    not stored (the next `evolve best` on a writable copy audits again)."""

    def __init__(self, archive):
        self._archive = archive
        self.launch_audits = _UnstoredAudits(archive)

    def __getattr__(self, name):
        return getattr(self._archive, name)


class _UnstoredAudits:
    """The launch audits of an archive open read-only: read from it, a new one said, not stored."""

    def __init__(self, archive):
        self._archive = archive

    def get(self, candidate_id, device=None):
        return self._archive.launch_audits.get(candidate_id, device)

    def store(self, candidate_id, device, audit) -> None:
        click.echo(f"(#{candidate_id}'s launch audit is not stored: {self._archive.path} is read-only here)", err=True)


@cli.command("best")
@click.argument("problem", type=click.Path(exists=True))
@_db_option
@click.option("--export", "export_path", type=click.Path(dir_okay=False),
              help="Write the kernel's source to this file [default: print it on stdout, the report on stderr].")
@click.option("--export-format", type=click.Choice(["evolve", "gpumode", "kernelbench"]), default="evolve",
              show_default=True,
              help="evolve: the source as archived; gpumode: a submission with custom_kernel(data); kernelbench: the "
                   "source plus a ModelNew (KernelBench problems only).")
@click.option("--no-verify", is_flag=True, help="Skip re-running the ladder on the best kernel before exporting.")
@click.option("--device", type=click.Choice(["auto", "cuda", "cpu"]), default="auto", show_default=True,
              help="Where the re-verification runs.")
def best_command(problem, db, export_path, export_format, no_verify, device):
    """The best correct kernel for PROBLEM in the archive, re-verified through the whole ladder and, on a GPU with
    Nsight Compute, the launch audit (what ran on the device: only its own Triton kernels); one that fails the audit
    is left out for good and the next best is tried. The best is the highest score, or the kernel its run reported
    over it (measured within the run's noise of it, or re-timed above it in every round).

    Its source goes to stdout (`evolve best PROBLEM > best.py`) and the report (which candidate, its rungs and
    figures) to stderr; with --export FILE the source goes to FILE and the report to stdout."""
    if export_path and not Path(export_path).resolve().parent.is_dir():  # before anything imports torch
        _fail(f"cannot export to {export_path}: the folder {Path(export_path).resolve().parent} does not exist")
    from .api import SetupError, load
    from .harness.shared.formats import export
    from .problems import strip_test_header

    try:
        loaded = load(problem)
    except SetupError as exc:
        _fail(str(exc))
    name = loaded.name
    if export_format == "kernelbench" and loaded.format != "kernelbench":
        _fail(f"--export-format kernelbench needs a KernelBench problem (a .py file with class Model); {problem} is "
              f"a{'n evolve' if loaded.format == 'evolve' else ' GPU MODE'} problem")
    archive = _open_archive(db, read_only=True)
    from .launch_audit import pick, recorded
    from .reverify import NoLongerPasses, Reverifier

    to_stdout = not export_path  # the source is the output; the report goes beside it, on stderr

    def say(line: str) -> None:
        click.echo(line, err=to_stdout)

    check = Reverifier(archive, problem, loaded, device, say)
    if no_verify:
        best = check.reported()
        if best is None:
            _fail(f"no correct kernel for {name} in {db}", 1)
        check.header(best)
        say(recorded(archive, best).line + " (--no-verify: the record, nothing run now)")
    else:
        try:
            picked = pick(_Unstored(archive) if archive.read_only else archive, check.where, check.reported,
                          check.check, reuse=False)
        except NoLongerPasses as exc:
            _fail(str(exc), 1)
        if picked.best is None:
            _fail(picked.audit.line if picked.audit else f"no correct kernel for {name} in {db}", 1)
        best = picked.best
    text = export(strip_test_header(best.source), loaded, export_format)
    as_what = f" as a {export_format} submission" if export_format != "evolve" else ""
    if export_path:
        Path(export_path).write_text(text)
        click.echo(f"written to {export_path}{as_what}")
    else:
        say(f"the source of #{best.id}{as_what} follows on stdout; --export FILE writes it to a file instead")
        click.echo(text, nl=not text.endswith("\n"))


def _artifact_kinds() -> list[str]:
    """What `evolve show --asm` can print: the compiler artifacts the built-in languages keep."""
    from .lang import BUILT_IN, get

    return list(dict.fromkeys(kind for name in BUILT_IN for kind in get(name).artifact_kinds))


@cli.command("show")
@click.argument("candidate_id", type=int)
@_db_option
@click.option("--prompt/--no-prompt", default=True, show_default=True, help="Include the prompt and the raw reply.")
@click.option("--asm", type=click.Choice(_artifact_kinds()),
              help="Print what the compiler produced instead (kept for every evaluated candidate).")
@click.option("--kernel", help="With --asm: only the specializations whose kernel name contains this.")
def show_command(candidate_id, db, prompt, asm, kernel):
    """One candidate: source, lineage, rung ladder, how it compares with its parent, and the prompt and reply that
    produced it; or, with --asm, its SASS, PTX, TTGIR, TTIR or LLVM IR per kernel specialization."""
    from .archive import ArchiveError
    from .render import ladder_lines, shape_table

    archive = _open_archive(db, read_only=True)
    try:
        c = archive.get(candidate_id)
    except ArchiveError as exc:
        _fail(str(exc), 1)
    if asm:
        _print_asm(archive, c, asm, kernel)
        return
    lineage, p = [], c
    while p.parent_ids:
        p = archive.get(p.parent_ids[0])
        lineage.append(f"#{p.id} ({p.proposer})")
    click.echo(f"candidate #{c.id}  run {c.run_id}  island {c.island}  generation {c.generation}  {c.status}")
    click.echo(f"proposer {c.proposer}  model {c.model or '-'}  template {c.template or '-'}  knobs {c.knobs or '-'}")
    click.echo(f"tokens {c.tokens_in}+{c.tokens_out}  cost ${c.cost:.4f}  latency {c.latency_s:.1f} s")
    click.echo(f"lineage: {' <- '.join([f'#{c.id}'] + lineage)}")
    stored = archive.artifacts.listing(c.id)
    if stored:
        kinds = sorted({a["name"].rsplit(".", 1)[-1] for a in stored if "." in a["name"]} - {"txt", "json"})
        count = len({a["name"].rsplit(".", 1)[0] for a in stored if a["name"].endswith(".ptx")})
        click.echo(f"compiler artifacts: {count} kernel specialization{'s' if count != 1 else ''} "
                   f"({', '.join(kinds)}): evolve show {c.id} --asm sass|ptx|ttgir|ttir|llir [--kernel NAME]")
    if c.hint_ids:
        for hint_id in c.hint_ids:
            h = archive.hints.get(hint_id)
            if h:
                click.echo(f"saw hint #{h['id']} (given {h['created'][:19]}): {h['text']}")
    calls = archive.tool_calls(c.id)
    if calls:
        click.echo(f"tool calls ({len(calls)}, over {max(t['round'] for t in calls)} round"
                   f"{'s' if max(t['round'] for t in calls) > 1 else ''}; tokens and cost are in the totals above):")
        for t in calls:
            took = f", {t['seconds']:.1f} s" if t["seconds"] else ""  # a compile or check: an evaluation
            click.echo(f"  round {t['round']}: {t['name']}({' '.join(t['arguments'].split())[:120]}) -> "
                       f"{t['result_chars']} characters{took}")
    if c.proposer == "composer":
        drawn = [archive.get(p) for p in c.parent_ids]
        click.echo("composite (not written by a model): dispatches per shape regime between "
                   + ", ".join(f"#{p.id} ({p.proposer})" for p in drawn) + "; the rule is its custom_kernel, the "
                   "archived figures it was built from are in its docstring")
    if c.error:
        click.echo(f"invalid: {c.error}")
    verdict = archive.verdict(c.id)
    if verdict:
        click.echo("")
        click.echo(f"measured on {verdict.device}" + (f" ({verdict.gpu})" if verdict.gpu else ""))
        for line in ladder_lines(verdict) + shape_table(verdict):
            click.echo(line)
    if verdict and verdict.ok:
        from .launch_audit import recorded

        audit = recorded(archive, c)
        click.echo(audit.line)
        if audit.kernels:
            click.echo("  seen during the calls: " + ", ".join(f"{n} x{k}" for n, k in audit.kernels[:8]))
    from .profiling import render as render_profile
    from .tracing import render as render_trace

    for what, row, render in (("profile", archive.profiles.latest(c.id), render_profile),
                              ("trace", archive.traces.latest(c.id), render_trace)):
        if row:
            click.echo("")
            if row["ok"] and row["summary"]:
                click.echo(f"{what} ({row['device']}, {row['seconds']:.1f} s; advice, not part of the verdict):")
                click.echo(render(row["summary"]))
            else:
                click.echo(f"{what}: none ({row['message']})")
    if verdict and c.parent_ids:
        from .render import against_parent

        parent = archive.get(c.parent_ids[0])
        parent_verdict = archive.verdict(parent.id)
        lines = against_parent(verdict, parent_verdict, c, parent)
        if lines:
            click.echo("")
            for line in lines:
                click.echo(line)
        if parent_verdict is not None:
            from .digest import digest_candidate
            from .render import digest_against

            changed = digest_against(digest_candidate(archive, parent.id, parent_verdict.kernels),
                                     digest_candidate(archive, c.id, verdict.kernels))
            if changed:
                click.echo("SASS digest against the parent (each kernel's specializations summed):")
                for line in changed:
                    click.echo(line)
    click.echo("\n--- source ---")
    click.echo(c.source or "(none)")
    if prompt:
        click.echo("--- prompt ---")
        click.echo(c.prompt or "(none)")
        click.echo("--- reply ---")
        click.echo(c.reply or "(none)")


class _Target:
    """What `evolve trace` and `evolve profile` look at: an archived candidate, or a file against a problem folder."""

    def __init__(self, target: str, problem_dir, db, case_label):
        from .archive import ArchiveError
        from .harness import ProblemError, load_problem

        self.archive, self.candidate, self.verdict = None, None, None
        try:
            if target.isdigit():
                if problem_dir:
                    _fail("give --problem only with a file: an archived candidate's problem is its run's")
                self.archive = _open_archive(db)
                self.candidate = self.archive.get(int(target))
                self.source = self.candidate.source or ""
                self.verdict = self.archive.verdict(self.candidate.id)
                problem_dir = self.archive.run(self.candidate.run_id)["problem_path"]
            else:
                if not Path(target).is_file():
                    _fail(f"{target}: neither an archived candidate's id nor a file")
                if not problem_dir:
                    _fail(f"{target} is a file: say which problem it solves with --problem DIR")
                self.source = Path(target).read_text()
            self.problem = load_problem(problem_dir)
        except ArchiveError as exc:
            _fail(str(exc), 1)
        except ProblemError as exc:
            _fail(f"the problem folder cannot be read: {exc}")
        self.index = self._case(case_label)
        self.label = self.problem.benchmarks[self.index].label
        self.name = f"#{self.candidate.id}" if self.candidate else target

    def _case(self, case_label) -> int:
        """The case named, else the one nearest the candidate's overall fitness on a GPU, else the first."""
        from .profiling import chosen_row

        labels = [case.label for case in self.problem.benchmarks]
        if case_label is not None:
            if case_label not in labels:
                _fail(f"no benchmark case {case_label!r} in {self.problem.name}; its cases: {', '.join(labels)}")
            return labels.index(case_label)
        row = chosen_row(self.verdict, labels)
        return labels.index(row["case"]) if row else 0

    def run(self, what: str, tool) -> object:
        """tool(path, problem dir, case index, beside=..., case_label=...) on a copy of the source; its result."""
        import tempfile

        with tempfile.TemporaryDirectory(prefix=f"evolve-{what}-") as work:
            path = Path(work, "candidate.py")
            path.write_text(self.source)
            click.echo(f"{what} {self.name} on {self.label} (--case picks another)", err=True)
            return tool(path, self.problem.path, self.index, beside=self.problem.beside_files(),
                        case_label=self.label)


def _target_options(f):
    f = click.option("--timeout", "timeout_s", type=click.FloatRange(min=0, min_open=True), default=180.0,
                     show_default=True, help="Wall-clock limit in seconds of the child.")(f)
    f = click.option("--case", "case_label", help="The benchmark case, by its label (e.g. 'fp32 4096x4096') "
                                                  "[default: the case nearest the candidate's overall fitness, "
                                                  "else the first].")(f)
    f = click.option("--problem", "problem_dir", type=click.Path(exists=True, file_okay=False),
                     help="With a file: the problem folder it solves.")(f)
    f = _db_option(f)
    return click.argument("target")(f)


@cli.command("trace")
@_target_options
def trace_command(target, db, problem_dir, case_label, timeout_s):
    """Time the sections a Triton kernel marks, on the GPU: per section, each warp's cycles and nanoseconds on one
    benchmark case, in a jailed child of its own (never part of a verdict). TARGET is an archived candidate's id, or
    a file with --problem. Mark sections with comment lines inside the @triton.jit function: `# section: load` where a
    part begins, `# section: end` after the last. An archived candidate's summary is kept for `evolve show` and the
    prompts of its children."""
    from .tracing import Tracer, render

    chosen = _Target(target, problem_dir, db, case_label)
    result = chosen.run("tracing", Tracer(timeout_s=timeout_s).trace)
    if not result.ok:
        _fail(result.message if result.message.startswith("not traced") else f"not traced: {result.message}", 1)
    if chosen.candidate is not None:
        import torch

        chosen.archive.traces.store(chosen.candidate.id, torch.cuda.get_device_name(), result, chosen.label)
    click.echo(render(result.summary))


@cli.command("profile")
@_target_options
@click.option("--as-root", is_flag=True, help="Profile even when running as root (as `evolve run --profile-as-root`).")
def profile_command(target, db, problem_dir, case_label, timeout_s, as_root):
    """Profile a kernel with Nsight Compute (ncu) on one benchmark case, in a jailed child of its own, as a run's
    profile round does: per kernel its time, DRAM and SM throughput, occupancy and top stalls, and whether the case is
    memory- or compute-bound. TARGET is an archived candidate's id, or a file with --problem. An archived candidate's
    summary is kept for `evolve show` and the prompts of its children; never part of a verdict."""
    from .harness.parent.ladder import gpu_available
    from .profiling import Profiler, render

    chosen = _Target(target, problem_dir, db, case_label)
    if not gpu_available():
        _fail("not profiled: profiling needs a GPU (Nsight Compute reads the card's counters)", 1)
    result = chosen.run("profiling", Profiler(allow_root=as_root, timeout_s=timeout_s).profile)
    if not result.ok:
        _fail(f"not profiled: {result.message}", 1)
    if chosen.candidate is not None:
        import torch

        chosen.archive.profiles.store(chosen.candidate.id, torch.cuda.get_device_name(), result, chosen.label)
    click.echo(render(result.summary))


def _target_run(archive, run_id):
    """--run N, else the run going on now (the newest not ended), else the newest."""
    from .archive import ArchiveError

    if run_id is not None:
        try:
            return archive.run(run_id)
        except ArchiveError as exc:
            _fail(str(exc), 1)
    runs = archive.runs()
    if not runs:
        _fail(f"no runs in {archive.path}: start one with `evolve run PROBLEM`", 1)
    going = [r for r in runs if not r.get("ended")]
    return (going or runs)[-1]


@cli.command("retime")
@click.option("--run", "run_id", type=int, help="The run whose best candidates are re-timed [default: the newest].")
@click.option("--top", type=click.IntRange(min=2), default=3, show_default=True, help="How many of its best.")
@click.option("--rounds", type=click.IntRange(min=1), default=3, show_default=True, help="Interleaved rounds.")
@click.option("--device", type=click.Choice(["auto", "cuda", "cpu"]), default="auto", show_default=True,
              help="Where they are re-timed (cpu: the interpreter's score, which only ranks work done).")
@click.option("--timeout", "timeout_s", type=click.FloatRange(min=0, min_open=True), default=180.0,
              show_default=True, help="Wall-clock limit in seconds of each evaluation.")
@_db_option
def retime_command(run_id, top, rounds, device, timeout_s, db):
    """Re-time a run's best correct candidates against each other, interleaved (A B C, B C A, ...), back to back on
    one device, through the whole ladder, and print each one's figures, median and spread and the order they give.
    The figures are stored apart (table retimes); no candidate's own fitness changes."""
    import tempfile

    from .harness import EvalOptions, ProblemError, evaluate, load_problem
    from .retime import report, retime
    from .scoring import score_of

    archive = _open_archive(db)
    run = _target_run(archive, run_id)
    try:
        problem = load_problem(run["problem_path"])
    except ProblemError as exc:
        _fail(f"run {run['id']}'s problem folder cannot be read: {exc}")
    ranked = sorted((c for c in archive.candidates(run["id"]) if c.ok and c.source and c.score is not None),
                    key=lambda c: -c.score)[:top]
    if len(ranked) < 2:
        _fail(f"run {run['id']} has {len(ranked)} correct candidate{'s' if len(ranked) != 1 else ''}: nothing to "
              "re-time against", 1)
    options = EvalOptions(device=device, timeout_s=timeout_s)
    click.echo(f"re-timing {', '.join(f'#{c.id}' for c in ranked)} of run {run['id']} ({run['problem']}), "
               f"{rounds} round{'s' if rounds != 1 else ''}, interleaved", err=True)

    def progress(event):
        value = f"{event['figure']:.4g}" if event["figure"] is not None else f"failed ({event['reason']})"
        click.echo(f"  round {event['round']}: #{event['candidate_id']} {value}", err=True)

    with tempfile.TemporaryDirectory(prefix="evolve-retime-") as work:
        results = retime(archive, run["id"], ranked, evaluate, problem.path, options, Path(work), rounds, score_of,
                         progress)
    mode = archive.retimes.of_run(run["id"])[-1]["device"]
    label = "fraction of roofline" if mode and not mode.startswith("cpu") else \
        "1 / interpreter ms: a ranking of work done, not GPU speed"
    for line in report(results, rounds, label):
        click.echo(line)


@cli.command("hint")
@click.argument("text")
@click.option("--run", "run_id", type=int, help="The run to tell [default: the one going on now, else the newest].")
@_db_option
def hint_command(text, run_id, db):
    """Tell a run something while it goes on ("try an online softmax above 16K columns"): every prompt it writes from
    now on carries the hint, the archive stores it with its time, and `evolve show` marks the candidates that saw it."""
    if not text.strip():
        _fail("the hint is empty")
    archive = _open_archive(db)
    run = _target_run(archive, run_id)
    hint_id = archive.hints.add(run["id"], text.strip())
    state = "running" if not run.get("ended") else "stopped; `evolve run --resume` carries it on"
    click.echo(f"hint #{hint_id} given to run {run['id']} ({run['problem']}, {state})")


@cli.command("pause")
@click.option("--run", "run_id", type=int, help="The run to pause [default: the one going on now, else the newest].")
@_db_option
def pause_command(run_id, db):
    """Pause a run's proposals without stopping it: nothing new starts, what is in flight finishes and waits, and
    the time paused does not count against --budget. `evolve resume` lets it go on."""
    archive = _open_archive(db)
    run = _target_run(archive, run_id)
    archive.set_paused(run["id"], True)
    click.echo(f"run {run['id']} ({run['problem']}) paused: `evolve resume --run {run['id']}` lets it go on")


@cli.command("resume")
@click.option("--run", "run_id", type=int,
              help="The run to let go on [default: the one going on now, else the newest].")
@_db_option
def resume_command(run_id, db):
    """Let a run paused by `evolve pause` go on proposing. (A run that stopped, or crashed, goes on with
    `evolve run PROBLEM --resume`.)"""
    archive = _open_archive(db)
    run = _target_run(archive, run_id)
    archive.set_paused(run["id"], False)
    click.echo(f"run {run['id']} ({run['problem']}) goes on")


@cli.command("lessons")
@click.option("--problem", default=None, metavar="NAME",
              help="Only this problem's lessons (its name, or its folder) [default: every problem's].")
@click.option("--clear", is_flag=True, help="Remove the lessons listed (asks nothing; says how many).")
@_db_option
def lessons_command(problem, clear, db):
    """What worked in earlier runs (a candidate that beat its parent by a margin: its diff, knob settings, the hints
    and the parent's profile behind it), which later runs of the problem and of problems alike in kind carry in their
    prompts (`evolve run --no-lessons`: not); newest first."""
    if problem is not None and Path(problem).is_dir():  # a problem folder: its name (the folder's, as evolve init has)
        problem = Path(problem).resolve().name
    archive = _open_archive(db, read_only=not clear)
    if clear:
        removed = archive.lessons.clear(problem)
        click.echo(f"{removed} lesson{'s' if removed != 1 else ''} removed" + (f" ({problem})" if problem else ""))
        return
    found = archive.lessons.listing(problem)
    if not found:
        click.echo(f"no lessons in {db}" + (f" for {problem}" if problem else ""))
        return
    from .lessons import summary_line

    click.echo(f"{'id':>4}  {'problem':<14}{'kind':<26}{'gain':<22}{'model':<20}{'date':<12}what")
    for lesson in found:
        gain = f"{lesson['before']:.3g} -> {lesson['after']:.3g} {lesson['measure']}"
        click.echo(f"{lesson['id']:>4}  {lesson['problem'][:13]:<14}{(lesson['kind'] or '-')[:25]:<26}{gain[:21]:<22}"
                   f"{(lesson['model'] or lesson['proposer'])[:19]:<20}{lesson['created'][:10]:<12}"
                   f"{summary_line(lesson)}")

def _print_asm(archive, c, kind: str, kernel: str | None) -> None:
    stored = [a["name"] for a in archive.artifacts.listing(c.id)]
    if not stored:
        _fail(f"candidate #{c.id} has no compiler artifacts (it failed before compiling, was evaluated before they "
              "were kept, or the run had --no-artifacts)", 1)
    index = (archive.artifacts.read(c.id, "index.txt") or b"").decode(errors="replace").splitlines()
    about = {line.split()[0]: line for line in index if line.split()}
    names = [n for n in stored if n.endswith(f".{kind}") and (kernel is None or kernel in n)]
    if kind == "sass" and not names:  # kept without SASS: disassemble the stored cubin here
        names = [n for n in stored if n.endswith(".cubin") and (kernel is None or kernel in n)]
    if not names:
        found = sorted({n.split("_", 1)[-1].rsplit(".", 1)[0] for n in stored if "_" in n})
        _fail(f"no {kind} for {'kernel ' + repr(kernel) + ' of ' if kernel else ''}candidate #{c.id}; its kernels: "
              f"{', '.join(found)}", 1)
    for name in names:
        stem = name.rsplit(".", 1)[0]
        click.echo(f"// {about.get(stem, stem)}")
        data = archive.artifacts.read(c.id, name) or b""
        if name.endswith(".cubin"):
            from .harness.runner.sass import disassemble

            click.echo(disassemble(data) or "(no cuobjdump here to read the cubin with)")
        else:
            click.echo(data.decode(errors="replace"))


@cli.command("mcp")
@click.option("--problems", "roots", multiple=True, type=click.Path(exists=True, file_okay=False),
              help="A folder of problem folders the tools may name (repeatable) [default: ./problems]. No other "
                   "problem is ever evaluated: a problem's reference is code.")
def mcp_command(roots):
    """Serve evolve's tools to a coding agent over MCP (stdio): evaluate and compile a kernel, list and read problems,
    show a candidate and its asm, search the context notes, the best kernel and the leaderboard of an archive, and hint,
    pause or resume a run. Every call goes through the same sealed harness as `evolve eval`. Add to a client's
    configuration: {"mcpServers": {"evolve": {"command": "evolve", "args": ["mcp"]}}}."""
    try:
        import mcp.server  # noqa: F401 - the SDK the server is built on, imported here so its absence is said
        from .mcp_server import main
    except ImportError:
        _fail("evolve mcp needs the MCP SDK: pip install 'evolve[mcp]'")
    if not roots and not Path("problems").is_dir():
        _fail("evolve mcp serves problems from folders named with --problems DIR (./problems is not here)")
    main(roots or ("problems",))


@cli.command("init")
@click.argument("folder", type=click.Path(file_okay=False))
def init_command(folder):
    """Write a new problem folder FOLDER (problem.toml, reference.py, notes.md, a seed and a wrong solution), every
    field commented and every part to fill marked TODO; `evolve check-problem FOLDER` then says what is left."""
    from .problems import init_problem

    try:
        written = init_problem(folder)
    except (FileExistsError, ValueError) as exc:
        _fail(str(exc))
    for path in written:
        click.echo(f"wrote {path}")
    click.echo(f"next: replace every TODO, then `evolve check-problem {folder}`")


@cli.command("check-problem")
@click.argument("problem", type=click.Path(exists=True))
@click.option("--device", type=click.Choice(["auto", "cuda", "cpu"]), default="auto", show_default=True,
              help="Where the seeds and solutions are evaluated.")
@click.option("--timeout", "timeout_s", type=click.FloatRange(min=0, min_open=True), default=300.0, show_default=True,
              help="Wall-clock limit in seconds for each kernel's evaluation.")
def check_problem_command(problem, device, timeout_s):
    """Validate PROBLEM (any format): it loads, no TODO is left, the reference runs and its generator depends on
    its seed, every seed and correct solution passes in every dtype, and every wrong solution fails at the rung
    its first line names. Prints one line per fault and exits 2 if there is any; writes nothing."""
    from .problems import check_problem

    faults = check_problem(problem, device=device, timeout_s=timeout_s,
                           progress=lambda line: click.echo(f"  {line}", err=True))
    for fault in faults:
        click.echo(fault)
    if faults:
        sys.exit(2)
    click.echo(f"{problem}: no fault found")


@cli.group("model")
def model_group():
    """From a user's PyTorch program to problems and back (docs/model.md). PROGRAM is a Python file defining
    `def program():` that returns `(module, example_inputs)`, traced with torch.fx; for a script, move the region
    worth profiling into a function of its inputs and return that function instead of a module. `profile` shows
    where the time goes, `extract` writes problem folders from the ops and chains you pick, `apply` puts their best
    kernels back and measures the gain."""


@model_group.command("profile")
@click.argument("program", type=click.Path(exists=True, dir_okay=False))
@click.option("--top", type=click.IntRange(min=1), default=20, show_default=True, help="Rows shown.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of the table.")
@click.option("--device", type=click.Choice(["auto", "cuda", "cpu"]), default="auto", show_default=True,
              help="Where the program runs (auto: the GPU if there is one).")
@click.option("--repeats", type=click.IntRange(min=1), default=10, show_default=True,
              help="Forwards timed; each op's time is its median.")
def model_profile_command(program, top, as_json, device, repeats):
    """Where PROGRAM's time goes, by op and by chain of ops one kernel could fuse: each one's share, the shapes and
    dtypes it ran at and how often, and on a GPU the most it could gain end to end (Amdahl, from its roofline)."""
    from .model_tools.profile import profile_program, render
    from .model_tools.program import ProgramError, pick_device

    try:
        profile = profile_program(program, pick_device(device), repeats)
    except ProgramError as exc:
        _fail(str(exc))
    click.echo(json.dumps(profile.to_json(), indent=1) if as_json else render(profile, top))


@model_group.command("extract")
@click.argument("program", type=click.Path(exists=True, dir_okay=False))
@click.option("--pick", required=True, metavar="ID[,ID]", help="The profile's ids of the ops or chains to write.")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False),
              help="The folder the problem folders are written under.")
def model_extract_command(program, pick, out_dir):
    """Write a problem folder for each picked op or chain of PROGRAM: its reference the program's own code, its
    benchmark shapes those the program ran it at, tolerances by dtype, a Triton seed and a wrong kernel; then
    `evolve check-problem DIR` and `evolve run DIR` take it as it is."""
    from .model_tools.extract import extract
    from .model_tools.program import ProgramError

    try:
        written = extract(program, [p.strip() for p in pick.split(",") if p.strip()], out_dir)
    except ProgramError as exc:
        _fail(str(exc))
    for folder in written:
        click.echo(f"wrote {folder}")
    click.echo("next: evolve check-problem DIR, evolve run DIR, then evolve model apply PROGRAM --problems DIR[,DIR]")


@model_group.command("apply")
@click.argument("program", type=click.Path(exists=True, dir_okay=False))
@click.option("--problems", "problem_dirs", required=True, metavar="DIR[,DIR]",
              help="Problem folders `evolve model extract` wrote from PROGRAM.")
@_db_option
@click.option("--out", "out_dir", default="model-apply", show_default=True, type=click.Path(file_okay=False),
              help="Where the kernels, the patched forward's code and the result are written.")
@click.option("--device", type=click.Choice(["auto", "cuda", "cpu"]), default="auto", show_default=True,
              help="Where the program runs (cpu: the kernels under the Triton interpreter).")
@click.option("--repeats", type=click.IntRange(min=1), default=10, show_default=True, help="Forwards timed.")
def model_apply_command(program, problem_dirs, db, out_dir, device, repeats):
    """Put each problem's best archived kernel into PROGRAM in place of the op or chain it was written from, check
    the program's outputs against the original's, and print the end-to-end time before and after beside the
    Amdahl prediction from the kernels' measured speed-ups."""
    from .model_tools.apply import apply, render
    from .model_tools.program import ProgramError, pick_device

    try:
        result = apply(program, [d.strip() for d in problem_dirs.split(",") if d.strip()], db, out_dir,
                       pick_device(device), repeats)
    except ProgramError as exc:
        _fail(str(exc))
    click.echo(render(result))
    click.echo(f"written: {out_dir}/kernels/, {out_dir}/patched_forward.py, {out_dir}/result.json")
    if not result["match"]:
        sys.exit(1)


def main():
    import faulthandler
    import signal

    faulthandler.register(signal.SIGUSR1, all_threads=True)  # `kill -USR1 PID`: every thread's stack to stderr
    cli()


if __name__ == "__main__":
    main()
