"""A memory across runs: what worked (a candidate that beat the scored candidate it was made from by a margin: the
diff, the knob settings, the person's hints its prompt carried, the parent's profile line) is kept in the archive
(``lessons``) and offered to later runs of the same problem and of problems alike in kind (prompts/_lessons.j2).

A problem's kind is what its verdicts and its words say, nothing more: memory- or compute-bound from its benchmark's
bytes against its flops (the bound the roofline used, on a GPU; a typical card's balance under the interpreter), and
"reduction" or "GEMM-like" where its name or description says so. Two problems are alike when their kinds are the
same and known.
"""
from __future__ import annotations

import difflib
import re

from .scoring import noise_of

# A candidate teaches something when it beats its parent by this much at least (or by its timing noise, if more).
MIN_GAIN = 0.05
# Flops per byte above which a case is compute-bound where no peaks were measured (the CPU interpreter): between an
# H100's FP32 balance (~20) and its BF16 tensor-core one (~300), so softmax (~1) and a large GEMM (~1000) fall apart.
TYPICAL_BALANCE = 50.0
OFFERED = 3  # lessons a prompt carries at most
DIFF_LINES, DIFF_CHARS = 200, 12_000  # a stored diff's bound
PROMPT_DIFF_LINES = 60  # a diff's lines in a prompt
REMOVED_RUN = 3  # removed lines in a row a prompt shows before it folds them
PROPOSERS = ("llm", "tuner")  # whose improvements are lessons: a composite dispatches, its "diff" is a new file
_GEMM = re.compile(r"matmul|gemm|\bbmm\b|attention|\bconv|linear layer|matrix multipl", re.I)
_REDUCTION = re.compile(r"softmax|norm|reduc|\bsum\b|_sum|row_?max|maximum|\bmean\b|argmax|entropy|logsumexp", re.I)


def bound_of(verdict) -> str | None:
    """"memory" or "compute": what bounds most of the verdict's benchmark cases, from the bytes and flops the
    measurer counted for each; None where the verdict has no benchmark figures."""
    bench = verdict.rung("benchmark") if verdict is not None else None
    rows = [r for r in (bench.metrics.get("shapes") or []) if isinstance(r, dict)] if bench is not None else []
    roofline = verdict.rung("roofline") if rows else None
    peaks = roofline.metrics.get("peaks") if roofline is not None else None
    votes = []
    for row in rows:
        moved, work = float(row.get("bytes") or 0), float(row.get("flops") or 0)
        if moved <= 0 and work <= 0:
            continue
        if peaks and peaks.get("bandwidth") and peaks.get("flops"):  # the bound the roofline used
            flops_peak = peaks["flops"].get(row.get("dtype"), max(peaks["flops"].values()))
            votes.append(moved / peaks["bandwidth"] >= work / flops_peak)
        else:
            votes.append(work < TYPICAL_BALANCE * moved)
    if not votes:
        return None
    return "memory" if sum(votes) * 2 >= len(votes) else "compute"


def pattern_of(problem) -> str | None:
    """"GEMM-like" or "reduction" where the problem's name or description says so, else None."""
    words = f"{problem.name} {problem.description}"
    if _GEMM.search(words):
        return "GEMM-like"
    if _REDUCTION.search(words):
        return "reduction"
    return None


def kind_of(problem, verdict) -> str:
    """"memory-bound reduction", "compute-bound GEMM-like", "memory-bound", "reduction", ... ("" when unknown)."""
    bound = bound_of(verdict)
    return " ".join(filter(None, [f"{bound}-bound" if bound else None, pattern_of(problem)]))


def bounded_diff(before: str, after: str, old_id: int, new_id: int) -> str:
    """The unified diff from one source to the other, at most DIFF_LINES lines and DIFF_CHARS characters."""
    lines = list(difflib.unified_diff(before.splitlines(), after.splitlines(), f"#{old_id}", f"#{new_id}",
                                      n=2, lineterm=""))
    text = "\n".join(lines[:DIFF_LINES])[:DIFF_CHARS]
    return text + (f"\n... ({len(lines) - DIFF_LINES} more lines)" if len(lines) > DIFF_LINES else "")


def scored_parent(archive, cand):
    """The candidate it was made from, or that one's nearest scored ancestor (a repair's parent failed); None."""
    parent_ids = cand.parent_ids
    for _ in range(4):
        if len(parent_ids) != 1:
            return None
        parent = archive.get(parent_ids[0])
        if parent.score is not None and parent.source:
            return parent
        parent_ids = parent.parent_ids
    return None


