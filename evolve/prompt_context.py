"""What a prompt is told: the PromptContext the templates read (prompts/*.j2), built from the archive (with the lessons
of earlier runs, evolve/lessons.py), and the parent's SASS digest and the read_parent tool's answers.

A digest disassembles the parent's cubins (seconds of CPU), so it starts when a possible parent's verdict is in and is
made in a thread of its own; `context_now` is what the loop's thread builds without waiting, and `with_digest` adds the
digest where a proposal's own thread can wait for it.
"""
from __future__ import annotations

import dataclasses
import json
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from .archive import Archive, Candidate
from .knobs import KNOBS_DOC
from .knowledge import ContextIndex, project_context
from .knowledge import references as knowledge_references
from .lang import source_folders
from .lessons import Memory
from .proposer import ProblemView, ProgramView, PromptContext
from .render import ladder_lines
from .tool_answers import asm_answer


def accepted_shapes(problem) -> str:
    """What the problem's [accepts] declares, in words, for a prompt."""
    return ", ".join(f"{name} one of {', '.join(map(str, spec['one_of']))}" if "one_of" in spec else
                     f"{name} from {spec['min']} to {spec['max']}" +
                     (f" in multiples of {spec['multiple_of']}" if "multiple_of" in spec else "")
                     for name, spec in problem.accepts)


