"""`evolve mcp`: evolve's tools for a coding agent (Claude Code, Cursor, any MCP client), over stdio.

Every tool that touches a candidate, a run or an archive runs evolve's own command in a child process (`evolve eval
--json`, `evolve show`, `evolve leaderboard --json`, ...): the same sealed harness, nothing the server does trusted more
than the command line, and a crash or a hang of one call never takes the server down. Problems and the context notes
are read in the server itself (files, no candidate code).

What a call names is held to what the user started the server with: a problem only from the problem roots (`evolve
mcp --problems DIR`; a problem's reference is code the measurer runs, so a file a call wrote must never be one), a
source a call sends lives in a folder of the server's own that no root holds and no answer names, and every value goes
to a command after `--`, so none is ever read as an option."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

DEFAULT_DB = "runs/evolve.db"
CALL_TIMEOUT_S = 3600  # one evaluation's own limits are the harness's; this bounds a call that never returns
ROOTS: list[Path] = []  # the problem roots the server was started with (main)
_SOURCES: list[Path] = []  # the server's own folder for the sources calls send (main)


class CommandFailed(Exception):
    """An evolve command ended with an error: its last lines say why."""


def _evolve(*args: str, timeout: float = CALL_TIMEOUT_S) -> tuple[int, str]:
    """(exit code, output) of `evolve ARGS` in a child process."""
    try:
        done = subprocess.run([sys.executable, "-m", "evolve.cli", *args], capture_output=True, text=True,
                              timeout=timeout, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    except subprocess.TimeoutExpired:
        raise CommandFailed(f"evolve {args[0]} took longer than {timeout:.0f} s") from None
    return done.returncode, _unnamed((done.stdout + done.stderr).strip())


def _checked(*args: str, ok=(0,)) -> str:
    code, out = _evolve(*args)
    if code not in ok:
        raise CommandFailed("\n".join(out.splitlines()[-12:]) or f"evolve {args[0]} exited with {code}")
    return out


def _unnamed(text: str) -> str:
    """Text with the server's own source folder left unnamed (no answer tells a call where another's source is)."""
    for folder in _SOURCES:
        text = text.replace(str(folder), "<source>")
    return text


def _problem(problem: str) -> str:
    """A problem by name (a folder under a root) or by a path inside a root, as a real path; anything else refused."""
    if not ROOTS:
        raise CommandFailed("this server has no problem roots: start it with `evolve mcp --problems DIR`")
    named = [root / problem for root in ROOTS] if "/" not in problem and problem not in ("", ".", "..") else []
    found = next((p for p in named if p.exists()), None) or Path(problem)
    real = Path(os.path.realpath(found))
    inside = any(real == root or root in real.parents for root in ROOTS)
    if not inside or any(folder == real or folder in real.parents for folder in _SOURCES):
        raise CommandFailed(f"{problem}: not a problem under {', '.join(map(str, ROOTS))} (list_problems names them)")
    if not ((real / "problem.toml").is_file() or (real / "task.yml").is_file() or (real / "task.yaml").is_file()
            or (real.is_file() and real.suffix == ".py")):
        raise CommandFailed(f"{problem}: no problem.toml there (list_problems names the problems)")
    return str(real)


def _candidate_file(candidate: str | None, source: str | None, folder: str) -> str:
    if bool(candidate) == bool(source):
        raise CommandFailed("give exactly one of candidate (a path to a .py file) and source (the file's text)")
    if candidate:
        real = Path(os.path.realpath(candidate))
        if not real.is_file() or any(f in real.parents for f in _SOURCES):
            raise CommandFailed(f"{candidate}: no such file")
        return str(real)
    path = Path(folder) / "candidate.py"
    path.write_text(source)
    return str(path)


def _source_folder():
    """A folder of this call's own for a source it sends, inside the server's private folder."""
    return tempfile.TemporaryDirectory(prefix="call-", dir=_SOURCES[0] if _SOURCES else None)


def evaluate(problem: str, candidate: str | None = None, source: str | None = None, language: str | None = None,
             device: str = "auto") -> str:
    """The whole rung ladder (load, compile, run, correctness, benchmark, roofline) for a candidate file or source
    against a problem (its name, or a path under the server's problem roots): a one-line summary, then the verdict's
    JSON as `evolve eval --json` gives it, with identical kernel specializations listed once each and counted."""
    verdict = _verdict(problem, candidate, source, language, device)
    return f"{_summary(verdict)}\n{json.dumps(_compact(verdict), indent=1)}"


def _summary(verdict: dict) -> str:
    """One line: passed (and its figure) or the rung it failed at and why; the kernels compiled."""
    rungs = verdict.get("rungs", [])
    failed = next((r for r in rungs if r.get("status") == "failed"), None)
    if failed is not None:
        head = f"failed at {failed.get('name')}: {str(failed.get('reason') or '')[:200]}"
    elif verdict.get("fitness") is not None:
        head = f"passed: fitness {verdict['fitness']:.3f} of the roofline over {len(verdict.get('shapes', []))} cases"
    else:
        head = f"passed on the {verdict.get('mode')} path ({len(verdict.get('shapes', []))} cases timed, no roofline)"
    kernels = _compact(verdict).get("kernels_compiled", [])
    return head + ("; kernels: " + ", ".join(f"{k['name']} x{k['specializations']} ({k.get('regs')} registers, "
                                               f"{k.get('spills')} spills)" for k in kernels) if kernels else "")


def _compact(verdict: dict) -> dict:
    """The verdict with the compile rung's kernels listed once per distinct specialization, with a count."""
    out = dict(verdict)
    rungs = []
    for rung in verdict.get("rungs", []):
        kernels = (rung.get("metrics") or {}).get("kernels") if rung.get("name") == "compile" else None
        if kernels:
            distinct: dict = {}
            for kernel in kernels:
                key = json.dumps(kernel, sort_keys=True)
                distinct.setdefault(key, dict(kernel, specializations=0))["specializations"] += 1
            out["kernels_compiled"] = list(distinct.values())
            rung = dict(rung, metrics={k: v for k, v in rung["metrics"].items() if k != "kernels"})
        rungs.append(rung)
    out["rungs"] = rungs
    return out


def _verdict(problem: str, candidate: str | None, source: str | None, language: str | None, device: str) -> dict:
    """`evolve eval --json` in a child process, its verdict as written."""
    problem = _problem(problem)
    with _source_folder() as folder:
        path = _candidate_file(candidate, source, folder)
        args = ["eval", "--json", "--device", device, *(["--language", language] if language else []), "--", path,
                problem]
        out = _checked(*args, ok=(0, 1))
    try:  # the verdict's JSON, and after it what the command said on stderr
        return json.JSONDecoder().raw_decode(out[out.index("{"):])[0]
    except ValueError:
        raise CommandFailed(out[-2000:]) from None


def compile_only(problem: str, candidate: str | None = None, source: str | None = None,
                 language: str | None = None) -> str:
    """The load and compile rungs as a machine without a GPU runs them: the kernels built for sm_90a, with their
    registers, spills and shared memory; nothing is timed. (A Triton candidate's kernels also run under the CPU
    interpreter meanwhile, which takes longer; only those two rungs come back.)"""
    verdict = _compact(_verdict(problem, candidate, source, language, device="cpu"))
    rungs = [r for r in verdict.get("rungs", []) if r.get("name") in ("load", "compile")]
    ok = all(r.get("status") == "ok" for r in rungs) and len(rungs) == 2
    failed = next((r for r in rungs if r.get("status") != "ok"), None)
    head = "compiled" if ok else f"failed at {failed.get('name') if failed else 'load'}: " \
        f"{str((failed or {}).get('reason') or '')[:200]}"
    return f"{head}\n" + json.dumps({"ok": ok, "rungs": rungs, "kernels": verdict.get("kernels_compiled", [])},
                                      indent=1)


def list_problems() -> list[dict]:
    """The problems under the server's problem roots: name, path, languages and the description's first sentence."""
    from .harness import load_problem

    found = []
    for path in [p for root in ROOTS for p in sorted(root.iterdir()) if (p / "problem.toml").is_file()]:
        try:
            problem = load_problem(path)
        except Exception as exc:  # noqa: BLE001 - a malformed folder is listed with its error
            found.append({"path": str(path), "error": str(exc)[:300]})
            continue
        found.append({"path": str(path), "name": problem.name, "languages": list(problem.languages),
                      "description": problem.description.strip().split(". ")[0][:300]})
    return found


def read_problem(problem: str) -> dict:
    """A problem's problem.toml, reference.py and notes.md, as text (its name, or a path under the problem roots)."""
    folder = Path(_problem(problem))
    if not (folder / "problem.toml").is_file():
        raise CommandFailed(f"{problem}: no problem.toml (list_problems shows the problems)")
    return {name: (folder / name).read_text() for name in ("problem.toml", "reference.py", "notes.md")
            if (folder / name).is_file()}


def show(candidate_id: int, db: str = DEFAULT_DB) -> str:
    """One archived candidate: source, lineage, rung ladder and per-case figures (`evolve show ID --no-prompt`)."""
    return _checked("show", "--db", db, "--no-prompt", "--", str(int(candidate_id)))


def asm(candidate_id: int, kind: str = "sass", kernel: str | None = None, db: str = DEFAULT_DB) -> str:
    """What the compiler produced for an archived candidate (sass, ptx, ...), per kernel specialization."""
    return _checked("show", "--db", db, "--asm", kind, *(["--kernel", kernel] if kernel else []), "--",
                    str(int(candidate_id)))


def _looked_at(command: str, candidate_id: int | None, candidate: str | None, source: str | None,
               problem: str | None, case: str | None, db: str) -> str:
    """`evolve trace|profile` on an archived candidate (candidate_id) or on a file or source against a problem."""
    tail = ["--case", case] if case else []
    if candidate_id is not None:
        if candidate or source:
            raise CommandFailed("give candidate_id, or a candidate file or source with problem, not both")
        return _checked(command, "--db", db, *tail, "--", str(int(candidate_id)))
    if not problem:
        raise CommandFailed("give candidate_id, or a candidate file or source together with problem")
    problem = _problem(problem)
    with _source_folder() as folder:
        return _checked(command, "--problem", problem, *tail, "--", _candidate_file(candidate, source, folder))


def trace(candidate_id: int | None = None, candidate: str | None = None, source: str | None = None,
          problem: str | None = None, case: str | None = None, db: str = DEFAULT_DB) -> str:
    """Time the sections a Triton kernel marks (`# section: NAME` comment lines in its @triton.jit function) on one
    benchmark case, on the GPU, in a jailed child: cycles and nanoseconds per section per warp. An archived candidate
    (candidate_id), or a file or source with the problem folder it solves."""
    return _looked_at("trace", candidate_id, candidate, source, problem, case, db)


def profile(candidate_id: int | None = None, candidate: str | None = None, source: str | None = None,
            problem: str | None = None, case: str | None = None, db: str = DEFAULT_DB) -> str:
    """Nsight Compute on one benchmark case, in a jailed child: per kernel time, DRAM and SM throughput, occupancy,
    top stalls. An archived candidate (candidate_id), or a file or source with the problem folder it solves."""
    return _looked_at("profile", candidate_id, candidate, source, problem, case, db)


def search_context(query: str, language: str = "triton", limit: int = 5) -> list[dict]:
    """Passages of evolve's notes for a language and the language's installed sources that match the words."""
    return [{"path": h.path, "lines": f"{h.start}-{h.end}", "title": h.title, "text": h.text}
            for h in _index(language).search(query, limit)]


def read_context(path: str, start: int = 1, end: int = 80, language: str = "triton") -> str:
    """Lines start..end of a file search_context found (its path as search_context gives it)."""
    return _index(language).read(path, start, end)


_INDEXES: dict = {}


def _index(language: str):
    from .knowledge import ContextIndex, project_context
    from .lang import UnknownLanguage, get, source_folders

    if language not in _INDEXES:
        try:
            lang = get(language)
        except UnknownLanguage as exc:
            raise CommandFailed(str(exc)) from None
        _INDEXES[language] = ContextIndex([project_context() / lang.context_folder, *source_folders(lang)])
    return _INDEXES[language]


def best(problem: str, db: str = DEFAULT_DB) -> str:
    """The best correct kernel of a problem in an archive, as archived (not re-verified): `evolve best --no-verify`."""
    return _checked("best", "--db", db, "--no-verify", "--", _problem(problem))


def leaderboard(db: str = DEFAULT_DB) -> list:
    """Models per problem and device in an archive, as `evolve leaderboard --json` gives it."""
    out = _checked("leaderboard", "--db", db, "--json")
    return json.loads(out[out.index("["):]) if "[" in out else []


def hint(text: str, db: str = DEFAULT_DB, run: int | None = None) -> str:
    """Tell a run something while it goes on: every prompt it writes from now on carries the hint."""
    return _checked("hint", "--db", db, *(["--run", str(int(run))] if run is not None else []), "--", text)


def pause(db: str = DEFAULT_DB, run: int | None = None) -> str:
    """Pause a run's proposals (what is in flight finishes); `resume` lets it go on."""
    return _checked("pause", "--db", db, *(["--run", str(int(run))] if run is not None else []))


def resume(db: str = DEFAULT_DB, run: int | None = None) -> str:
    """Let a run paused by `pause` go on proposing."""
    return _checked("resume", "--db", db, *(["--run", str(int(run))] if run is not None else []))


# What each parameter of a tool is, as the client's schema shows it (every tool's parameter of that name means the same)
PARAMETERS = {
    "problem": "a problem: its folder's name under the server's problem roots (list_problems names them), or a path "
               "inside one of those roots",
    "candidate": "a path to the candidate's .py file (give this or source, not both)",
    "source": "the candidate's Python source as text (give this or candidate, not both)",
    "language": "the candidate's language: triton, cutedsl or tilelang (default: the problem's first)",
    "device": "auto (the GPU where there is one), cuda, or cpu (compiled for sm_90a and run under the Triton "
              "interpreter; nothing is timed against the roofline)",
    "db": f"the archive (an SQLite file), relative to the server's working folder (default {DEFAULT_DB})",
    "candidate_id": "an archived candidate's number, as show and the run's progress name it",
    "kind": "what the compiler produced: sass, ptx, ttgir, ttir or llir",
    "kernel": "part of a kernel's name, to pick one specialization (default: the first)",
    "case": "a benchmark case by its label, e.g. 'fp32 4096x4096' (default: the one nearest the overall figure)",
    "query": "words to look for, e.g. 'online softmax running max rescale'",
    "limit": "how many passages to return (1 to 10)",
    "path": "a file's path exactly as search_context printed it",
    "start": "the first line to read (1-based)",
    "end": "the last line to read (at most 200 lines a call)",
    "text": "the hint, in words the run's next prompts will carry",
    "run": "the run's number (default: the one going on now, else the newest)",
}

TOOLS = (evaluate, compile_only, list_problems, read_problem, show, asm, trace, profile, search_context, read_context,
         best, leaderboard, hint, pause, resume)


def server():
    """The MCP server with every tool above; a CommandFailed becomes the tool's error, and the server goes on."""
    import functools

    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError

    app = MCPServer("evolve", instructions="Evaluate GPU kernels against evolve problems through its sealed rung "
                                           "ladder, read problems and context notes, and inspect or steer runs.")
    for tool in TOOLS:
        @functools.wraps(tool)
        def wrapped(*args, _tool=tool, **kwargs):
            try:
                return _tool(*args, **kwargs)
            except CommandFailed as exc:
                raise ToolError(str(exc)) from None
            except Exception as exc:  # noqa: BLE001 - said to the client, whatever it was; the server goes on
                raise ToolError(f"{_tool.__name__} failed: {type(exc).__name__}: {exc}"[:2000]) from None

        wrapped.__signature__ = _described(tool)
        app.add_tool(wrapped, name=tool.__name__, description=tool.__doc__)
    return app


def _described(tool):
    """The tool's signature with every parameter's description (PARAMETERS) attached, for the client's schema."""
    import inspect
    import typing

    from pydantic import Field

    hints = typing.get_type_hints(tool)
    signature = inspect.signature(tool)
    return signature.replace(parameters=[
        p.replace(annotation=typing.Annotated[hints[p.name], Field(description=PARAMETERS[p.name])])
        for p in signature.parameters.values()], return_annotation=hints.get("return", signature.return_annotation))


def main(roots=()) -> None:
    """Serve over stdio, with problems only from `roots` (folders of problem folders)."""
    import shutil

    ROOTS[:] = [Path(os.path.realpath(r)) for r in roots]
    _SOURCES[:] = [Path(tempfile.mkdtemp(prefix="evolve-mcp-"))]  # 0700: this server's alone
    held = [r for r in ROOTS if r == _SOURCES[0] or r in _SOURCES[0].parents]
    if held:
        shutil.rmtree(_SOURCES[0], ignore_errors=True)
        raise SystemExit(f"evolve mcp: the problem root {held[0]} holds the folder the server keeps sources in "
                         f"({_SOURCES[0].parent}): name the problem folders themselves")
    try:
        server().run("stdio")
    finally:
        shutil.rmtree(_SOURCES[0], ignore_errors=True)