def lesson_of(archive, problem, language: str, cand, verdict) -> dict | None:
    """The lesson a fresh verdict teaches (Lessons.COLUMNS), or None: a correct candidate of a model or the tuner
    that beat its scored parent by MIN_GAIN and its timing noise."""
    if cand.proposer not in PROPOSERS or not cand.ok or cand.score is None or not cand.source:
        return None
    parent = scored_parent(archive, cand)
    if parent is None or parent.score <= 0 or cand.score < parent.score * (1 + max(MIN_GAIN, noise_of(verdict))):
        return None
    profiled = archive.profiles.latest(parent.id)
    hints = [h["text"] for h in map(archive.hints.get, cand.hint_ids) if h]
    return {"problem": problem.name, "kind": kind_of(problem, verdict), "language": language,
            "run_id": cand.run_id, "candidate_id": cand.id, "parent_id": parent.id, "proposer": cand.proposer,
            "model": cand.model, "measure": "fitness" if verdict.fitness is not None else "score",
            "before": parent.score, "after": cand.score,
            "diff": bounded_diff(parent.source, cand.source, parent.id, cand.id),
            "knobs_before": parent.knobs, "knobs_after": cand.knobs, "hints": hints,
            "profile": (profiled["summary"] or {}).get("verdict") if profiled and profiled["ok"] else None}


def summary_line(lesson: dict) -> str:
    """One line of what a lesson changed: a tuner's knobs, else the diff's size (and the first hint behind it)."""
    changed = knob_changes(lesson)
    if lesson["proposer"] == "tuner" and changed:
        return "knobs " + ", ".join(changed)
    body = [line for line in lesson["diff"].splitlines() if line[:1] in "+-" and line[:3] not in ("+++", "---")]
    added = sum(line.startswith("+") for line in body)
    return f"{lesson['proposer']}: +{added} -{len(body) - added} lines" + \
        (f", hint: {lesson['hints'][0][:60]}" if lesson["hints"] else "")


def knob_changes(lesson: dict) -> list[str]:
    """["CHUNK 4096 -> 8192", ...]: the knobs both sides have whose settings differ (a knob on one side only is a
    change of structure, which the diff shows)."""
    before, after = lesson.get("knobs_before") or {}, lesson.get("knobs_after") or {}
    return [f"{name} {before[name]} -> {after[name]}" for name in sorted(set(before) & set(after))
            if before[name] != after[name]]


def prompt_diff(diff: str) -> str:
    """A diff as a prompt shows it: a run of more than REMOVED_RUN removed lines folded into one line, so what was
    added comes first, then cut at PROMPT_DIFF_LINES lines."""
    lines, removed = [], []
    for line in diff.splitlines() + [""]:
        if line.startswith("-") and not line.startswith("---"):
            removed.append(line)
            continue
        lines += removed if len(removed) <= REMOVED_RUN else removed[:1] + [f"-... ({len(removed) - 1} more removed)"]
        removed = []
        lines.append(line)
    lines.pop()  # the sentinel
    cut = len(lines) - PROMPT_DIFF_LINES
    return "\n".join(lines[:PROMPT_DIFF_LINES]) + (f"\n... ({cut} more lines)" if cut > 0 else "")


def for_prompt(lesson: dict, problem: str) -> dict:
    """What a template reads of a lesson (prompts/_lessons.j2): its text bounded."""
    return {"problem": lesson["problem"], "same_problem": lesson["problem"] == problem, "kind": lesson["kind"],
            "measure": lesson["measure"], "before": lesson["before"], "after": lesson["after"],
            "gain": lesson["after"] / lesson["before"], "diff": prompt_diff(lesson["diff"]),
            "knobs": knob_changes(lesson), "hints": [h[:300] for h in lesson["hints"][:3]],
            "profile": (lesson["profile"] or "")[:300]}


class Memory:
    """The lessons a run's prompts carry: of earlier runs, in the run's language, its problem's first, then those of
    problems alike in kind. The problem's kind is read from its newest correct verdict in the archive (any run),
    once one has benchmark figures."""

    def __init__(self, archive, problem, language: str, offered: int = OFFERED):
        self.archive, self.problem, self.language, self.offered = archive, problem, language, offered
        self._bound_known = ""  # the kind, once its bound is known (it no longer changes)

    def kind(self) -> str:
        if self._bound_known:
            return self._bound_known
        rows = self.archive.query("SELECT c.id FROM candidates c JOIN runs r ON r.id = c.run_id WHERE r.problem = ? "
                                  "AND c.ok = 1 ORDER BY c.id DESC LIMIT 1", [self.problem.name])
        kind = kind_of(self.problem, self.archive.verdict(rows[0][0]) if rows else None)
        if "-bound" in kind:
            self._bound_known = kind
        return kind

    def for_prompt(self, run_id: int) -> tuple[dict, ...]:
        found = self.archive.lessons.for_prompt(self.problem.name, self.kind(), self.language, run_id, self.offered)
        return tuple(for_prompt(lesson, self.problem.name) for lesson in found)
