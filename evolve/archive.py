"""The archive: every run, candidate, LLM exchange and verdict of a search, in one SQLite file.

Its tables and their migrations are in evolve/archive_schema.py; opening the file, the lock of a run and the
transactions in evolve/archive_file.py (`ArchiveFile`). `Archive` is that file with its runs and candidates (and the
best it reports); the side records (compiler artifacts, profiles, traces, launch audits, re-timings, hints,
lessons) are the stores it holds, in evolve/archive_records.py."""

from __future__ import annotations

import ast
import hashlib
import json
import sqlite3
from dataclasses import dataclass
from typing import TypedDict

from .archive_file import ArchiveFile
from .archive_records import CompilerArtifacts, Hints, LaunchAudits, Lessons, Profiles, Retimes, Traces
from .archive_schema import ArchiveError, now
from .harness.parent.verdict import Verdict
from .redact import strip_secret_keys


class RunRow(TypedDict, total=False):
    """One run as the archive returns it (run, last_run, runs)."""
    id: int
    problem: str
    problem_path: str
    options: dict  # the run's options, secrets stripped
    device: str  # where it evaluated: the card's name, or the interpreter's
    versions: dict  # package -> version
    started: str
    ended: str | None  # None while it runs (or after a crash)
    stop_reason: str | None
    paused: int  # 1 while `evolve pause` holds it
    gaps: list  # [stopped, resumed] instants: time it was not running
    language: str  # the candidate language it asked for (evolve/lang)
    best_id: int | None  # the candidate it reported as its best when it last stopped
    candidates: int  # runs() only, from here on
    evaluated: int
    correct: int
    best_score: float | None  # of the kernel it reported (best_id), else the highest correct one
    best_fitness: float | None  # the same kernel's fraction of the roofline
    cost: float
    tokens: int
    pending: int


@dataclass(frozen=True)
class Candidate:
    id: int
    run_id: int
    hash: str
    source: str | None
    parent_ids: tuple[int, ...]
    island: int
    generation: int
    proposer: str
    model: str | None
    template: str | None
    prompt: str | None
    reply: str | None
    tokens_in: int
    tokens_out: int
    cost: float
    latency_s: float
    knobs: dict | None
    status: str
    error: str | None
    ok: bool | None
    fitness: float | None
    score: float | None
    failed_rung: str | None
    reason: str | None
    created: str
    hint_ids: tuple[int, ...] = ()  # the person's hints its prompt carried


# --- duplicate detection ----------------------------------------------------------------------------------------

def _strip_docstrings(tree: ast.AST) -> ast.AST:
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                node.body = body[1:] or ([] if isinstance(node, ast.Module) else [ast.Pass()])
    return tree


def normalize_source(source: str) -> str:
    """The source without comments, docstrings or formatting differences; unparseable source is only stripped."""
    try:
        return ast.unparse(_strip_docstrings(ast.parse(source)))
    except (SyntaxError, ValueError, RecursionError):
        return "\n".join(line.rstrip() for line in source.strip().splitlines())


def source_hash(source: str) -> str:
    return hashlib.sha256(normalize_source(source).encode()).hexdigest()


# --- helpers ----------------------------------------------------------------------------------------------------

def _instant(text: str):
    import datetime

    return datetime.datetime.fromisoformat(text)


_COLUMNS = [f for f in Candidate.__dataclass_fields__]
_SELECT = "SELECT " + ", ".join(f"c.{c}" for c in _COLUMNS) + " FROM candidates c JOIN runs r ON r.id = c.run_id"
_NOT_FAILED = "c.id NOT IN (SELECT candidate_id FROM launch_audits WHERE status = 'failed')"
_REPORTED_OK = _NOT_FAILED.replace("c.id", "b.id")  # the run's reported best (standing.py), where it still stands


def _candidate(row: sqlite3.Row) -> Candidate:
    d = dict(zip(_COLUMNS, row))
    d["parent_ids"] = tuple(json.loads(d["parent_ids"] or "[]"))
    d["knobs"] = json.loads(d["knobs"]) if d["knobs"] is not None else None
    d["ok"] = None if d["ok"] is None else bool(d["ok"])
    d["hint_ids"] = tuple(json.loads(d["hint_ids"] or "[]"))
    return Candidate(**d)