class Contexts:
    """The prompt contexts of one run's problem and candidate language."""

    def __init__(self, archive: Archive, problem, language, lessons: bool = True):
        self.archive, self.problem, self.language = archive, problem, language
        self.memory = Memory(archive, problem, language.name) if lessons else None  # None: no lessons offered
        self.index = None  # the context folders' full-text index (knowledge.ContextIndex), with a model only
        self._digests: dict[int, Future] = {}  # SASS digests of possible parents, made once each
        self._pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="evolve-digest")

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    def open_index(self, context_dirs, emit) -> None:
        """The full-text index of what a model may search: the run's language's notes and installed sources, the
        problem's notes, --context's folders. One that cannot be made is said (an event), and prompts go on."""
        began = time.monotonic()
        notes = project_context() / self.language.context_folder
        folders = [notes, *source_folders(self.language), self.problem.folder / "context", *map(Path, context_dirs)]
        try:
            self.index = ContextIndex(folders)
        except Exception as exc:  # noqa: BLE001 - e.g. an SQLite built without FTS5: prompts go on without
            emit({"kind": "context_off", "reason": f"{type(exc).__name__}: {exc}"[:300]})
        else:
            emit({"kind": "context", "chunks": len(self.index), "files": len(self.index.files),
                  "folders": [str(f) for f in self.index.folders], "skipped": self.index.skipped,
                  "seconds": time.monotonic() - began})

    # -- the context ------------------------------------------------------------------------------------------------
    def context(self, parent: Candidate | None, inspirations=(), best: Candidate | None = None, run_id: int = 0,
                error: str | None = None) -> PromptContext:
        return self.with_digest(self.context_now(parent, inspirations, best, run_id, error), parent)

    def context_now(self, parent: Candidate | None, inspirations=(), best: Candidate | None = None, run_id: int = 0,
                    error: str | None = None) -> PromptContext:
        """The context less the parent's digest and profile and the passages they pick (with_digest), which may wait
        seconds for a disassembler: read on the loop's thread, without waiting."""
        problem = ProblemView(name=self.problem.name, description=self.problem.description, notes=self.problem.notes,
                              contract="\n".join(filter(None, [self.language.prompt_contract(self.problem.forbid_calls),
                                                               self.problem.contract])),
                              accepts=accepted_shapes(self.problem))
        verdict = best and self.archive.verdict(best.id)
        lessons = self.memory.for_prompt(run_id) if self.memory is not None and error is None else ()
        return PromptContext(
            problem=problem, device=(verdict and verdict.device) or "unknown", knobs_doc=KNOBS_DOC,
            parent=self._view(parent) if parent else None, inspirations=tuple(self._view(c) for c in inspirations),
            error=error, hints=tuple(self.archive.hints.of_run(run_id)), lessons=lessons)

    def with_digest(self, context: PromptContext, parent: Candidate | None) -> PromptContext:
        """The context with the parent's SASS digest and profile, and the context passages picked by the digest; waits
        for the digest, so a proposal calls it in its own thread."""
        digest = self.digest(parent, context.parent.kernels) if parent else ()
        references = ()
        if self.index is not None:
            references = tuple(dataclasses.asdict(h) for h in knowledge_references(
                self.index, self.problem.name, self.problem.description, digest))
        if parent is not None:
            context = dataclasses.replace(context, parent=dataclasses.replace(
                context.parent, digest=digest, profile=self.profile_text(parent)))
        return dataclasses.replace(context, references=references)

    def _view(self, c: Candidate) -> ProgramView:
        verdict = self.archive.verdict(c.id)
        correctness = verdict and verdict.rung("correctness")
        return ProgramView(source=c.source, fitness=c.fitness, score=c.score,
                           ladder=tuple(ladder_lines(verdict)) if verdict else (), failed_rung=c.failed_rung,
                           reason=c.reason, kernels=verdict.kernels if verdict else (),
                           shapes=verdict.shapes if verdict else (),
                           correctness=correctness.reason if correctness else None)

    # -- the parent's digest and what read_parent answers -----------------------------------------------------------
    def start_digest(self, cand: Candidate, kernels) -> None:
        """Begin the candidate's SASS digest: its files read here, disassembled in the digest's own thread, so the
        loop hands out work meanwhile."""
        if cand.id in self._digests:
            return
        from .digest import digest_files, read_files

        try:
            files = read_files(self.archive, cand.id)
        except Exception:  # noqa: BLE001 - a digest is a help for the prompt, never a reason to stop a run
            files = {}

        def make() -> tuple:
            return tuple(d.as_dict() for d in digest_files(files, kernels))

        try:
            self._digests[cand.id] = self._pool.submit(make)
        except RuntimeError:  # the run has ended (its threads stopped): made here
            self._digests[cand.id] = done = Future()
            try:
                done.set_result(make())
            except Exception as exc:  # noqa: BLE001 - as below
                done.set_exception(exc)

    def digest(self, cand: Candidate, kernels) -> tuple[dict, ...]:
        self.start_digest(cand, kernels)
        try:
            return self._digests[cand.id].result()
        except Exception:  # noqa: BLE001 - as above
            return ()

    def kernels(self, cand: Candidate) -> tuple:
        verdict = self.archive.verdict(cand.id)
        return verdict.kernels if verdict else ()

    def parent_reader(self, cand: Candidate):
        """read_parent's answers for this parent: its digest, SASS, PTX, TTGIR or profile."""
        def read(what: str, kernel=None) -> str:
            if what == "digest":
                digest = self.digest(cand, self.kernels(cand))
                return json.dumps(digest, indent=1) if digest else \
                    "no SASS digest for the current program (no compiler artifacts were kept for it)"
            if what == "profile":
                return self.profile_text(cand) or "the current program has not been profiled"
            if what not in ("sass", "ptx", "ttgir"):
                raise ValueError(f"what is one of digest, sass, ptx, ttgir, profile; not {what!r}")
            stored = [a["name"] for a in self.archive.artifacts.listing(cand.id)]
            return asm_answer(stored, lambda name: self.archive.artifacts.read(cand.id, name), what, kernel,
                              "the current program")
        return read

    def profile_text(self, cand: Candidate) -> str:
        from .profiling import render

        from .tracing import render as render_trace

        found, traced = self.archive.profiles.latest(cand.id), self.archive.traces.latest(cand.id)
        parts = [render(found["summary"]) if found and found["ok"] and found["summary"] else "",
                 render_trace(traced["summary"]) if traced and traced["ok"] and traced["summary"] else ""]
        return "\n".join(part for part in parts if part)
