"""The problem's own kernels (seeds, then solutions/correct), evaluated first. One this machine has evaluated before,
alike in every way that shapes a verdict, takes its kept verdict (evolve/known.py) rather than the minutes of
another evaluation."""
from __future__ import annotations

from collections import deque
from pathlib import Path

from .. import known
from ..archive import source_hash
from ..knobs import read_knobs
from .base import Landing, Proposal, Strategy, View


class Material(Strategy):
    name = "material"
    again_after_duplicate = True

    def __init__(self, language: str, keep_verdicts: bool):
        self.language = language  # the run's language: its kernels only
        self.keep_verdicts = keep_verdicts  # recall and keep verdicts in the machine's cache (evolve/known.py)
        self.files: deque[tuple[Path, str]] = deque()  # (file, "seed" or "solution") not yet evaluated here

    def start(self, view: View) -> None:
        self.files.extend(self._left(view))

    def _left(self, view: View) -> list[tuple[Path, str]]:
        """The problem's seeds and correct solutions not yet archived for this problem and device."""
        known_hashes = {cand.hash for cand in view.archive.candidates(view.run_id)} if view.config.isolated \
            else view.archive.known_hashes(view.problem.name, view.device)
        left = []
        for path, proposer in [(p, "seed") for p in view.problem.seed_files(self.language)] + \
                [(p, "solution") for p in view.problem.solution_files("correct", self.language)]:
            try:
                if source_hash(path.read_text()) not in known_hashes:
                    left.append((path, proposer))
            except (OSError, UnicodeDecodeError):
                continue  # an unreadable file is skipped here and reported by `evolve check-problem`
        return left

    def propose(self, island: int, view: View) -> Proposal | None:
        if not self.files:
            return None
        path, proposer = self.files.popleft()
        source = path.read_text()
        entry = known.key(source, view.problem, view.device, view.versions, view.config.eval)
        fields = {"source": source, "island": island, "proposer": proposer, "knobs": read_knobs(source)[0],
                  "template": path.name}
        kept = known.recall(view.config.eval.cache_dir, entry, with_artifacts=view.config.artifacts,
                            limit=view.archive.artifacts.TOTAL_LIMIT) if self.keep_verdicts else None
        return Proposal(fields, self.name, note={"entry": entry}, kept=kept)

    def landed(self, landing: Landing, view: View) -> None:
        """A fresh correct verdict is kept for the next run on this machine (a failure is evaluated anew)."""
        cand, proposal, verdict = landing.cand, landing.proposal, landing.verdict
        if not (landing.answers(self.name) and landing.fresh and self.keep_verdicts) or cand is None \
                or proposal is None or verdict is None or not verdict.ok:
            return
        artifacts = view.archive.artifacts.files(cand.id) if view.config.artifacts else None
        known.keep(view.config.eval.cache_dir, proposal.note["entry"], verdict, artifacts)
