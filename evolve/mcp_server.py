"""`evolve mcp`: evolve's tools for a coding agent (Claude Code, Cursor, any MCP client), over stdio.

Every tool that touches a candidate, a run or an archive runs evolve's own command in a child process (`evolve eval
--json`, `evolve show`, `evolve leaderboard --json`, ...): the same sealed harness, nothing the server does trusted more
than the command line, and a crash or a hang of one call never takes the server down. Problems and the context notes
are read in the server itself (files, no candidate code)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

DEFAULT_DB = "runs/evolve.db"
CALL_TIMEOUT_S = 3600  # one evaluation's own limits are the harness's; this bounds a call that never returns


class CommandFailed(Exception):
    """An evolve command ended with an error: its last lines say why."""


def _evolve(*args: str, timeout: float = CALL_TIMEOUT_S) -> tuple[int, str]:
    """(exit code, output) of `evolve ARGS` in a child process."""
    try:
        done = subprocess.run([sys.executable, "-m", "evolve.cli", *args], capture_output=True, text=True,
                              timeout=timeout, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    except subprocess.TimeoutExpired:
        raise CommandFailed(f"evolve {args[0]} took longer than {timeout:.0f} s") from None
    return done.returncode, (done.stdout + done.stderr).strip()


def _checked(*args: str, ok=(0,)) -> str:
    code, out = _evolve(*args)
    if code not in ok:
        raise CommandFailed("\n".join(out.splitlines()[-12:]) or f"evolve {args[0]} exited with {code}")
    return out


def _candidate_file(candidate: str | None, source: str | None, folder: str) -> str:
    if bool(candidate) == bool(source):
        raise CommandFailed("give exactly one of candidate (a path to a .py file) and source (the file's text)")
    if candidate:
        if not Path(candidate).is_file():
            raise CommandFailed(f"{candidate}: no such file")
        return candidate
    path = Path(folder) / "candidate.py"
    path.write_text(source)
    return str(path)


def evaluate(problem: str, candidate: str | None = None, source: str | None = None, language: str | None = None,
             device: str = "auto") -> dict:
    """The whole rung ladder (load, compile, run, correctness, benchmark, roofline) for a candidate file or source
    against a problem folder, as `evolve eval --json` gives it."""
    with tempfile.TemporaryDirectory(prefix="evolve-mcp-") as folder:
        path = _candidate_file(candidate, source, folder)
        args = ["eval", path, problem, "--json", "--device", device] + (["--language", language] if language else [])
        out = _checked(*args, ok=(0, 1))
    try:
        return json.loads(out[out.index("{"):])
    except ValueError:
        raise CommandFailed(out[-2000:]) from None


def compile_only(problem: str, candidate: str | None = None, source: str | None = None,
                 language: str | None = None) -> dict:
    """The load and compile rungs as a machine without a GPU runs them: the kernels built for sm_90a, with their
    registers, spills and shared memory; nothing is timed. (A Triton candidate's kernels also run under the CPU
    interpreter meanwhile, which takes longer; only those two rungs come back.)"""
    verdict = evaluate(problem, candidate, source, language, device="cpu")
    rungs = [r for r in verdict.get("rungs", []) if r.get("name") in ("load", "compile")]
    return {"ok": all(r.get("status") == "ok" for r in rungs) and len(rungs) == 2, "rungs": rungs,
            "kernels": verdict.get("kernels", [])}


def list_problems(folder: str = "problems") -> list[dict]:
    """The problem folders under `folder`: name, languages and the description's first sentence."""
    from .harness import load_problem

    found = []
    for path in sorted(p for p in Path(folder).iterdir() if (p / "problem.toml").is_file()):
        try:
            problem = load_problem(path)
        except Exception as exc:  # noqa: BLE001 - a malformed folder is listed with its error
            found.append({"path": str(path), "error": str(exc)[:300]})
            continue
        found.append({"path": str(path), "name": problem.name, "languages": list(problem.languages),
                      "description": problem.description.strip().split(". ")[0][:300]})
    return found


def read_problem(problem: str) -> dict:
    """A problem folder's problem.toml, reference.py and notes.md, as text."""
    folder = Path(problem)
    if not (folder / "problem.toml").is_file():
        raise CommandFailed(f"{problem}: no problem.toml (list_problems shows the problems)")
    return {name: (folder / name).read_text() for name in ("problem.toml", "reference.py", "notes.md")
            if (folder / name).is_file()}


def show(candidate_id: int, db: str = DEFAULT_DB) -> str:
    """One archived candidate: source, lineage, rung ladder and per-case figures (`evolve show ID --no-prompt`)."""
    return _checked("show", str(int(candidate_id)), "--db", db, "--no-prompt")


def asm(candidate_id: int, kind: str = "sass", kernel: str | None = None, db: str = DEFAULT_DB) -> str:
    """What the compiler produced for an archived candidate (sass, ptx, ...), per kernel specialization."""
    return _checked("show", str(int(candidate_id)), "--db", db, "--asm", kind, *(["--kernel", kernel] if kernel else []))


def _looked_at(command: str, candidate_id: int | None, candidate: str | None, source: str | None,
               problem: str | None, case: str | None, db: str) -> str:
    """`evolve trace|profile` on an archived candidate (candidate_id) or on a file or source against a problem."""
    tail = ["--case", case] if case else []
    if candidate_id is not None:
        if candidate or source:
            raise CommandFailed("give candidate_id, or a candidate file or source with problem, not both")
        return _checked(command, str(int(candidate_id)), "--db", db, *tail)
    if not problem:
        raise CommandFailed("give candidate_id, or a candidate file or source together with problem")
    with tempfile.TemporaryDirectory(prefix="evolve-mcp-") as folder:
        return _checked(command, _candidate_file(candidate, source, folder), "--problem", problem, *tail)


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
    return _checked("best", problem, "--db", db, "--no-verify")


def leaderboard(db: str = DEFAULT_DB) -> list:
    """Models per problem and device in an archive, as `evolve leaderboard --json` gives it."""
    out = _checked("leaderboard", "--db", db, "--json")
    return json.loads(out[out.index("["):]) if "[" in out else []


def hint(text: str, db: str = DEFAULT_DB, run: int | None = None) -> str:
    """Tell a run something while it goes on: every prompt it writes from now on carries the hint."""
    return _checked("hint", text, "--db", db, *(["--run", str(int(run))] if run else []))


def pause(db: str = DEFAULT_DB, run: int | None = None) -> str:
    """Pause a run's proposals (what is in flight finishes); `resume` lets it go on."""
    return _checked("pause", "--db", db, *(["--run", str(int(run))] if run else []))


def resume(db: str = DEFAULT_DB, run: int | None = None) -> str:
    """Let a run paused by `pause` go on proposing."""
    return _checked("resume", "--db", db, *(["--run", str(int(run))] if run else []))


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

        app.add_tool(wrapped, name=tool.__name__, description=tool.__doc__)
    return app


def main() -> None:
    server().run("stdio")
