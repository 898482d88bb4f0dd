"""The archive's side records, beside its runs and candidates: each class reads and writes one table of the file
(evolve/archive_schema.py describes them), and an `Archive` holds one of each (``archive.artifacts``,
``archive.profiles``, ``archive.traces``, ``archive.launch_audits``, ``archive.retimes``, ``archive.hints``,
``archive.lessons``)."""

from __future__ import annotations

import json
import sqlite3
import zlib
from pathlib import Path

from .archive_file import ArchiveFile
from .archive_schema import ArchiveError, now
from .harness.parent.verdict import Verdict


class CompilerArtifacts:
    """The compiler's output for each evaluated candidate (``artifacts``): files kept compressed, within limits."""

    FILE_LIMIT = 16 << 20  # bytes: a bigger file is left out (and said so in index.txt's place)
    TOTAL_LIMIT = 64 << 20  # bytes per candidate, uncompressed

    def __init__(self, file: ArchiveFile):
        self._file = file

    def store(self, candidate_id: int, folder: Path) -> int:
        """Keep the plain files of `folder` (a dump the harness wrote) for this candidate, compressed, within the
        limits; returns how many were kept. Replaces what was stored for it before."""
        plain = {path.name: path for path in (folder.iterdir() if folder.is_dir() else [])
                 if path.is_file() and not path.is_symlink()}
        names = self._within_limits({name: path.stat().st_size for name, path in plain.items()})
        return self.store_files(candidate_id, {name: plain[name].read_bytes() for name in names})

    def _within_limits(self, sizes: dict[str, int]) -> list[str]:
        """The names kept, by name: none over FILE_LIMIT, TOTAL_LIMIT in all."""
        kept, total = [], 0
        for name in sorted(sizes):
            if sizes[name] > self.FILE_LIMIT or total + sizes[name] > self.TOTAL_LIMIT:
                continue
            total += sizes[name]
            kept.append(name)
        return kept

    def store_files(self, candidate_id: int, files: dict[str, bytes]) -> int:
        """Keep {name: bytes} as this candidate's compiler output, compressed, within the limits (by name); returns
        how many were kept. Replaces what was stored for it before."""
        rows = [[candidate_id, name, len(files[name]), zlib.compress(files[name], 6)]
                for name in self._within_limits({name: len(data) for name, data in files.items()})]

        def write(c: sqlite3.Connection) -> None:
            c.execute("DELETE FROM artifacts WHERE candidate_id = ?", [candidate_id])
            c.executemany("INSERT INTO artifacts (candidate_id, name, size, data) VALUES (?,?,?,?)", rows)

        self._file.write(write)
        return len(rows)

    def listing(self, candidate_id: int) -> list[dict]:
        """The stored files of a candidate: name and size (uncompressed), by name."""
        return self._file.dicts("SELECT name, size FROM artifacts WHERE candidate_id = ? ORDER BY name",
                                [candidate_id])

    def files(self, candidate_id: int) -> dict[str, bytes]:
        """Every stored file of a candidate, {name: bytes}."""
        rows = self._file.query("SELECT name, data FROM artifacts WHERE candidate_id = ?", [candidate_id])
        return {name: zlib.decompress(data) for name, data in rows}

    def read(self, candidate_id: int, name: str) -> bytes | None:
        """One stored file of a candidate, or None."""
        rows = self._file.query("SELECT data FROM artifacts WHERE candidate_id = ? AND name = ?", [candidate_id, name])
        return zlib.decompress(rows[0][0]) if rows else None


class _CaseResults:
    """A table of results on one benchmark case per candidate and device (``profiles``, ``traces``): advice for
    prompts and ``evolve show``, never part of a verdict."""

    TABLE = ""

    def __init__(self, file: ArchiveFile):
        self._file = file

    def latest(self, candidate_id: int) -> dict | None:
        """The candidate's latest row (summary decoded; a profile's report left out), or None."""
        rows = self._file.dicts("SELECT id, candidate_id, device, case_label, ok, seconds, message, summary, created "
                                f"FROM {self.TABLE} WHERE candidate_id = ? ORDER BY id DESC LIMIT 1", [candidate_id])
        if not rows:
            return None
        row = rows[0]
        row["summary"] = json.loads(row["summary"]) if row["summary"] else None
        return row

    def attempted(self, device: str) -> set[int]:
        """Candidates with an attempt on record on this device."""
        return {r[0] for r in self._file.query(f"SELECT DISTINCT candidate_id FROM {self.TABLE} WHERE device = ?",
                                               [device])}


