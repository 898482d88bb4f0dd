"""A searchable context for the model: folders of notes and examples, a full-text index, and the tools that read them.

Folders, in this order: the project's `context/` (Triton on Hopper, a PTX and SASS reading guide), the problem's own
`context/` where it has one, and every `--context DIR` a user gives (a clone of a library's examples, say). Text files
(.md, .rst, .txt, .py, .cu, .cuh, .h, .c, .cpp, .ptx, .toml, .yml) are split into chunks (markdown at its headings,
other files in windows of lines) and indexed with SQLite's FTS5 through sqlite-utils (porter stemming, bm25 ranking),
in memory; a query's words are OR-ed, so more matching words rank higher and one unknown word does not empty the
answer.

Models that support function calling (litellm's `supports_function_calling`, or `--tools on`) get three tools:

    search_context(query, limit)           the best chunks: path, lines, heading, a bounded excerpt
    read_context(path, start_line, end_line)   lines of an indexed file (at most READ_LINES)
    read_parent(what, kernel)              the parent's SASS digest, SASS, PTX or TTGIR (bounded), or its profile

Models without it get the best few chunks for a query made from the problem and the parent's digest, in the prompt
(`prompts/_context.j2`). Every tool round is bounded (`--tool-rounds`) and archived with its tokens and cost.
"""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from .tool_registry import PROPOSAL, SESSION_FIXED, functions

SUFFIXES = {".md", ".rst", ".txt", ".py", ".cu", ".cuh", ".h", ".c", ".cpp", ".ptx", ".toml", ".yml", ".yaml"}
MAX_FILE_BYTES = 512 << 10
MAX_FILES = 5000
WINDOW = 60  # lines per chunk of a file that is not markdown
SECTION_LINES = 80  # a markdown section longer than this is split
READ_LINES = 200  # most lines read_context returns
EXCERPT_CHARS = 1200  # most characters of a chunk in a search answer
RESULT_CHARS = 12000  # most characters of any one tool result


def project_context() -> Path:
    """`context/` of a source checkout (or an editable install), else the copy a wheel installs as
    `evolve/context_docs`."""
    installed = Path(__file__).resolve().parent / "context_docs"
    return installed if installed.is_dir() else Path(__file__).resolve().parents[1] / "context"


@dataclass(frozen=True)
class Hit:
    path: str  # as shown to the model: "<folder name>/<relative path>"
    start: int  # first line, 1-based
    end: int  # last line
    title: str
    text: str  # the chunk, bounded

    def as_text(self) -> str:
        return f"{self.path}:{self.start}-{self.end} ({self.title})\n{self.text}"


def _chunks(path: Path, lines: list[str]):
    """(start, end, title, text) per chunk; lines 1-based, inclusive."""
    if path.suffix.lower() == ".md":
        heads = [i for i, line in enumerate(lines) if re.match(r"#{1,4} \S", line)]
        starts = sorted({0, *heads})
        for n, a in enumerate(starts):
            b = starts[n + 1] if n + 1 < len(starts) else len(lines)
            title = lines[a].lstrip("#").strip() if a in heads else path.stem
            for s in range(a, b, SECTION_LINES):
                e = min(b, s + SECTION_LINES)
                text = "\n".join(lines[s:e]).strip()
                if text:
                    yield s + 1, e, title, text
        return
    for s in range(0, len(lines), WINDOW):
        e = min(len(lines), s + WINDOW)
        names = [m.group(1) for m in (re.match(r"\s*(?:def|class|__global__\s+void|\.entry)\s+(\w+)", line)
                                      for line in lines[s:e]) if m]
        title = f"{path.name}: {', '.join(names[:3])}" if names else path.name
        text = "\n".join(lines[s:e]).strip()
        if text:
            yield s + 1, e, title, text


