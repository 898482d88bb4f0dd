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

from .tool_answers import LAST_RUNG, asm_answer, compile_device, default_cases, ladder_answer
from .tool_registry import PARAMETERS
from .tool_registry import TOOLS as REGISTRY

DEFAULT_DB = "runs/evolve.db"
ASM_CHARS = 200_000  # most characters of one asm answer
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
    """`evolve eval --json` on a candidate; its answer (tool_answers.py)."""
    return ladder_answer("evaluate", _verdict(problem, candidate, source, language, device))


def compile_version(problem: str, candidate: str | None = None, source: str | None = None,
                    language: str | None = None) -> str:
    """The load and compile rungs (the `compile` tool)."""
    return ladder_answer("compile", _verdict(problem, candidate, source, language, _compile_device(problem, language),
                                             last_rung=LAST_RUNG["compile"]))


def check(problem: str, candidate: str | None = None, source: str | None = None, language: str | None = None) -> str:
    """The rungs up to correctness, untimed."""
    return ladder_answer("check", _verdict(problem, candidate, source, language, "auto", last_rung=LAST_RUNG["check"]))


def time_cases(problem: str, candidate: str | None = None, source: str | None = None, language: str | None = None,
         cases: list[str] | None = None) -> str:
    """One or two benchmark cases timed: advice."""
    from .harness.parent.ladder import on_gpu

    labels = list(cases or ()) or default_cases(_loaded(problem), on_gpu("auto"))
    if len(labels) > 2:
        raise CommandFailed("time takes at most two cases: evaluate times every one")
    return ladder_answer("time", _verdict(problem, candidate, source, language, "auto", cases=labels))


def _loaded(problem: str):
    from .harness import load_problem

    return load_problem(_problem(problem))


def _compile_device(problem: str, language: str | None) -> str:
    from .lang import UnknownLanguage

    try:
        return compile_device(language or _loaded(problem).languages[0], "auto")
    except UnknownLanguage as exc:
        raise CommandFailed(str(exc)) from None


def _verdict(problem: str, candidate: str | None, source: str | None, language: str | None, device: str,
             last_rung: str = "benchmark", cases=(), dump: Path | None = None) -> dict:
    """`evolve eval --json` in a child process, its verdict as written."""
    problem = _problem(problem)
    with _source_folder() as folder:
        path = _candidate_file(candidate, source, folder)
        args = ["eval", "--json", "--device", device, "--stop-after", last_rung,
                *(["--language", language] if language else []), *(f"--case={c}" for c in cases),
                *([f"--dump={dump}"] if dump else []), "--", path, problem]
        out = _checked(*args, ok=(0, 1))
    try:  # the verdict's JSON, and after it what the command said on stderr
        return json.JSONDecoder().raw_decode(out[out.index("{"):])[0]
    except ValueError:
        raise CommandFailed(out[-2000:]) from None


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


def asm(candidate_id: int | None = None, problem: str | None = None, candidate: str | None = None,
        source: str | None = None, language: str | None = None, kind: str = "sass", kernel: str | None = None,
        db: str = DEFAULT_DB) -> str:
    """An archived candidate's (`evolve show --asm`), or a program's compiled now into the server's own folder."""
    if candidate_id is not None:
        if candidate or source:
            raise CommandFailed("give candidate_id, or a candidate file or source with problem, not both")
        return _checked("show", "--db", db, "--asm", kind, *(["--kernel", kernel] if kernel else []), "--",
                        str(int(candidate_id)))
    if not problem:
        raise CommandFailed("give candidate_id, or a candidate file or source together with problem")
    with _source_folder() as folder:
        dump = Path(folder) / "compiled"
        verdict = _verdict(problem, candidate, source, language, _compile_device(problem, language),
                           last_rung=LAST_RUNG["asm"], dump=dump)
        names = sorted(os.listdir(dump)) if dump.is_dir() else []
        if not names:
            return ladder_answer("compile", verdict)  # it did not compile: why
        text = asm_answer(names, lambda name: (dump / name).read_bytes(), kind, kernel, "this program")
    return text[:ASM_CHARS] + ("\n[... cut]" if len(text) > ASM_CHARS else "")


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
    """`evolve trace` on an archived candidate (candidate_id), or on a file or source with its problem."""
    return _looked_at("trace", candidate_id, candidate, source, problem, case, db)


def profile(candidate_id: int | None = None, candidate: str | None = None, source: str | None = None,
            problem: str | None = None, case: str | None = None, db: str = DEFAULT_DB) -> str:
    """`evolve profile` on an archived candidate (candidate_id), or on a file or source with its problem."""
    return _looked_at("profile", candidate_id, candidate, source, problem, case, db)


def search_context(query: str, language: str = "triton", limit: int = 4) -> list[dict]:
    """Passages of evolve's notes for a language and the language's installed sources that match the words."""
    return [{"path": h.path, "lines": f"{h.start}-{h.end}", "title": h.title, "text": h.text}
            for h in _index(language).search(query, limit)]


def read_context(path: str, start_line: int = 1, end_line: int = 80, language: str = "triton") -> str:
    """Lines of a file search_context found (its path as search_context gives it)."""
    return _index(language).read(path, start_line, end_line)


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


# the registry's tools (tool_registry.py) as this server implements them
TOOLS = {"evaluate": evaluate, "compile": compile_version, "check": check, "time": time_cases, "asm": asm,
         "profile": profile, "trace": trace, "search_context": search_context, "read_context": read_context,
         "list_problems": list_problems, "read_problem": read_problem, "show": show, "best": best,
         "leaderboard": leaderboard, "hint": hint, "pause": pause, "resume": resume}


def server():
    """The MCP server with every tool above; a CommandFailed becomes the tool's error, and the server goes on."""
    import functools

    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError

    app = MCPServer("evolve", instructions="Evaluate GPU kernels against evolve problems through its sealed rung "
                                           "ladder, read problems and context notes, and inspect or steer runs.")
    for name, tool in TOOLS.items():
        @functools.wraps(tool)
        def wrapped(*args, _tool=tool, _name=name, **kwargs):
            try:
                return _tool(*args, **kwargs)
            except CommandFailed as exc:
                raise ToolError(str(exc)) from None
            except Exception as exc:  # noqa: BLE001 - said to the client, whatever it was; the server goes on
                raise ToolError(f"{_name} failed: {type(exc).__name__}: {exc}"[:2000]) from None

        wrapped.__signature__ = _described(tool)
        app.add_tool(wrapped, name=name, description=REGISTRY[name].description)
    return app


def _described(tool):
    """The tool's signature with every parameter's description (PARAMETERS) attached, for the client's schema."""
    import inspect
    import typing

    from pydantic import Field

    hints = typing.get_type_hints(tool)
    signature = inspect.signature(tool)
    return signature.replace(parameters=[
        p.replace(annotation=typing.Annotated[hints[p.name], Field(description=PARAMETERS[p.name].description)])
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