class Profiles(_CaseResults):
    """Nsight Compute profiles of candidates (``profiles``, evolve/profiling.py)."""

    TABLE = "profiles"

    def store(self, candidate_id: int, device: str, result, case_label: str = "") -> None:
        """Keep a profiling.Result."""
        row = [candidate_id, device, case_label, int(result.ok), float(result.seconds), result.message or None,
               json.dumps(result.summary) if result.ok else None,
               zlib.compress(result.report.encode(), 6) if result.report else None, now()]
        self._file.write(lambda c: c.execute(
            "INSERT INTO profiles (candidate_id, device, case_label, ok, seconds, message, summary, report, created) "
            "VALUES (?,?,?,?,?,?,?,?,?)", row))


class Traces(_CaseResults):
    """Time inside candidates' kernels, per marked section (``traces``, evolve/tracing.py)."""

    TABLE = "traces"

    def store(self, candidate_id: int, device: str, result, case_label: str = "") -> None:
        """Keep a tracing result (a profiling.Result whose summary is tracing.parse's)."""
        row = [candidate_id, device, case_label, int(result.ok), float(result.seconds), result.message or None,
               json.dumps(result.summary) if result.ok else None, now()]
        self._file.write(lambda c: c.execute(
            "INSERT INTO traces (candidate_id, device, case_label, ok, seconds, message, summary, created) "
            "VALUES (?,?,?,?,?,?,?,?)", row))


class LaunchAudits:
    """What ran on the device during candidates' calls (``launch_audits``, evolve/launch_audit.py); a candidate with
    a failed one is never the best the archive reports."""

    def __init__(self, file: ArchiveFile):
        self._file = file

    def store(self, candidate_id: int, device: str, audit) -> None:
        """Keep a launch_audit.Audit."""
        row = [candidate_id, device, audit.status, audit.reason, json.dumps([list(k) for k in audit.kernels]),
               json.dumps(list(audit.allowed)), float(audit.seconds),
               zlib.compress(audit.report.encode(), 6) if audit.report else None, now()]
        self._file.write(lambda c: c.execute(
            "INSERT INTO launch_audits (candidate_id, device, status, reason, kernels, allowed, seconds, report, "
            "created) VALUES (?,?,?,?,?,?,?,?,?)", row))

    def get(self, candidate_id: int, device: str | None = None) -> dict | None:
        """The candidate's launch audit (on one device, if given): a failed one if there is any (a failure is for
        good), else the latest; kernels and allowed decoded, the report left out. None when it has none."""
        sql = ("SELECT id, candidate_id, device, status, reason, kernels, allowed, seconds, created FROM launch_audits "
               "WHERE candidate_id = ?" + (" AND device = ?" if device is not None else "")
               + " ORDER BY status = 'failed' DESC, id DESC LIMIT 1")
        rows = self._file.dicts(sql, [candidate_id] + ([device] if device is not None else []))
        if not rows:
            return None
        row = rows[0]
        row["kernels"], row["allowed"] = json.loads(row["kernels"] or "[]"), json.loads(row["allowed"] or "[]")
        return row

    def failed(self) -> set[int]:
        """Candidates that failed a launch audit on any device."""
        return {r[0] for r in self._file.query(
            "SELECT DISTINCT candidate_id FROM launch_audits WHERE status = 'failed'")}


class Retimes:
    """A run's top candidates re-timed against each other (``retimes``, evolve/retime.py), and a best timed again
    beside a challenger (round 0); evidence for the reader, never a candidate's own verdict."""

    def __init__(self, file: ArchiveFile):
        self._file = file

    def store(self, run_id: int, candidate_id: int, number: int, verdict: Verdict, figure) -> None:
        row = [run_id, candidate_id, int(number), int(bool(verdict.ok)), figure,
               json.dumps([dict(s) for s in verdict.shapes]), verdict.device, now()]
        self._file.write(lambda c: c.execute("INSERT INTO retimes (run_id, candidate_id, round, ok, figure, shapes, "
                                             "device, created) VALUES (?,?,?,?,?,?,?,?)", row))

    def of_run(self, run_id: int) -> list[dict]:
        return self._file.dicts("SELECT * FROM retimes WHERE run_id = ? ORDER BY id", [run_id])