class ContextIndex:
    """The chunks of the given folders in an in-memory FTS5 table. `skipped` counts files left out (too large, not
    text, over MAX_FILES)."""

    def __init__(self, folders):
        import sqlite3
        import threading

        import sqlite_utils

        # proposals are written from worker threads: one connection, used under a lock
        self.db = sqlite_utils.Database(sqlite3.connect(":memory:", check_same_thread=False))
        self._lock = threading.Lock()
        self.files: dict[str, Path] = {}
        self.folders: list[Path] = []
        self.skipped = 0
        rows = []
        labels: set[str] = set()
        for folder in folders:
            folder = Path(folder).resolve()
            if not folder.is_dir() or folder in self.folders:
                continue
            self.folders.append(folder)
            if folder == project_context().resolve():
                label = "context"
            elif folder.name == "context":
                label = f"{folder.parent.name}/context"  # a problem's own notes
            else:
                label = folder.name
            base, n = label, 2
            while label in labels:  # two folders of one name keep apart
                label, n = f"{base}-{n}", n + 1
            labels.add(label)
            for root, dirs, files in os.walk(folder):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))  # .git and the like are not walked
                for name in sorted(files):
                    path = Path(root, name)
                    if name.startswith(".") or path.suffix.lower() not in SUFFIXES or not path.is_file():
                        continue
                    if len(self.files) >= MAX_FILES or path.stat().st_size > MAX_FILE_BYTES:
                        self.skipped += 1
                        continue
                    try:
                        lines = path.read_text(encoding="utf-8").splitlines()
                    except (OSError, UnicodeDecodeError):
                        self.skipped += 1
                        continue
                    shown = f"{label}/{path.relative_to(folder).as_posix()}"
                    self.files[shown] = path
                    for start, end, title, text in _chunks(path, lines):
                        rows.append({"path": shown, "start": start, "end": end, "title": title[:200], "text": text})
        table = self.db["chunks"]
        table.create({"id": int, "path": str, "start": int, "end": int, "title": str, "text": str}, pk="id")
        if rows:
            table.insert_all(rows)
        table.enable_fts(["title", "text"], tokenize="porter")

    def __len__(self) -> int:
        with self._lock:
            return self.db["chunks"].count

    def search(self, query: str, limit: int = 5) -> list[Hit]:
        words = re.findall(r"[A-Za-z0-9_]+", query or "")[:32]
        if not words:
            return []
        fts = " OR ".join('"' + w.replace('"', "") + '"' for w in words)
        # bm25 with a heading worth four times the body: a section about the words beats one that mentions them
        sql = ("SELECT chunks.* FROM chunks JOIN chunks_fts ON chunks_fts.rowid = chunks.rowid "
               "WHERE chunks_fts MATCH ? ORDER BY bm25(chunks_fts, 4.0, 1.0) LIMIT ?")
        with self._lock:
            cursor = self.db.execute(sql, [fts, max(1, min(int(limit), 10))])
            names = [d[0] for d in cursor.description]
            found = [dict(zip(names, row)) for row in cursor.fetchall()]
        return [Hit(r["path"], r["start"], r["end"], r["title"], _bounded(r["text"], EXCERPT_CHARS)) for r in found]

    def read(self, path: str, start: int, end: int) -> str:
        """Lines start..end (1-based, inclusive) of an indexed file, numbered; at most READ_LINES."""
        if path not in self.files:
            near = [p for p in self.files if Path(p).name == Path(str(path)).name]
            return (f"no indexed file {path!r}" + (f"; did you mean {near[0]!r}?" if near else "")
                    + " (paths are as search_context prints them)")
        lines = self.files[path].read_text(encoding="utf-8").splitlines()
        start = max(1, int(start))
        end = min(len(lines), int(end), start + READ_LINES - 1)
        if start > len(lines):
            return f"{path} has {len(lines)} lines"
        body = "\n".join(f"{n:5d}  {lines[n - 1]}" for n in range(start, end + 1))
        return f"{path}:{start}-{end} of {len(lines)}\n{body}"


def _bounded(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit].rstrip() + "\n[...]"


# -- tools ----------------------------------------------------------------------------------------------------------
TOOLS = functions(PROPOSAL, SESSION_FIXED)  # the run fixes the language (tool_registry.py)


