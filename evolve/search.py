"""The unattended loop: ask for code, hand it to the evaluation pipeline (pipeline.py: a lane per GPU, each running the
harness), write each verdict to the archive as it comes. Nothing flows back.

The population policy (islands, admission, parents, inspirations, migration) is population.py; this module is the
loop and its I/O. Proposals come from the problem's own material (seeds and solutions/correct, evaluated first), the
LLM proposer (full rewrites, SEARCH/REPLACE edits, repairs of load/compile failures), the knob tuner, and the composer
(compose.py: one file that dispatches per shape regime between verified kernels). Every correct kernel archived for
the problem on the same device joins the population at the start, as a parent and as a tuner starting point. Every
proposal is committed before it is handed to a lane and every verdict as it comes, so a crash loses at most the
evaluations in flight, which --resume runs again. On a GPU a win over the best counts only against a figure of the
best from the same card, close in time (fair promotion: the best is timed again beside the challenger otherwise).
"""
from __future__ import annotations

import os
import random
import shutil
import statistics
import tempfile
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

from . import compose
from .archive import Archive, Candidate, source_hash
from .config import RunConfig, format_duration
from .harness import evaluate as harness_evaluate
from .harness import jail, load_problem
from .harness.parent.ladder import device_name
from .knobs import LAUNCH_KNOBS, Tuner
from .knowledge import ContextIndex, project_context
from .lang import get as get_language
from .lang import source_folders
from .pipeline import Retiming
from .population import NOISE_FLOOR, Policy, Population
from .promotion import Duels
from .prompt_context import Contexts
from .proposer import PromptContext
from .retime import overtaken
from .rounds import Rounds
from .scoring import compiled_anew, noise_of, score_of
from .steps import Pending, Steps, fields_of


@dataclass(frozen=True)
class Summary:
    run_id: int
    stop_reason: str
    evaluated: int
    correct: int
    best: Candidate | None
    seed_best: Candidate | None
    cost: float
    seconds: float
    db: str
    near_tie: Candidate | None = None  # measured above `best`, but by less than the timing noise
    interrupted: bool = False  # stopped by Ctrl-C or SIGTERM (the command exits 130 or 143)
    retimed: tuple = ()  # retime.Retimed: the best few re-timed against each other at the end (GPU runs)
    promoted: int | None = None  # `best`, where it re-timed above the best the search held (retime.overtaken)
    session_evaluated: int | None = None  # evaluated by this process, where the run was resumed (seconds count these)
    audit: object = None  # launch_audit.Audit of `best`: passed, or not run and why
    audit_failed: tuple = ()  # (Candidate, Audit): better candidates that failed the launch audit, left out


def card_wait_s(verdict) -> float:
    """Seconds an evaluation waited for its card: other evolve processes' turns, and the card's first calibration."""
    return sum(float(step.get("card_wait_s") or 0.0) for step in verdict.setup)


