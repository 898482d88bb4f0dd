"""The run's lessons for later runs (evolve/lessons.py): a listener that proposes nothing and, when a fresh verdict
shows a model's or the tuner's candidate beating its parent by a margin, keeps what led to it in the archive."""
from __future__ import annotations

from .. import lessons
from .base import Landing, Proposal, Strategy, View


class LessonKeeper(Strategy):
    name = "lessons"

    def __init__(self, language: str):
        self.language = language

    def propose(self, island: int, view: View) -> Proposal | None:
        return None  # it only listens

    def landed(self, landing: Landing, view: View) -> None:
        if not landing.fresh or landing.cand is None or landing.verdict is None:
            return
        lesson = lessons.lesson_of(view.archive, view.problem, self.language, landing.cand, landing.verdict)
        if lesson is not None:
            view.archive.lessons.add(lesson)