def tool_arguments(arguments: str | dict) -> dict | str:
    """A tool call's arguments as a dict, or the error the model reads where they are not a JSON object."""
    try:
        args = json.loads(arguments) if isinstance(arguments, str) else dict(arguments or {})
        if not isinstance(args, dict):
            raise ValueError("arguments are not a JSON object")
    except (ValueError, TypeError) as exc:
        return f"error: the arguments are not JSON ({exc})"
    return args


class Toolbox:
    """Runs the tools for one proposal. `parent` reads the parent's artifacts: a callable (what, kernel) -> str."""

    def __init__(self, index: ContextIndex | None, parent=None):
        self.index = index
        self.parent = parent
        self.rounds: int | None = None  # an agent session's own bound on tool rounds (None: the proposer's)
        self.submitted: str | None = None  # an agent session's submission: the proposal ends with it

    @property
    def schemas(self) -> list[dict]:
        return TOOLS

    def over(self, tokens: int, dollars: float) -> str | None:
        """Why the proposal must end now (an agent session's bounds); a plain one is bounded by its rounds alone."""
        return None

    def run(self, name: str, arguments: str | dict) -> str:
        """The tool's answer as text (an error as text too: the model reads it and can try again)."""
        args = tool_arguments(arguments)
        if isinstance(args, str):
            return args

        def number(key: str, default: int) -> int:
            value = args.get(key, default)
            try:
                value = int(float(value))
            except (ValueError, TypeError, OverflowError):
                raise ValueError(f"{key} must be a whole number, not {str(value)[:40]!r}") from None
            return max(-10 ** 9, min(10 ** 9, value))

        try:
            if name == "search_context":
                if self.index is None:
                    return "no context folders are indexed"
                hits = self.index.search(str(args.get("query", "")), number("limit", 4) or 4)
                text = "\n\n".join(h.as_text() for h in hits) if hits else "no match; try other words"
            elif name == "read_context":
                if self.index is None:
                    return "no context folders are indexed"
                text = self.index.read(str(args.get("path", "")), number("start_line", 1),
                                       number("end_line", READ_LINES))
            elif name == "read_parent":
                if self.parent is None:
                    return "there is no current program (this is a first proposal)"
                text = self.parent(str(args.get("what", "")), args.get("kernel"))
            else:
                return f"error: no tool {name!r}; the tools are search_context, read_context and read_parent"
        except ValueError as exc:
            return f"error: {exc}"
        except Exception as exc:  # noqa: BLE001 - a tool's trouble is the model's to read, never the run's end
            return f"error: the tool failed ({type(exc).__name__}: {str(exc)[:200]})"
        return _bounded(text, RESULT_CHARS)


def references(index: ContextIndex, problem_name: str, description: str, digest=(), limit: int = 3) -> list[Hit]:
    """The passages for the prompt of a model without tools, taken in turn from three searches: the problem's name,
    what the parent's digest flags, the description's words."""
    queries = [problem_name.replace("_", " "), digest_words(digest), " ".join(description.split()[:30])]
    lists = [index.search(q, limit) if q.strip() else [] for q in queries]
    hits, seen = [], set()
    for rank in range(limit):
        for found in lists:
            if rank < len(found) and (found[rank].path, found[rank].start) not in seen and len(hits) < limit:
                seen.add((found[rank].path, found[rank].start))
                hits.append(found[rank])
    return hits


def digest_words(digest=()) -> str:
    """Search words for what a parent's SASS digest (KernelDigest.as_dict per specialization) flags: spills and
    local memory, global loads narrower than 128 bits, barriers in the hot loop; each once."""
    words = []
    for k in digest or ():
        total = k.get("total", {}) if isinstance(k, dict) else {}
        if k.get("spills") or total.get("local_loads") or total.get("local_stores"):
            words.append("spills local memory registers")
        loads = total.get("global_loads") or {}
        if loads and max(int(w) for w in loads) < 128:
            words.append("vectorized 128-bit loads contiguous")
        if (k.get("loop") or {}).get("barriers"):
            words.append("barriers reduction loop")
    return " ".join(dict.fromkeys(words))