class Hints:
    """What a person told a run while it went on (``hints``, ``evolve hint``)."""

    def __init__(self, file: ArchiveFile):
        self._file = file

    def add(self, run_id: int, text: str) -> int:
        if not self._file.query("SELECT 1 FROM runs WHERE id = ?", [run_id]):  # a clear error for a missing run
            raise ArchiveError(f"no run {run_id} in {self._file.path}")
        return self._file.write(lambda c: c.execute("INSERT INTO hints (run_id, text, created) VALUES (?, ?, ?)",
                                                    [run_id, text, now()]).lastrowid)

    def of_run(self, run_id: int) -> list[dict]:
        """A run's hints, oldest first: id, text, created."""
        return self._file.dicts("SELECT id, text, created FROM hints WHERE run_id = ? ORDER BY id", [run_id])

    def get(self, hint_id: int) -> dict | None:
        rows = self._file.dicts("SELECT * FROM hints WHERE id = ?", [hint_id])
        return rows[0] if rows else None


class Lessons:
    """What worked, kept across runs (``lessons``, evolve/lessons.py): offered to later runs of the problem and of
    problems alike in kind, listed and cleared by ``evolve lessons``."""

    COLUMNS = ("problem", "kind", "language", "run_id", "candidate_id", "parent_id", "proposer", "model", "measure",
               "before", "after", "diff", "knobs_before", "knobs_after", "hints", "profile")

    def __init__(self, file: ArchiveFile):
        self._file = file

    def add(self, lesson: dict) -> int:
        """Keep one lesson (a dict of COLUMNS; knobs and hints as Python values); returns its id."""
        row = {**{k: lesson.get(k) for k in self.COLUMNS}, "kind": lesson.get("kind") or "", "created": now()}
        for key in ("knobs_before", "knobs_after"):
            row[key] = None if row[key] is None else json.dumps(row[key], default=str)
        row["hints"] = json.dumps(list(row["hints"] or ()))
        return self._file.write(lambda c: c.execute(
            f"INSERT INTO lessons ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})", list(row.values())
        ).lastrowid)

    @staticmethod
    def _decoded(row: dict) -> dict:
        for key in ("knobs_before", "knobs_after"):
            row[key] = json.loads(row[key]) if row[key] else None
        row["hints"] = json.loads(row["hints"] or "[]")
        return row

    def of_candidate(self, candidate_id: int) -> dict | None:
        rows = self._file.dicts("SELECT * FROM lessons WHERE candidate_id = ?", [candidate_id])
        return self._decoded(rows[0]) if rows else None

    def listing(self, problem: str | None = None) -> list[dict]:
        """Every lesson (of one problem, if given), newest first."""
        where, params = (" WHERE problem = ?", [problem]) if problem is not None else ("", [])
        return [self._decoded(r) for r in self._file.dicts(f"SELECT * FROM lessons{where} ORDER BY id DESC", params)]

    def for_prompt(self, problem: str, kind: str, language: str, other_than_run: int, limit: int) -> list[dict]:
        """Up to `limit` lessons in `language` from runs other than this one: the problem's own first, then those of
        problems of the same kind (a known one), each group by its gain (after over before), largest first."""
        rows = self._file.dicts(
            "SELECT *, problem = ? AS same_problem FROM lessons WHERE language = ? AND run_id != ? "
            "AND (problem = ? OR (kind = ? AND kind != '')) "
            "ORDER BY same_problem DESC, after / max(before, 1e-12) DESC, id DESC LIMIT ?",
            [problem, language, other_than_run, problem, kind, int(limit)])
        return [self._decoded(r) for r in rows]

    def clear(self, problem: str | None = None) -> int:
        """Remove every lesson (of one problem, if given); returns how many were removed."""
        where, params = (" WHERE problem = ?", [problem]) if problem is not None else ("", [])
        return self._file.write(lambda c: c.execute(f"DELETE FROM lessons{where}", params).rowcount)