def package_versions() -> dict:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for name in ("evolve", "torch", "triton", "litellm", "optuna", "sqlite-utils"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:  # e.g. evolve run from a checkout on PYTHONPATH, not installed
            out[name] = None
    if out["evolve"] is None:
        from . import __version__

        out["evolve"] = __version__
    return out


# candidates waiting for a lane beyond one per lane: none, so a repair follows its
# failure and a hint reaches the very next prompt (this process archives a verdict in a fraction of a second)
QUEUE_AHEAD = 0
UNEVALUATED_STOP = 3  # candidates in a row that no lane could evaluate before the run stops
# A tuned setting's time limit: this many times its parent's evaluation, at least TUNED_MIN_S (never above --timeout).
# Its parent compiled and ran the same code; a setting that takes far longer (2 warps on softmax's 131072-wide rows
# held whole compiled for over 180 s on an H100) is no contender, and its evaluation holds a card other runs wait for.
TUNED_TIMES = 3.0
TUNED_MIN_S = 60.0


class SearchFailed(RuntimeError):
    """evolve's own fault ended a run; the run is closed in the archive and can be resumed."""


class Search:
    """The loop: ask for proposals (a model, or the knob tuner), evaluate each, archive it, admit it to the
    population, stop when a limit is reached. `evaluate` (the harness by default) and `clock` are injected, so the
    loop can run against another evaluator (a pool, a cluster) and be tested without one."""

    def __init__(self, config: RunConfig, archive: Archive, proposer=None, on_event=None, evaluate=harness_evaluate,
                 clock=time.monotonic, auditor=None, known_material: bool | None = None, problem=None):
        self.config = config
        # the machine's kept verdicts of material (evolve/known.py) hold what the harness returned, nothing else, and
        # persist only where no runner can write the cache folder (Landlock), as the harness's own caches
        self.known_material = (evaluate is harness_evaluate and jail.abi_version() > 0) if known_material is None \
            else known_material
        self.archive = archive
        self.proposer = proposer
        self.problem = load_problem(problem or config.problem_dir)  # read once a run: the lanes are handed it too
        self.rng = random.Random(config.seed)
        trials = config.search.tuner_trials
        if trials is None:  # without a model the tuner is the whole search: let it cover a small space
            trials = 6 if proposer is not None else 64
        self.tuner = Tuner(seed=config.seed, trials=trials)
        self.emit = on_event or (lambda event: None)
        self.population = Population(Policy(islands=config.search.islands, exploit=config.search.exploit,
                                            inspirations=config.search.inspirations), self.rng)
        self._evaluate, self.clock = evaluate, clock
        self.pipeline = None  # made when the run starts (make_pipeline)
        self._threads = 0  # CPU threads per evaluation process when lanes share the host (make_pipeline)
        self.waiting: dict[int, tuple] = {}  # candidate id -> (candidate, what follows its verdict), in the pipeline
        self.followups: deque = deque()  # steps a verdict asked for (repairs), taken before new proposals
        self.unevaluated_run, self.last_unevaluated = 0, ""  # in a row, and why the last one
        self.problem_fault: str | None = None  # the problem's own code failed in an evaluation: the run stops
        self.duels = Duels(self)  # fair promotion (promotion.py)
        self.steps = Steps(self)  # the kinds of step (steps.py)
        self.eval_seconds: list[float] = []  # each evaluation's wall time but its waits for the card, for the budget
        self.lane_seconds: dict[int, float] = {}  # candidate id -> the same, per candidate evaluated by this process
        self.time_limits: dict[int, float] = {}  # candidate id -> its time limit, where below --timeout (tuned_limit)
        self.run_id = 0
        self.evaluated = 0
        self.since_improvement = 0
        self.unusable, self.last_unusable = 0, ""  # proposals in a row that gave nothing to evaluate
        self.paused_s = 0.0  # seconds held by `evolve pause`
        self.started = clock()
        self.work = Path(tempfile.mkdtemp(prefix="evolve-run-"))
        # Proposals in flight, oldest first; the proposer's own limit (--concurrency) is the only one.
        self.inflight: deque[Pending] = deque()
        self.material: deque[tuple[Path, str]] = deque()  # the problem's kernels not yet evaluated on this device
        self.device = ""  # the run's device name (archived kernels from other devices are not material)
        self.versions: dict = {}  # the packages' versions, as the run records them
        self.material_s = 0.0  # seconds from this session's start to the verdict of the problem's last own kernel
        # what prompts are told, with the parents' SASS digests (made off this thread)
        self.contexts = Contexts(archive, self.problem, get_language(config.eval.language or self.problem.languages[0]))
        self.planner = compose.Planner(self.problem, archive.verdict)  # which composite to try, from verdicts read once
        self.rounds = Rounds(config, archive, self.problem, self.work, self.emit, auditor)  # profiles, re-timing, audit
        self.profiled_at = 0  # evaluations when profiling last ran
        self.concurrency = max(1, getattr(proposer, "concurrency", 1))
        self.pool = ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="evolve-ask")

    @property
    def best(self) -> Candidate | None:
        return self.population.best

    @property
    def index(self):
        """The context folders' full-text index (knowledge.ContextIndex), with a model only."""
        return self.contexts.index

    def context(self, parent: Candidate | None, error: str | None = None) -> PromptContext:
        """What a prompt built on `parent` is told (prompt_context.py), its digest waited for."""
        return self.contexts.with_digest(self.context_now(parent, error), parent)

    def context_now(self, parent: Candidate | None, error: str | None = None) -> PromptContext:
        return self.contexts.context_now(parent, self.population.inspirations(parent) if parent else (), self.best,
                                         self.run_id, error)

    def admit(self, cand: Candidate, noise: float) -> None:
        if self.population.admit(cand, noise):
            self.since_improvement = 0

    # -- evaluation -------------------------------------------------------------------------------------------------
    def make_pipeline(self):
        """Lanes: one per GPU in --gpus, or every visible one; one lane without a GPU."""
        from .harness.parent.ladder import gpu_available
        from .pipeline import Pipeline, ThreadLane, probe_gpu, visible_gpus

        c = self.config
        if c.cluster:
            return self._cluster_pipeline()
        gpu = c.eval.device == "cuda" or (c.eval.device == "auto" and gpu_available())
        cards = list(c.gpus) if c.gpus else visible_gpus() if gpu else []
        per = max(1, c.eval.per_gpu)
        named = [(f"gpu{card}", card) for card in cards] or [("cpu" if not gpu else "gpu", None)]
        lanes = [ThreadLane(name if per == 1 else f"{name}.{i + 1}", card, self._evaluate, self.problem,
                            self._options, probe_gpu if card is not None and self._evaluate is harness_evaluate
                            else None)
                 for name, card in named for i in range(per)]
        if len(lanes) > 1 and not c.eval.threads:  # the lanes' evaluations split the host's cores between them
            self._threads = max(1, len(os.sched_getaffinity(0)) // len(lanes))
        self.emit({"kind": "lanes", "lanes": [lane.name for lane in lanes], "gpu": gpu})
        return Pipeline(lanes, on_event=self.emit, depth=len(lanes) + QUEUE_AHEAD)

    def _cluster_pipeline(self):
        """Lanes that are Ray actors, one per GPU of the cluster (--cluster)."""
        from . import cluster
        from .pipeline import Pipeline

        c = self.config
        spec = f"{self._evaluate.__module__}:{self._evaluate.__qualname__}"
        if "<" in spec:  # a lambda or a nested function cannot be found by name on another node
            raise ValueError(f"an evaluator for a cluster must be a module-level function, not {spec}")
        lanes = cluster.make_lanes(c.cluster, self.problem.path, self._options,
                                   timeout_s=c.eval.timeout_s * (1 + cluster.MAX_TASK_RETRIES) + 300,
                                   gpus=c.cluster_lanes if c.eval.device != "cpu" else None,
                                   cpu_lanes=(c.cluster_lanes or 1) if c.eval.device == "cpu" else 0,
                                   evaluate_spec=spec)
        self.emit({"kind": "lanes", "lanes": [lane.name for lane in lanes], "gpu": c.eval.device != "cpu"})
        return Pipeline(lanes, on_event=self.emit, depth=len(lanes) + QUEUE_AHEAD)

    def _options(self, job, gpu):
        """The harness options of one candidate on one lane: its card, and where its compiler artifacts go."""
        # no SASS in the lane: the archive keeps the cubins, which the digest and `evolve show` disassemble when read
        options = replace(self.config.eval, gpu=gpu, sass=False, threads=self._threads or self.config.eval.threads)
        limit = self.time_limits.get(job.cand_id) if isinstance(job.cand_id, int) else None
        if limit is not None and limit < options.timeout_s:
            options = replace(options, timeout_s=limit)
        if self.config.artifacts and options.dump_dir is None and isinstance(job.cand_id, int):
            options = replace(options, dump_dir=str(self.work / f"artifacts_{job.cand_id}"))
        return options

    def _launch(self, cand: Candidate, then=None) -> None:
        """Hand an archived candidate to the pipeline; `then(evaluated candidate)` runs when its verdict is in. Returns
        once the pipeline has room again, so with a depth of one the verdict is in when this returns."""
        path = self.work / f"candidate_{cand.id}.py"
        path.write_text(cand.source)
        self.waiting[cand.id] = (cand, then)
        try:
            self.pipeline.submit(cand.id, path)
        except RuntimeError as exc:  # every lane retired meanwhile: it stays pending for --resume
            self.waiting.pop(cand.id)
            self.time_limits.pop(cand.id, None)
            self.emit({"kind": "unevaluated", "candidate": cand, "reason": str(exc)})
            return
        while self.waiting and not self.pipeline.room():  # full (with one lane and no compile pool: at once)
            self._collect()

    def _collect(self, timeout: float | None = None) -> bool:
        """Take one finished evaluation from the pipeline and archive it; False when none came."""
        done = self.pipeline.collect(timeout)
        if done is None:
            return False
        if isinstance(done.cand_id, Retiming):  # a duel: an incumbent re-timed beside its challenger
            self.duels.settle(done)
            return True
        cand, then = self.waiting.pop(done.cand_id)
        self.time_limits.pop(done.cand_id, None)
        if done.verdict is None:  # no lane could evaluate it: it stays pending in the archive for --resume
            self.emit({"kind": "unevaluated", "candidate": cand, "reason": done.error})
            self.unevaluated_run += 1
            self.last_unevaluated = done.error or ""
            return True
        self.unevaluated_run = 0
        # a wait for another process's turn on the card is no guide to how long the next evaluation takes: three runs
        # sharing one card wait two turns at their start, and that estimate ended a 5-minute run after 3
        self.eval_seconds.append(max(0.0, done.seconds - card_wait_s(done.verdict)))
        if compiled_anew(done.verdict):
            self.lane_seconds[cand.id] = self.eval_seconds[-1]
        if cand.proposer in ("seed", "solution"):  # material comes first: its phase ends with its last verdict
            self.material_s = self.clock() - self.started - self.paused_s
        dump = self.work / f"artifacts_{cand.id}"
        if dump.is_dir():
            self.archive.store_artifacts(cand.id, dump)
            shutil.rmtree(dump, ignore_errors=True)
        (self.work / f"candidate_{cand.id}.py").unlink(missing_ok=True)
        verdict = done.verdict
        self.problem_fault = self.problem_fault or verdict.problem_fault
        evaluated = self.archive.record_verdict(cand.id, verdict, score_of(verdict))
        self.evaluated += 1
        self.since_improvement += 1
        incumbent = self.duels.unfair_win(evaluated, verdict)
        if incumbent is not None:
            self.duels.start(evaluated, incumbent, verdict, done.lane)
        else:
            self.admit(evaluated, noise_of(verdict))
        self.duels.measured_now(evaluated, verdict)
        if self.proposer is not None and evaluated.score is not None:  # a possible parent: its digest begins now
            self.contexts.start_digest(evaluated, verdict.kernels)
        self.emit({"kind": "candidate", "candidate": evaluated, "seconds": done.seconds, "best": self.best,
                   "lane": done.lane})
        if then is not None:
            then(evaluated)
        return True

    def drain(self) -> None:
        """Wait for every evaluation in the pipeline (before work that needs the cards to itself)."""
        while self.waiting:
            self._collect()

    def tuned_limit(self, parent_id: int) -> float | None:
        """The time limit of a setting tuned from this parent (None: this process has no time of the parent's that
        included compiling it)."""
        seconds = self.lane_seconds.get(parent_id)
        return None if seconds is None else max(TUNED_MIN_S, TUNED_TIMES * seconds)

    def submit(self, then=None, time_limit_s: float | None = None, **fields) -> Candidate | None:
        """Archive a proposal (committed), then hand it to the pipeline unless it is invalid or a duplicate; `then`
        gets the evaluated candidate (the invalid one, or None for a duplicate, at once). time_limit_s: its
        evaluation's limit, where below --timeout."""
        cand = self.archive.add_candidate(self.run_id, **fields, within_run=self.config.isolated)
        if cand is None:
            self.unusable += 1
            self.last_unusable = "a duplicate of an archived kernel"
            self.emit({"kind": "duplicate"})
        elif cand.status == "invalid":
            self.unusable += 1
            self.last_unusable = cand.error or "no usable source"
            self.emit({"kind": "invalid", "candidate": cand})
        else:
            self.unusable = 0
            if time_limit_s is not None:
                self.time_limits[cand.id] = time_limit_s
            self._launch(cand, then)
            return cand
        if then is not None:
            then(cand)
        return cand

    # -- proposals --------------------------------------------------------------------------------------------------
    # -- the rounds beside the search (rounds.py) --------------------------------------------------------------------
    def _first_lane(self):
        return self.pipeline.lanes[0] if self.pipeline is not None else None

    def _first_gpu(self) -> str | None:
        return getattr(self._first_lane(), "gpu", None)

    def _traces(self) -> bool:
        return self.contexts.language.name == "triton"  # section marks are Triton's (evolve/harness/runner/sections.py)

    def profile_step(self) -> None:
        self.rounds.profile(self.population.ranked(), self.device, self._first_gpu())
        if self._traces():
            self.rounds.trace(self.population.ranked(), self.device, self._first_gpu())

    def retime_step(self) -> list:
        """On a GPU, at the end: the best few re-timed against each other, on the first lane's card."""
        lane = self._first_lane()
        if lane is not None and not hasattr(lane, "gpu"):  # a cluster's lane: on its node, through the lane
            from .pipeline import Job

            def evaluate(path, problem, options):
                return lane.evaluate(Job(Retiming("retime", Path(path).name), Path(path), 0))
        else:
            evaluate = self._evaluate
        options = replace(self.config.eval, gpu=self._first_gpu(), sass=False)  # the first lane's card
        held = self.reported()[0]  # first: the others are re-timed against it, whatever their own figures
        ranked = self.population.ranked()
        ranked = [held] + [c for c in ranked if c.id != held.id] if held is not None else ranked
        results = self.rounds.retime(ranked, self.run_id, evaluate, options, score_of)
        winner = overtaken(results)
        if winner is not None:  # back to back, it beat the held best in every round: the run reports it
            self.population.best = next(c for c in ranked if c.id == winner)
        return results

    def audit_step(self) -> None:
        self.rounds.audit(self.device, lambda: self.reported()[0], self._first_gpu())

    # -- the loop ---------------------------------------------------------------------------------------------------
    def stop_reason(self, ahead: int = 0) -> str | None:
        """Why the run stops, or None; ahead: candidates in the pipeline, which count toward --max-candidates (no new
        one starts while they would reach it)."""
        c = self.config
        if self.problem_fault:
            return f"the problem itself failed, so no kernel can pass: {self.problem_fault[:300]}; fix it, then --resume"
        if self.best is not None and self.best.fitness is not None and self.best.fitness >= c.target:
            return f"target reached: fitness {self.best.fitness:.3f} >= {c.target}"
        if c.max_candidates is not None and self.evaluated + ahead >= c.max_candidates:
            return f"--max-candidates {c.max_candidates} evaluated"
        if c.budget_s is not None:
            elapsed = self.clock() - self.started - self.paused_s
            if c.bench:  # a bench cell's budget is its model's: the material (the same for every cell) is not in it
                elapsed -= self.material_s
            typical = statistics.median(self.eval_seconds) if self.eval_seconds else 0.0
            if elapsed + typical > c.budget_s:  # the next evaluation would end past the budget
                which = "the default budget without a GPU" if c.default_budget else "--budget"
                return (f"{which} of {format_duration(c.budget_s)} used; go on with --resume --budget 30m "
                        f"(or longer)")
        if c.max_cost is not None and self.archive.spend(self.run_id)["cost"] >= c.max_cost:
            return f"--max-cost ${c.max_cost:g} spent"
        if self.since_improvement >= c.search.stagnation:
            return f"no improvement in {c.search.stagnation} evaluated candidates"
        if self.unevaluated_run >= UNEVALUATED_STOP:
            return (f"the harness could not evaluate {self.unevaluated_run} candidates in a row (the last: "
                    f"{self.last_unevaluated[:300]}); they stay pending: check the GPUs, then --resume")
        if self.unusable >= c.search.unusable:
            # without this a broken provider (or a model that only repeats itself) would be asked forever, since
            # the other limits count evaluated candidates
            return (f"{self.unusable} proposals in a row gave nothing to evaluate (the last: "
                    f"{self.last_unusable[:300]}); check the model, its key and --api-base, then --resume")
        return None

    def start(self) -> None:
        """The run's row (new, or the one resumed), what the archive already holds for this problem and device, the
        context index (with a model), and the problem's own kernels not yet evaluated here."""
        c = self.config
        self.archive.claim_for_run()
        self.run_id = self._resumed_run() if c.resume else self._new_run()
        self.device = self.archive.run(self.run_id)["device"]
        # the interpreter ignores launch options: its tuner leaves them as written, from the first setting it records
        self.tuner.ignored = LAUNCH_KNOBS if self.device.startswith("cpu") else frozenset()
        self.versions = package_versions()
        self._admit_archived()
        if self.proposer is not None:
            self._open_context()
        self.since_improvement = 0
        self.evaluated = sum(cand.status == "evaluated" for cand in self.archive.candidates(self.run_id))
        self.evaluated_before = self.evaluated
        self.profiled_at = self.evaluated  # a resumed run profiles after --profile-every new evaluations
        self.material.extend(self._material_left())
        self.emit({"kind": "start", "run_id": self.run_id, "resumed": c.resume, "members": len(self.population)})
        if self.pipeline is None:
            self.pipeline = self.make_pipeline()

    def _resumed_run(self) -> int:
        c = self.config
        last = self.archive.run(c.run_id) if c.run_id is not None else self.archive.last_run(self.problem.name)
        if last is None or last["problem"] != self.problem.name:
            raise LookupError(f"no earlier run of {self.problem.name} in {c.db} to resume")
        if last["language"] != self.contexts.language.name:
            raise LookupError(f"run {last['id']} writes {last['language']} kernels: resume it with --language "
                              f"{last['language']}")
        self.archive.reopen_run(last["id"])
        return last["id"]

    def _new_run(self) -> int:
        c = self.config
        if c.cluster:  # the driver may have no GPU: the run's device is its lanes'
            self.pipeline = self.make_pipeline()
            device = self.pipeline.lanes[0].device(c.eval.device)
        else:
            device = device_name(c.eval.device)
        return self.archive.start_run(self.problem.name, str(self.problem.path), c.public(), device,
                                      package_versions(), self.contexts.language.name)

    def _admit_archived(self) -> None:
        """Every correct kernel archived for the problem on this device (or, isolated, in this run) joins the
        population, with the noise measured then, so near-ties are judged as before a crash."""
        c = self.config
        scope = {"run_id": self.run_id} if c.isolated else {"problem": self.problem.name, "device": self.device,
                                                            "language": self.contexts.language.name}
        failed = self.archive.failed_audits()  # a kernel that ran what it did not compile is nobody's parent
        for cand in self.archive.candidates(**scope):
            if cand.proposer == compose.COMPOSER:
                self.planner.composed.add(cand.hash)
            if cand.status == "evaluated" and cand.id not in failed:
                verdict = self.archive.verdict(cand.id) if cand.score is not None else None
                self.admit(cand, noise_of(verdict) if verdict else NOISE_FLOOR)
                if cand.knobs and cand.source:
                    self.tuner.remember(cand.source, cand.knobs, cand.score, self.steps.case_figures(cand))

    def _open_context(self) -> None:
        """The full-text index of what a model may search: the run's language's notes and installed sources, the
        problem's notes, --context's folders."""
        began = time.monotonic()
        language = self.contexts.language
        notes = project_context() / language.context_folder
        folders = [notes, *source_folders(language), self.problem.folder / "context",
                   *map(Path, self.config.context_dirs)]
        try:
            self.contexts.index = ContextIndex(folders)
        except Exception as exc:  # noqa: BLE001 - e.g. an SQLite built without FTS5: prompts go on without
            self.emit({"kind": "context_off", "reason": f"{type(exc).__name__}: {exc}"[:300]})
        else:
            self.emit({"kind": "context", "chunks": len(self.index), "files": len(self.index.files),
                       "folders": [str(f) for f in self.index.folders], "skipped": self.index.skipped,
                       "seconds": time.monotonic() - began})

    def _material_left(self) -> list[tuple[Path, str]]:
        """The problem's seeds and correct solutions not yet archived for this problem and device."""
        known = {cand.hash for cand in self.archive.candidates(self.run_id)} if self.config.isolated \
            else self.archive.known_hashes(self.problem.name, self.device)
        left = []
        language = self.contexts.language.name  # the run's language's kernels only
        for path, proposer in [(p, "seed") for p in self.problem.seed_files(language)] + \
                [(p, "solution") for p in self.problem.solution_files("correct", language)]:
            try:
                if source_hash(path.read_text()) not in known:
                    left.append((path, proposer))
            except (OSError, UnicodeDecodeError):
                continue  # an unreadable file is skipped here and reported by `evolve check-problem`
        return left

    def run(self) -> Summary:
        self.start()
        stop, interrupted = None, False
        try:
            for cand in self.archive.pending(self.run_id):  # what a crash left in flight
                self.emit({"kind": "resume", "candidate": cand})
                self._launch(cand)
            stop = self._loop()
            spent = stop.startswith(("--budget", "--max-cost", "the default budget"))  # nothing left for advice
            if self.evaluated > self.evaluated_before and not spent:
                self.drain()
                self.profile_step()  # the run's best, where it has none yet: the next run's prompts read it
                self.retime_step()
            if not self.pipeline.dead:
                self.drain()
            self.audit_step()  # before the best is reported: what it runs on the device, seen from outside it
        except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM (Terminated)
            stop, interrupted = f"interrupted ({exc.args[0] if exc.args else 'Ctrl-C'}); continue with --resume", True
        except Exception as exc:  # a fault of evolve's own: the run is closed as after Ctrl-C, and the fault named
            import traceback

            report = self.archive.path.parent / f"evolve-crash-run{self.run_id}.txt"
            try:
                report.write_text(traceback.format_exc())
            except OSError:
                report = None
            stop = f"evolve failed: {type(exc).__name__}: {exc}"[:300] + "; continue with --resume"
            self.pipeline.close()
            self.archive.finish_run(self.run_id, stop)
            shutil.rmtree(self.work, ignore_errors=True)
            raise SearchFailed(f"{stop} (every evaluated candidate is in the archive"
                               + (f"; the traceback is in {report}, please report it)" if report else ")")) from exc
        self.pipeline.close()  # candidates still in it stay pending in the archive: --resume evaluates them
        self.keep_answered()
        summary = self.summary(stop)
        self.archive.finish_run(self.run_id, stop, summary.best.id if summary.best is not None else None)
        shutil.rmtree(self.work, ignore_errors=True)
        return replace(summary, interrupted=interrupted,
                       session_evaluated=self.evaluated - self.evaluated_before if self.config.resume else None)

    def _loop(self) -> str:
        """Steps until a limit is reached; why the search stopped."""
        step = 0
        while True:
            if self.archive.paused(self.run_id):
                self.hold()
                continue  # the limits are looked at again before the next step
            if self.pipeline.dead:
                return f"no evaluation lane is left ({self.pipeline.dead}); check the GPUs, then --resume"
            reason = self.stop_reason(ahead=len(self.waiting))
            if reason is not None or not self.pipeline.room():
                if self.waiting:  # a limit is near, or the pipeline is full: let a verdict in first
                    self._collect()
                    continue
                if (stop := self.stop_reason()) is not None:
                    return stop
                continue
            if self.followups:  # a repair asked for by a verdict that came in
                self.followups.popleft()()
                continue
            island = step % len(self.population.islands)
            step += 1
            if not self._take_step(island):
                if self.waiting:  # their verdicts may open new settings to try
                    self._collect()
                    continue
                return "every knob setting the tuner would try has been evaluated"
            if step % self.config.search.migrate_every == 0:
                self.emit({"kind": "migrate", "islands": self.population.migrate()})
            if self.evaluated - self.profiled_at >= self.config.profile.every:
                self.profiled_at = self.evaluated
                if self.rounds.due(self.population.ranked(), self.device, self._traces()):
                    self.drain()  # the profiler needs the card to itself
                    self.profile_step()

    def _take_step(self, island: int) -> bool:
        """One step of the kind this turn calls for (steps.py): the problem's own kernels first; then, without a
        model, a composite or a knob setting; with one, a composite, a knob setting or a proposal by their shares.
        False when the embedded search has nothing left to try."""
        steps, search = self.steps, self.config.search
        if steps.material(island):
            return True
        if self.proposer is None:
            return steps.compose(island) or steps.tune(island) \
                or any(steps.tune(i) for i in range(len(self.population.islands)))
        if self.rng.random() < search.compose_share and steps.compose(island):
            return True
        if self.rng.random() < search.tune_share and steps.tune(island):
            return True
        steps.model(island)
        return True

    def hold(self, poll_s: float = 0.5) -> None:
        """`evolve pause`: start nothing new until `evolve resume`; model calls already in flight finish and wait
        in memory (Ctrl-C archives them as pending). Time paused does not count against --budget."""
        began = self.clock()
        self.emit({"kind": "paused"})
        while self.archive.paused(self.run_id):
            time.sleep(poll_s)
        self.paused_s += self.clock() - began
        self.emit({"kind": "resumed", "seconds": self.clock() - began})

    def keep_answered(self) -> None:
        """Proposals that arrived but were not evaluated are archived as pending: paid for, so --resume uses them.
        Calls still running are abandoned (their threads end with their calls; nothing waits for them)."""
        for pending in self.inflight:
            if pending.future.done() and pending.future.exception() is None:
                parent = pending.parent
                self.archive.add_candidate(self.run_id, **fields_of(pending.future.result(),
                                                                   (parent.id,) if parent else (),
                                                                   pending.island, parent, pending.hint_ids),
                                           within_run=self.config.isolated)
            else:
                pending.future.cancel()
        self.inflight.clear()
        self.pool.shutdown(wait=False, cancel_futures=True)
        self.contexts.close()

    # -- the launch audit -------------------------------------------------------------------------------------------
    def reported(self) -> tuple[Candidate | None, Candidate | None]:
        """(best, near tie): the run's best as reported, never one that failed a launch audit. The highest measured
        score may beat the search's best only within the noise: then the search's best is reported, the other as a
        near tie."""
        top = self.archive.best(self.problem.name, self.run_id)
        held = self.best
        if held is not None and held.id in self.archive.failed_audits():
            held = None
        if top is not None and held is not None and held.run_id == self.run_id and held.id != top.id \
                and not self.population.better(top, held):
            return held, top
        return top, None

    def summary(self, stop: str) -> Summary:
        from .launch_audit import recorded

        seeds = [c for c in self.archive.candidates(self.run_id) if c.proposer == "seed" and c.score is not None]
        everything = self.archive.candidates(self.run_id)
        best, near_tie = self.reported()
        picked = self.rounds.audited
        if picked is not None and (picked.best is None or best is None or picked.best.id == best.id):
            best, audit, failed = picked.best, picked.audit, picked.failed
        else:  # not audited in this session (interrupted): what the archive knows
            audit, failed = (recorded(self.archive, best, self.device) if best is not None else None), ()
        if best is None or near_tie is not None and near_tie.id == best.id:
            near_tie = None
        promoted = overtaken(self.rounds.retimed)  # the re-timing's choice, unless the launch audit turned it down
        return Summary(
            run_id=self.run_id, stop_reason=stop, evaluated=sum(c.status == "evaluated" for c in everything),
            correct=sum(bool(c.ok) for c in everything), best=best,
            seed_best=max(seeds, key=lambda c: c.score) if seeds else None,
            cost=self.archive.spend(self.run_id)["cost"], seconds=self.clock() - self.started,
            db=str(self.archive.path), near_tie=near_tie, retimed=tuple(self.rounds.retimed), audit=audit,
            audit_failed=failed, promoted=promoted if best is not None and best.id == promoted else None,
        )
