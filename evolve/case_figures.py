"""Each kernel's per-case figures, read from its archived verdict once (a verdict never changes once in): what the
composer plans from and the tuner's regime studies read."""
from __future__ import annotations

from .compose import case_value


class CaseFigures:
    def __init__(self, verdict_of):
        self.verdict_of = verdict_of  # candidate id -> Verdict or None
        self._rows: dict[int, dict] = {}
        self._values: dict[int, dict] = {}

    def rows(self, cand) -> dict:
        """{"mode": "gpu" or "cpu", "rows": {case label: row}} of a kernel's verdict."""
        if cand.id not in self._rows:
            verdict = self.verdict_of(cand.id)
            self._rows[cand.id] = {"mode": verdict.mode if verdict else "",
                                   "rows": {row.get("case"): row for row in (verdict.shapes if verdict else ())}}
        return self._rows[cand.id]

    def values(self, cand) -> dict:
        """{case label: figure} of an evaluated candidate's benchmark cases (fraction of roofline on a GPU); empty
        for one without a verdict."""
        if cand is None or cand.status != "evaluated":
            return {}
        if cand.id not in self._values:
            figures = self.rows(cand)
            gpu = figures["mode"] == "gpu"
            values = {label: case_value(row, gpu) for label, row in figures["rows"].items() if label}
            self._values[cand.id] = {label: value for label, value in values.items() if value is not None}
        return self._values[cand.id]