# --- the archive ------------------------------------------------------------------------------------------------

class Archive(ArchiveFile):
    """One SQLite file with its runs and candidates, and the stores of its side records. Hands out frozen Candidates;
    every write commits before the method returns."""

    def __init__(self, path, read_only: bool = False):
        """`read_only`: as ArchiveFile's."""
        super().__init__(path, read_only)
        self.artifacts = CompilerArtifacts(self)
        self.profiles = Profiles(self)
        self.traces = Traces(self)
        self.launch_audits = LaunchAudits(self)
        self.retimes = Retimes(self)
        self.hints = Hints(self)
        self.lessons = Lessons(self)

    # runs --------------------------------------------------------------------------------------------------------

    def start_run(self, problem: str, problem_path: str, options: dict, device: str, versions: dict,
                  language: str = "triton") -> int:
        row = [problem, str(problem_path), json.dumps(strip_secret_keys(options or {}), default=str), device,
               json.dumps(versions or {}, default=str), now(), language]
        return self.write(lambda c: c.execute(
            "INSERT INTO runs (problem, problem_path, options, device, versions, started, language) "
            "VALUES (?,?,?,?,?,?,?)", row).lastrowid)

    @staticmethod
    def _run_dict(row: dict) -> RunRow:
        for key in ("options", "versions"):
            row[key] = json.loads(row[key]) if row[key] else {}
        if "gaps" in row:
            row["gaps"] = json.loads(row["gaps"]) if row["gaps"] else []
        return row

    def run(self, run_id: int) -> RunRow:
        rows = self.dicts("SELECT * FROM runs WHERE id = ?", [run_id])
        if not rows:
            raise ArchiveError(f"no run {run_id} in {self.path}")
        return self._run_dict(rows[0])

    def last_run(self, problem: str) -> RunRow | None:
        rows = self.dicts("SELECT * FROM runs WHERE problem = ? ORDER BY id DESC LIMIT 1", [problem])
        return self._run_dict(rows[0]) if rows else None

    def reopen_run(self, run_id: int) -> None:
        """A resumed run is running again: no end time, no stop reason until it stops. The time since it stopped
        (after a crash: since its last stored candidate) is recorded as a gap."""
        def write(c):
            row = c.execute("SELECT started, ended, gaps FROM runs WHERE id = ?", [run_id]).fetchone()
            if row is None:
                return
            gaps = json.loads(row[2] or "[]")
            # the last sign of work: a stored candidate, a verdict, the previous resume (or the start)
            last = c.execute("SELECT max(created) FROM candidates WHERE run_id = ?", [run_id]).fetchone()[0]
            judged = c.execute("SELECT max(e.created) FROM evaluations e JOIN candidates c ON c.id = e.candidate_id "
                               "WHERE c.run_id = ?", [run_id]).fetchone()[0]
            since = row[1] or max(filter(None, [last, judged, row[0], gaps[-1][1] if gaps else None]),
                                  key=_instant)
            gaps.append([since, now()])
            c.execute("UPDATE runs SET ended = NULL, stop_reason = NULL, paused = 0, gaps = ? WHERE id = ?",
                      [json.dumps(gaps), run_id])
        self.write(write)

    def finish_run(self, run_id: int, stop_reason: str, best_id: int | None = None) -> None:
        """The run stopped, and what it reported as its best (None: none, or a stop that chose none)."""
        self.write(lambda c: c.execute("UPDATE runs SET ended = ?, stop_reason = ?, paused = 0, best_id = ? "
                                        "WHERE id = ?", [now(), stop_reason, best_id, run_id]))

    def runs(self) -> list[RunRow]:
        """Every run, with its candidates counted (the fields RunRow marks as runs() only)."""
        return [self._run_dict(r) for r in self.dicts(f"""
            SELECT r.*, count(c.id) AS candidates,
                   coalesce(sum(c.status = 'evaluated'), 0) AS evaluated, coalesce(sum(c.ok = 1), 0) AS correct,
                   coalesce((SELECT b.score FROM candidates b WHERE b.id = r.best_id AND b.ok = 1 AND {_REPORTED_OK}),
                            max(CASE WHEN c.ok = 1 AND {_NOT_FAILED} THEN c.score END)) AS best_score,
                   coalesce((SELECT b.fitness FROM candidates b WHERE b.id = r.best_id AND b.ok = 1 AND {_REPORTED_OK}),
                            max(CASE WHEN c.ok = 1 AND {_NOT_FAILED} THEN c.fitness END)) AS best_fitness,
                   coalesce(sum(c.cost), 0.0) AS cost, coalesce(sum(c.tokens_in + c.tokens_out), 0) AS tokens,
                   coalesce(sum(c.status = 'pending'), 0) AS pending
            FROM runs r LEFT JOIN candidates c ON c.run_id = r.id GROUP BY r.id ORDER BY r.id""")]

    # candidates --------------------------------------------------------------------------------------------------

    def add_candidate(self, run_id: int, *, source: str | None, parent_ids=(), island: int = 0,
                      generation: int = 0, proposer: str = "llm", model: str | None = None,
                      template: str | None = None, prompt: str | None = None, reply: str | None = None,
                      tokens_in: int = 0, tokens_out: int = 0, cost: float = 0.0, latency_s: float = 0.0,
                      knobs: dict | None = None, error: str | None = None,
                      within_run: bool = False, hint_ids=(), tool_log=()) -> Candidate | None:
        """Store a proposal. Invalid ones (no source, or an error) are always stored; a source whose hash is
        already in any run of the same problem on the same device (in this run only, with `within_run`) is a
        duplicate: None comes back, and it is stored only as the record of a paid call (an invalid row, "a
        duplicate of #N", with its tokens and cost, so spend sums stay whole) when it has tokens or cost. (A kernel
        measured on another device is not a duplicate: its figures say nothing about this one.)"""
        invalid = source is None or error is not None
        if source is None and error is None:
            error = "no source"
        digest = "" if source is None else source_hash(source)
        row = dict(run_id=run_id, hash=digest, source=source, parent_ids=json.dumps([int(p) for p in parent_ids]),
                   island=island, generation=generation, proposer=proposer, model=model, template=template,
                   prompt=prompt, reply=reply, tokens_in=int(tokens_in or 0), tokens_out=int(tokens_out or 0),
                   cost=float(cost or 0.0), latency_s=float(latency_s or 0.0),
                   knobs=None if knobs is None else json.dumps(knobs, default=str),
                   status="invalid" if invalid else "pending", error=error, created=now(),
                   hint_ids=json.dumps([int(h) for h in hint_ids]) if hint_ids else None)

        def put(c: sqlite3.Connection, fields: dict) -> int:
            """The candidate row and its tool calls."""
            new = c.execute(f"INSERT INTO candidates ({', '.join(fields)}) VALUES ({', '.join('?' * len(fields))})",
                            list(fields.values())).lastrowid
            c.executemany("INSERT INTO tool_calls (candidate_id, round, name, arguments, result, result_chars, "
                          "tokens_in, tokens_out, cost, seconds) VALUES (?,?,?,?,?,?,?,?,?,?)",
                          [[new, int(t["round"]), str(t["name"])[:100], str(t["arguments"])[:1000],
                            str(t["result"])[:4000], int(t["result_chars"]), int(t["tokens_in"]),
                            int(t["tokens_out"]), float(t["cost"]), float(t.get("seconds", 0.0))]
                           for t in tool_log])
            return new

        def insert(c: sqlite3.Connection) -> int | None:
            problem = c.execute("SELECT problem, device FROM runs WHERE id = ?", [run_id]).fetchone()
            if problem is None:
                raise ArchiveError(f"no run {run_id} in {self.path}")
            same = None
            if not invalid and within_run:
                same = c.execute("SELECT id FROM candidates WHERE hash = ? AND run_id = ? AND status != 'invalid' "
                                 "LIMIT 1", [digest, run_id]).fetchone()
            elif not invalid:
                same = c.execute(
                    "SELECT c.id FROM candidates c JOIN runs r ON r.id = c.run_id WHERE c.hash = ? AND r.problem = ? "
                    "AND r.device IS ? AND c.status != 'invalid' LIMIT 1", [digest, *problem]).fetchone()
            if same is not None:
                if row["cost"] or row["tokens_in"] or row["tokens_out"]:  # a model was paid for it: keep the record
                    put(c, {**row, "status": "invalid", "hash": "", "error": f"a duplicate of #{same[0]}"})
                return None
            return put(c, row)

        new_id = self.write(insert)
        return None if new_id is None else self.get(new_id)

    def record_verdict(self, candidate_id: int, verdict: Verdict, score: float | None = None) -> Candidate:
        """Store the harness verdict (replacing an earlier one) and update the candidate from it; `score` is what
        the search ranks by (kept only for a passing verdict)."""
        ok = verdict.ok
        fitness = verdict.fitness
        score = score if ok else None
        failure = verdict.failure
        failed_rung, reason = (failure.name, failure.reason) if failure else (None, None)
        seconds = sum(r.seconds for r in verdict.rungs)
        verdict_json = json.dumps(verdict.to_json(), default=str)

        def update(c: sqlite3.Connection) -> None:
            status = c.execute("SELECT status FROM candidates WHERE id = ?", [candidate_id]).fetchone()
            if status is None:
                raise ArchiveError(f"no candidate {candidate_id} in {self.path}")
            if status[0] == "invalid":
                raise ArchiveError(f"candidate {candidate_id} in {self.path} is invalid (no usable source); "
                                   "there is nothing to evaluate")
            c.execute("INSERT OR REPLACE INTO evaluations (candidate_id, verdict_json, seconds, created) "
                      "VALUES (?,?,?,?)", [candidate_id, verdict_json, seconds, now()])
            c.execute("UPDATE candidates SET status = 'evaluated', ok = ?, fitness = ?, score = ?, failed_rung = ?, "
                      "reason = ? WHERE id = ?", [ok, fitness, score, failed_rung, reason, candidate_id])

        self.write(update)
        return self.get(candidate_id)

    def pending(self, run_id: int) -> list[Candidate]:
        """Candidates stored but never evaluated, oldest first: what a crash left in flight."""
        return [_candidate(r) for r in self.query(
            _SELECT + " WHERE c.run_id = ? AND c.status = 'pending' ORDER BY c.id", [run_id])]

    def get(self, candidate_id: int) -> Candidate:
        rows = self.query(_SELECT + " WHERE c.id = ?", [candidate_id])
        if not rows:
            raise ArchiveError(f"no candidate {candidate_id} in {self.path}")
        return _candidate(rows[0])

    def candidates(self, run_id: int | None = None, problem: str | None = None,
                   device: str | None = None, language: str | None = None) -> list[Candidate]:
        """Candidates oldest first, of one run, of one problem, of runs on one device and of runs in one language
        (each filter optional)."""
        where, params = [], []
        if language is not None:
            where.append("r.language = ?")
            params.append(language)
        if device is not None:
            where.append("r.device = ?")
            params.append(device)
        if run_id is not None:
            where.append("c.run_id = ?")
            params.append(run_id)
        if problem is not None:
            where.append("r.problem = ?")
            params.append(problem)
        sql = _SELECT + (" WHERE " + " AND ".join(where) if where else "") + " ORDER BY c.id"
        return [_candidate(r) for r in self.query(sql, params)]

    def best(self, problem: str, run_id: int | None = None, language: str | None = None) -> Candidate | None:
        """The ok candidate with the highest score (ties: the oldest), in one run or across the problem (in one
        language, if given); never one that failed a launch audit."""
        sql = _SELECT + " WHERE r.problem = ? AND c.ok = 1 AND " + _NOT_FAILED
        params: list = [problem]
        if language is not None:
            sql += " AND r.language = ?"
            params.append(language)
        if run_id is not None:
            sql += " AND c.run_id = ?"
            params.append(run_id)
        rows = self.query(sql + " ORDER BY c.score IS NULL, c.score DESC, c.id LIMIT 1", params)
        return _candidate(rows[0]) if rows else None

    def evaluation(self, candidate_id: int) -> dict | None:
        """The stored verdict as written (JSON), or None before evaluation."""
        rows = self.query("SELECT verdict_json FROM evaluations WHERE candidate_id = ?", [candidate_id])
        return json.loads(rows[0][0]) if rows else None

    def verdict(self, candidate_id: int) -> Verdict | None:
        """The stored verdict, typed (verdicts from earlier versions read with their gaps), or None."""
        stored = self.evaluation(candidate_id)
        return Verdict.from_json(stored) if stored else None

    def spend(self, run_id: int) -> dict:
        """LLM spend of a run: cost, tokens and the number of LLM calls (failed ones included)."""
        cost, tin, tout, calls = self.query(
            "SELECT coalesce(sum(cost), 0.0), coalesce(sum(tokens_in), 0), coalesce(sum(tokens_out), 0), "
            "coalesce(sum(proposer = 'llm'), 0) FROM candidates WHERE run_id = ?", [run_id])[0]
        return {"cost": float(cost), "tokens_in": int(tin), "tokens_out": int(tout), "calls": int(calls)}

    def tool_calls(self, candidate_id: int) -> list[dict]:
        """The tools a model called while writing the proposal (stored with it by add_candidate), each with its
        round, arguments, result, the asking call's tokens and cost, and the seconds it took."""
        return self.dicts("SELECT * FROM tool_calls WHERE candidate_id = ? ORDER BY id", [candidate_id])

    # a run's pause switch (`evolve pause`), its timeline, the sources already proposed ----------------------------

    def set_paused(self, run_id: int, paused: bool) -> None:
        self.run(run_id)
        self.write(lambda c: c.execute("UPDATE runs SET paused = ? WHERE id = ?", [int(paused), run_id]))

    def paused(self, run_id: int) -> bool:
        rows = self.query("SELECT paused FROM runs WHERE id = ?", [run_id])
        return bool(rows and rows[0][0])

    def timeline(self, run_id: int) -> list[dict]:
        """A run's candidates in the order they were proposed, without sources or prompts: what a leaderboard and its
        curves read (lineage, proposer, model, verdict summary, tokens, cost, when proposed, evaluation seconds, the
        seconds its tool calls took in all (an agent session's compiles and checks), and its launch audit's status:
        "failed" if any failed, else the latest, None when there is none)."""
        rows = self.dicts(
            "SELECT c.id, c.parent_ids, c.island, c.generation, c.proposer, c.model, c.template, c.tokens_in, "
            "c.tokens_out, c.cost, c.latency_s, c.status, c.ok, c.fitness, c.score, c.failed_rung, c.reason, "
            "c.created, e.seconds AS eval_seconds, (SELECT coalesce(sum(t.seconds), 0.0) FROM tool_calls t "
            "WHERE t.candidate_id = c.id) AS tool_seconds, (SELECT a.status FROM launch_audits a "
            "WHERE a.candidate_id = c.id ORDER BY a.status = 'failed' DESC, a.id DESC LIMIT 1) AS audit "
            "FROM candidates c LEFT JOIN evaluations e ON e.candidate_id = c.id WHERE c.run_id = ? ORDER BY c.id",
            [run_id])
        for row in rows:
            row["parent_ids"] = json.loads(row["parent_ids"] or "[]")
            row["ok"] = None if row["ok"] is None else bool(row["ok"])
        return rows

    def known_hashes(self, problem: str, device: str | None = None) -> set[str]:
        """Hashes of every valid source already proposed for the problem, in any run (on one device, if given)."""
        return {r[0] for r in self.query(
            "SELECT DISTINCT c.hash FROM candidates c JOIN runs r ON r.id = c.run_id "
            "WHERE r.problem = ? AND c.status != 'invalid'" + (" AND r.device = ?" if device is not None else ""),
            [problem] + ([device] if device is not None else []))}
