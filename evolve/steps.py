"""The kinds of step a search takes (search.py picks one each turn): the problem's own material, a model's proposal
(and its repairs), a knob setting from the tuner, a shape-dispatch composite. Each archives what it proposes and
hands it to the pipeline through Search.submit."""
from __future__ import annotations

from dataclasses import dataclass
from concurrent.futures import Future

from . import compose, known
from .archive import Candidate, source_hash
from .knobs import read_knobs, structure_key
from .knowledge import Toolbox
from .population import NOISE_FLOOR
from .proposer import Proposal
from .scoring import compiled_anew, noise_of, score_of


@dataclass(frozen=True)
class Pending:
    """A proposal asked for and not yet evaluated: where it goes, what it builds on, the model's answer to come."""
    island: int
    parent: Candidate | None
    future: Future
    hint_ids: tuple[int, ...] = ()  # the hints its prompt carried


class Steps:
    def __init__(self, search):
        self.search = search
        self._structures: dict[int, str] = {}  # candidate id -> its structure key (parsing a source takes a while)
        self._figures: dict[int, dict] = {}  # candidate id -> case_figures (leaders() reads every kernel's each step)

    # -- the problem's own kernels ------------------------------------------------------------------------------------
    def material(self, island: int) -> bool:
        """Evaluate the next of the problem's own kernels (seeds, then solutions/correct); False when none is left.
        One this machine has evaluated before, alike in every way that shapes a verdict, takes its kept verdict
        (evolve/known.py) rather than the minutes of another evaluation."""
        s = self.search
        while s.material:
            path, proposer = s.material.popleft()
            source = path.read_text()
            knobs = read_knobs(source)[0]
            entry = known.key(source, s.problem, s.device, s.versions, s.config.eval)

            def then(done, source=source, knobs=knobs, entry=entry):
                if knobs and done is not None:
                    s.tuner.remember(source, knobs, done.score, self.case_figures(done))
                verdict = s.archive.verdict(done.id) if done is not None and done.status == "evaluated" else None
                if verdict is not None and verdict.ok and s.known_material:  # a failure: evaluated anew next time
                    artifacts = s.archive.artifacts.files(done.id) if s.config.artifacts else None
                    known.keep(s.config.eval.cache_dir, entry, verdict, artifacts)

            fields = {"source": source, "island": island, "proposer": proposer, "knobs": knobs,
                      "template": path.name}
            kept = known.recall(s.config.eval.cache_dir, entry, with_artifacts=s.config.artifacts,
                                limit=s.archive.artifacts.TOTAL_LIMIT) if s.known_material else None
            cand = self._record_known(kept, then, fields) if kept is not None else s.submit(then=then, **fields)
            if cand is not None:
                return True
        return False

    def _record_known(self, kept: known.Kept, then, fields) -> Candidate | None:
        """Archive the problem's own kernel with the verdict (and compiler output) this machine kept for it
        (evolve/known.py)."""
        s = self.search
        cand = s.archive.add_candidate(s.run_id, **fields, within_run=s.config.isolated)
        if cand is None or cand.status == "invalid":
            return cand
        verdict = kept.verdict
        if s.config.artifacts and kept.artifacts:
            s.archive.artifacts.store_files(cand.id, kept.artifacts)
        evaluated = s.archive.record_verdict(cand.id, verdict, score_of(verdict))
        if compiled_anew(verdict):  # its settings' time limit
            s.lane_seconds[evaluated.id] = sum(rung.seconds for rung in verdict.rungs)
        s.evaluated += 1
        s.admit(evaluated, noise_of(verdict))
        s.emit({"kind": "candidate", "candidate": evaluated, "seconds": 0.0, "best": s.best, "known": True,
                "lane": None})
        if fields.get("knobs"):
            s.tuner.remember(fields["source"], fields["knobs"], evaluated.score, self.case_figures(evaluated))
        return evaluated

    # -- a model's proposals ------------------------------------------------------------------------------------------
    def ask(self, island: int) -> None:
        """Start one proposal in the background: parent and template are chosen now, the model answers later."""
        s = self.search
        parent = s.population.pick_parent(island)
        template = "diff_edit" if parent and s.rng.random() < s.config.search.diff_share else "full_rewrite"
        context = s.context_now(parent)
        toolbox = Toolbox(s.index, s.contexts.parent_reader(parent) if parent else None) if s.index else None

        def propose() -> Proposal:  # in the proposal's thread: the parent's digest may still be disassembling
            return s.proposer.propose(template, s.contexts.with_digest(context, parent),
                                      parent.source if parent else None, toolbox)
        future = s.pool.submit(propose)
        s.inflight.append(Pending(island, parent, future, tuple(h["id"] for h in context.hints)))

    def model(self, island: int) -> None:
        """Submit the oldest proposal in flight, keeping up to --concurrency model calls running meanwhile."""
        s = self.search
        while len(s.inflight) < s.concurrency:
            self.ask(island)
            island = (island + 1) % len(s.population.islands)
        pending = s.inflight.popleft()
        proposal = pending.future.result()  # a broken user template raises here, on the main thread
        parent, island = pending.parent, pending.island
        s.submit(then=self._repairer(island, s.config.search.repairs),
                 **fields_of(proposal, (parent.id,) if parent else (), island, parent, pending.hint_ids))

    def _repairer(self, island: int, left: int):
        """What follows a model's candidate: a load or compile failure goes back to the model (up to `left` times),
        as the loop's next step once its verdict is in."""
        def then(cand: Candidate | None) -> None:
            if left > 0 and cand is not None and cand.status == "evaluated" and cand.failed_rung in ("load", "compile") \
                    and not self.search.problem_fault:  # the problem's own failure is not the model's to repair
                self.search.followups.append(lambda: self._repair(cand, island, left))
        return then

    def _repair(self, cand: Candidate, island: int, left: int) -> None:
        s = self.search
        error = cand.reason or ""
        verdict = s.archive.verdict(cand.id)
        failure = verdict and verdict.failure
        log = failure.metrics.get("log") if failure else None
        context = s.context(cand, error=log or error)
        toolbox = Toolbox(s.index, s.contexts.parent_reader(cand)) if s.index else None
        proposal = s.proposer.propose("repair", context, cand.source, toolbox)
        s.submit(then=self._repairer(island, left - 1),
                 **fields_of(proposal, (cand.id,), island, cand, tuple(h["id"] for h in context.hints)))

    # -- the tuner and the composer -----------------------------------------------------------------------------------
    def tune(self, island: int) -> bool:
        """One knob setting for a structure that still has untried settings; False when none has. The leaders go first
        (leaders() says which), the one tried least of them next, then the rest by rank. Before any verdict is in,
        the problem's own kernels still in the pipeline are tuned ahead of their verdicts: lanes that would wait for
        them idle (a TileLang seed's first evaluation takes minutes) try their settings meanwhile."""
        s = self.search
        in_flight = [cand for key, (cand, _) in s.waiting.items()
                     if isinstance(key, int) and cand.proposer in ("seed", "solution")]
        ranked = s.population.ranked()
        # sorted() keeps rank order among leaders tried as often
        leaders = sorted(self.leaders(ranked), key=lambda c: s.tuner.suggested.get(self._structure(c), 0))
        for base in leaders + s.population.ranked(s.population.islands[island]) + ranked + in_flight:
            # None: no knobs, or none the tuner varies (launch options under the interpreter), or all tried
            suggestion = s.tuner.suggest(base.source)
            if suggestion is None:
                continue
            source, values, trial = suggestion
            s.submit(then=lambda cand, base=base, trial=trial: s.tuner.tell(
                         base.source, trial, cand.score if cand is not None else None, self.case_figures(cand)),
                     source=source, parent_ids=(base.id,), island=island, generation=base.generation + 1,
                     proposer="tuner", knobs=values, time_limit_s=s.tuned_limit(base.id))
            return True
        return False

    def leaders(self, ranked: list) -> list:
        """The kernels worth tuning first, best first: the best, and the best of each structure that is best on some
        benchmark case (a setting of it may win that case's regime, and the composer dispatch to it there). Tuning
        only the best spent a 5-minute layernorm run on the 36 settings of its seed, all slower, while the kernel
        that led one case was never tuned."""
        lead: dict[str, tuple[float, Candidate]] = {}
        for cand in ranked:
            if cand.proposer == compose.COMPOSER or not cand.source:
                continue  # a composite leads with its parts' figures: the parts are what is tuned
            for label, value in self.case_figures(cand).items():
                if label not in lead or value > lead[label][0]:
                    lead[label] = (value, cand)
        chosen = {c.id for _, c in lead.values()} | ({ranked[0].id} if ranked else set())
        out, structures = [], set()
        for cand in ranked:  # one per structure: its best-ranked leader
            key = self._structure(cand) if cand.id in chosen else None
            if key is not None and key not in structures:
                structures.add(key)
                out.append(cand)
        return out

    def _structure(self, cand: Candidate) -> str:
        if cand.id not in self._structures:
            self._structures[cand.id] = structure_key(cand.source)
        return self._structures[cand.id]

    def case_figures(self, cand) -> dict:
        """{case label: figure} of an evaluated candidate's benchmark cases (fraction of roofline on a GPU), which
        the tuner's regime studies read; empty for one without a verdict."""
        if cand is None or cand.status != "evaluated":
            return {}
        if cand.id not in self._figures:  # a verdict never changes once in
            figures = self.search.planner.figures(cand)
            gpu = figures["mode"] == "gpu"
            values = {label: compose.case_value(row, gpu) for label, row in figures["rows"].items() if label}
            self._figures[cand.id] = {label: value for label, value in values.items() if value is not None}
        return self._figures[cand.id]

    def composition(self) -> compose.Plan | None:
        """The shape-dispatch composite worth evaluating now, or None (compose.Planner says when one is)."""
        s = self.search
        return s.planner.next(s.best, s.population.ranked(), lambda i: s.population.noise.get(i, NOISE_FLOOR),
                              source_hash)

    def compose(self, island: int) -> bool:
        """Propose and evaluate a composite when one is worth it; False when none is. Planned from the verdicts in so
        far, one composite in the pipeline at a time: with every lane kept busy by tuner trials the pipeline is never
        empty, and a plan that a later verdict betters is planned again then (another source, another composite)."""
        s = self.search
        if any(cand is not None and cand.proposer == compose.COMPOSER for cand, _ in s.waiting.values()):
            return False
        found = self.composition()
        if found is None:
            return False
        s.planner.composed.add(source_hash(found.source))
        parents = [s.archive.get(pid) for pid in found.parts]
        s.emit({"kind": "compose", "plan": found, "incumbent": s.best})
        s.submit(source=found.source, parent_ids=found.parts, island=island,
                 generation=max(p.generation for p in parents) + 1, proposer=compose.COMPOSER,
                 template="shape-dispatch")
        return True


def fields_of(proposal, parent_ids, island, parent, hint_ids=()) -> dict:
    """The archive's fields of a model's proposal."""
    source = proposal.source
    knobs = read_knobs(source)[0] if source else None
    return {"source": source, "parent_ids": parent_ids, "island": island,
            "generation": (parent.generation + 1) if parent else 0, "proposer": "llm", "model": proposal.model,
            "template": proposal.template, "prompt": proposal.prompt, "reply": proposal.reply,
            "tokens_in": proposal.tokens_in, "tokens_out": proposal.tokens_out, "cost": proposal.cost,
            "latency_s": proposal.latency_s, "knobs": knobs, "error": proposal.error, "hint_ids": hint_ids,
            "tool_log": proposal.tool_log}
