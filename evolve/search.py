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

import random
import shutil
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from . import lanes, limits, model_bandit, standing, strategies
from .archive import Archive, Candidate
from .case_figures import CaseFigures
from .config import RunConfig
from .diversity import cell_of
from .harness import evaluate as harness_evaluate
from .harness import jail, load_problem
from .harness.parent.ladder import device_name
from .lang import get as get_language
from .ledger import Ledger
from .pipeline import Retiming
from .population import NOISE_FLOOR, Policy, Population
from .promotion import Duels
from .prompt_context import Contexts
from .rounds import Rounds
from .summary import Summary, summarize
from .scoring import noise_of, score_of


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




BUSY_POLL_S = 0.2  # how long a run whose agent sessions are at work waits for a verdict before it asks them again
RACE_MARGIN = 0.05  # below the best less its noise, where a race stops timing a candidate (Search._race_bar)


def race_bar(race: bool, population: Population, proposal: strategies.Proposal | None) -> float | None:
    """The figure a proposal's candidate must be able to reach to be timed on every case: the best's, or its
    parent's where that is lower (a child that improves a slower structure is worth its figure to the diversity
    archive, the bandit and the lessons), less the noise. None without a proposal (a re-timing, a candidate a crash
    left), for the problem's own kernels (their verdicts are kept whole for later runs), and before a best with a
    roofline figure is held."""
    best = population.best
    if not race or best is None or best.fitness is None or proposal is None or proposal.strategy == "material":
        return None
    parents = [population.members[i] for i in proposal.fields.get("parent_ids") or () if i in population.members]
    to_beat = min([best] + [p for p in parents if p.fitness is not None], key=lambda c: c.fitness)
    # a figure may be older or from another card than this candidate's (a duel settles that for a win): the bar sits
    # RACE_MARGIN lower still, so only a candidate far from it is cut short
    return to_beat.fitness * (1 - population.noise.get(to_beat.id, NOISE_FLOOR) - RACE_MARGIN)


def resume_run(archive: Archive, config: RunConfig, problem: str, language: str) -> int:
    """Reopen the run --resume names (--run, else the problem's last); its id."""
    last = archive.run(config.run_id) if config.run_id is not None else archive.last_run(problem)
    if last is None or last["problem"] != problem:
        raise LookupError(f"no earlier run of {problem} in {config.db} to resume")
    if last["language"] != language:
        raise LookupError(f"run {last['id']} writes {last['language']} kernels: resume it with --language "
                          f"{last['language']}")
    archive.reopen_run(last["id"])
    return last["id"]


class SearchFailed(RuntimeError):
    """evolve's own fault ended a run; the run is closed in the archive and can be resumed."""


class Search:
    """The loop: ask the strategies (strategies/) for proposals, archive each, hand it to a lane, land each verdict
    in the ledger (ledger.py), stop when a limit is reached. `evaluate` (the harness by default) and `clock` are
    injected, so the loop can run against another evaluator (a pool, a cluster) and be tested without one."""

    def __init__(self, config: RunConfig, archive: Archive, proposer=None, on_event=None, evaluate=harness_evaluate,
                 clock=time.monotonic, auditor=None, known_material: bool | None = None, problem=None):
        self.config, self.archive, self.proposer = config, archive, proposer
        # the machine's kept verdicts of material (evolve/known.py) hold what the harness returned, nothing else, and
        # persist only where no runner can write the cache folder (Landlock), as the harness's own caches
        if known_material is None:
            known_material = evaluate is harness_evaluate and jail.abi_version() > 0
        self.problem = load_problem(problem or config.problem_dir)  # read once a run: the lanes are handed it too
        self.rng = random.Random(config.seed)
        self.emit = on_event or (lambda event: None)
        self.population = Population(Policy(islands=config.search.islands, exploit=config.search.exploit,
                                            inspirations=config.search.inspirations,
                                            diversity=config.search.diversity), self.rng,
                                     locate=lambda cand: cell_of(cand, archive.verdict(cand.id)))
        self._evaluate, self.clock = evaluate, clock
        self.pipeline = None  # made when the run starts (make_pipeline)
        self._threads = 0  # CPU threads per evaluation process when lanes share the host (make_pipeline)
        # candidate id (or a duel's Retiming) -> (candidate, the proposal it answers), handed to the pipeline
        self.waiting: dict = {}
        self.eval_seconds: list[float] = []  # each evaluation's wall time but its waits for the card, for the budget
        self.time_limits: dict[int, float] = {}  # candidate id -> its time limit, where below --timeout
        self.run_id = 0
        self.paused_s = 0.0  # seconds held by `evolve pause`
        self.started = clock()
        self.work = Path(tempfile.mkdtemp(prefix="evolve-run-"))
        self.device = ""  # the run's device name (archived kernels from other devices are not material)
        self.versions: dict = {}  # the packages' versions, as the run records them
        self.material_s = 0.0  # seconds from this session's start to the verdict of the problem's last own kernel
        # what prompts are told, with the parents' SASS digests (made off this thread)
        # (a bench cell's prompts carry no lessons of other runs: every model starts from the same place)
        self.contexts = Contexts(archive, self.problem, get_language(config.eval.language or self.problem.languages[0]),
                                 lessons=config.search.lessons and not config.isolated)
        self.figures = CaseFigures(archive.verdict)
        self.rounds = Rounds(config, archive, self.problem, self.work, self.emit, auditor)  # profiles, re-timing, audit
        self.profiled_at = 0  # evaluations when profiling last ran
        self.services = strategies.Services(
            config=config, problem=self.problem, archive=archive, figures=self.figures, emit=self.emit, rng=self.rng,
            language=self.contexts.language.name, proposer=proposer, contexts=self.contexts,
            keep_verdicts=known_material, evaluate=evaluate, model_choice=model_bandit.for_run(config, proposer))
        self.strategies = strategies.build(self.services)
        duels = Duels(self.population, archive, self.emit, clock, config.fair_window_s, self._retime_beside)
        self.ledger = Ledger(archive, self.population, duels, self.emit, self.strategies, self.view)

    @property
    def best(self) -> Candidate | None:
        return self.population.best

    @property
    def evaluated(self) -> int:
        return self.ledger.evaluated

    @property
    def lane_seconds(self) -> dict[int, float]:
        return self.ledger.lane_seconds

    def admit(self, cand: Candidate, noise: float) -> None:
        self.ledger.admit(cand, noise)

    def view(self) -> strategies.View:
        """What the strategies read of the run now."""
        c = self.config
        scope = {"run_id": self.run_id} if c.isolated else {"problem": self.problem.name, "device": self.device,
                                                            "language": self.contexts.language.name}
        in_flight = tuple(cand for key, (cand, _) in self.waiting.items() if isinstance(key, int))
        return strategies.View(config=c, problem=self.problem, archive=self.archive, population=self.population,
                               figures=self.figures, run_id=self.run_id, scope=scope, device=self.device,
                               versions=self.versions, in_flight=in_flight, lane_seconds=self.ledger.lane_seconds,
                               problem_fault=self.ledger.problem_fault, gpu=self._first_gpu())

    # -- evaluation -------------------------------------------------------------------------------------------------
    def make_pipeline(self):
        """Lanes: one per GPU in --gpus, or every visible one; one lane without a GPU; Ray actors with --cluster."""
        pipeline, self._threads = lanes.make_pipeline(self.config, self.problem, self._evaluate, self._options,
                                                      self.emit, probe=self._evaluate is harness_evaluate)
        return pipeline

    def _options(self, job, gpu):
        """The harness options of one candidate on one lane: its card, and where its compiler artifacts go."""
        # no SASS in the lane: the archive keeps the cubins, which the digest and `evolve show` disassemble when read
        options = replace(self.config.eval, gpu=gpu, sass=False, threads=self._threads or self.config.eval.threads)
        limit = self.time_limits.get(job.cand_id) if isinstance(job.cand_id, int) else None
        if limit is not None and limit < options.timeout_s:
            options = replace(options, timeout_s=limit)
        waiting = self.waiting.get(job.cand_id) if isinstance(job.cand_id, int) else None
        options = replace(options, race_below=race_bar(self.config.race, self.population, (waiting or (0, None))[1]))
        if self.config.artifacts and options.dump_dir is None and isinstance(job.cand_id, int):
            options = replace(options, dump_dir=str(self.work / f"artifacts_{job.cand_id}"))
        return options

    def _launch(self, cand: Candidate, proposal: strategies.Proposal | None = None) -> None:
        """Hand an archived candidate to the pipeline. Returns once the pipeline has room again, so with a depth of
        one the verdict is in when this returns."""
        path = self.work / f"candidate_{cand.id}.py"
        path.write_text(cand.source)
        self.waiting[cand.id] = (cand, proposal)
        try:
            self.pipeline.submit(cand.id, path)
        except RuntimeError as exc:  # every lane retired meanwhile: it stays pending for --resume
            self.waiting.pop(cand.id)
            self.time_limits.pop(cand.id, None)
            self.ledger.unevaluated(cand, str(exc), lanes_failed=False)
            return
        while self.waiting and not self.pipeline.room():  # full (with one lane and no compile pool: at once)
            self._collect()

    def _retime_beside(self, key: Retiming, incumbent: Candidate, lane: str | None) -> bool:
        """A duel: the incumbent timed again on the challenger's lane, next on that card; False when no lane is left."""
        path = self.work / f"duel_{key.of}_{incumbent.id}.py"
        path.write_text(incumbent.source)
        try:
            self.pipeline.submit(key, path, lane=lane, beyond_depth=True)
        except RuntimeError:
            path.unlink(missing_ok=True)
            return False
        self.waiting[key] = (incumbent, None)
        return True

    def _collect(self, timeout: float | None = None) -> bool:
        """Take one finished evaluation from the pipeline and land it in the ledger; False when none came."""
        done = self.pipeline.collect(timeout)
        if done is None:
            return False
        cand, proposal = self.waiting.pop(done.cand_id)
        if isinstance(done.cand_id, Retiming):  # a duel: an incumbent re-timed beside its challenger
            (self.work / f"duel_{done.cand_id.of}_{cand.id}.py").unlink(missing_ok=True)
            self.ledger.settle(done)
            return True
        self.time_limits.pop(done.cand_id, None)
        if done.verdict is None:  # no lane could evaluate it: it stays pending in the archive for --resume
            self.ledger.unevaluated(cand, done.error)
            return True
        # a wait for another process's turn on the card is no guide to how long the next evaluation takes: three runs
        # sharing one card wait two turns at their start, and that estimate ended a 5-minute run after 3
        self.eval_seconds.append(max(0.0, done.seconds - card_wait_s(done.verdict)))
        if cand.proposer in ("seed", "solution"):  # material comes first: its phase ends with its last verdict
            self.material_s = self.clock() - self.started - self.paused_s
        dump = self.work / f"artifacts_{cand.id}"
        if dump.is_dir():
            self.archive.artifacts.store(cand.id, dump)
            shutil.rmtree(dump, ignore_errors=True)
        (self.work / f"candidate_{cand.id}.py").unlink(missing_ok=True)
        self.ledger.land(cand, done.verdict, proposal, seconds=self.eval_seconds[-1], lane=done.lane, fresh=True)
        return True

    def drain(self) -> None:
        """Wait for every evaluation in the pipeline (before work that needs the cards to itself)."""
        while self.waiting:
            self._collect()

    def submit(self, proposal: strategies.Proposal) -> Candidate | None:
        """Archive a proposal (committed), then hand it to the pipeline, or land the verdict this machine kept for it;
        an invalid one or a duplicate (None) lands at once as what it is."""
        cand = self.archive.add_candidate(self.run_id, **proposal.fields, within_run=self.config.isolated)
        if cand is None or cand.status == "invalid":
            self.ledger.refused(cand, proposal)
            return cand
        self.ledger.accepted()
        if proposal.kept is not None:
            kept = proposal.kept
            if self.config.artifacts and kept.artifacts:
                self.archive.artifacts.store_files(cand.id, kept.artifacts)
            return self.ledger.land(cand, kept.verdict, proposal, lane=None, fresh=False,
                                    seconds=sum(rung.seconds for rung in kept.verdict.rungs))
        if proposal.time_limit_s is not None:
            self.time_limits[cand.id] = proposal.time_limit_s
        self._launch(cand, proposal)
        return cand

    def step(self, name: str, island: int) -> bool:
        """Ask one strategy for a proposal and submit it; False when it has none now."""
        strategy = self.strategies.get(name)
        while strategy is not None:
            proposal = strategy.propose(island, self.view())
            if proposal is None:
                return False
            if self.submit(proposal) is not None or not strategy.again_after_duplicate:
                return True
        return False

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
        self.ledger.retimed(ranked, results)
        return results

    def audit_step(self) -> None:
        self.rounds.audit(self.device, lambda: self.reported()[0], self._first_gpu())

    def reported(self) -> tuple[Candidate | None, Candidate | None]:
        """(best, near tie) as the run reports them now (standing.py)."""
        return standing.run_best(self.archive, self.population, self.problem.name, self.run_id)

    # -- the loop ---------------------------------------------------------------------------------------------------
    def stop_reason(self, ahead: int = 0) -> str | None:
        """Why the run stops, or None; ahead: candidates in the pipeline, which count toward --max-candidates (no new
        one starts while they would reach it)."""
        elapsed = self.clock() - self.started - self.paused_s
        if self.config.bench:  # a bench cell's budget is its model's: the material (the same for all) is not in it
            elapsed -= self.material_s
        return limits.stop_reason(self.config, self.ledger, self.best, elapsed, self.eval_seconds,
                                  lambda: self.archive.spend(self.run_id)["cost"], ahead)

    def start(self) -> None:
        """The run's row (new, or the one resumed), what the archive already holds for this problem and device, the
        context index (with a model), and the problem's own kernels not yet evaluated here."""
        c = self.config
        self.archive.claim_for_run()
        self.run_id = self.ledger.run_id = resume_run(self.archive, c, self.problem.name, self.contexts.language.name) \
            if c.resume else self._new_run()
        self.device = self.archive.run(self.run_id)["device"]
        self.versions = package_versions()
        view = self.view()
        for strategy in self.strategies.values():
            strategy.start(view)
        self._admit_archived()
        if self.proposer is not None:
            self.contexts.open_index(self.config.context_dirs, self.emit)
        self.ledger.since_improvement = 0
        self.ledger.evaluated = sum(cand.status == "evaluated" for cand in self.archive.candidates(self.run_id))
        self.evaluated_before = self.ledger.evaluated
        self.profiled_at = self.ledger.evaluated  # a resumed run profiles after --profile-every new evaluations
        self.emit({"kind": "start", "run_id": self.run_id, "resumed": c.resume, "members": len(self.population)})
        if self.pipeline is None:
            self.pipeline = self.make_pipeline()

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
        """Every correct kernel archived for the problem on this device (or, isolated, in this run) lands in the
        ledger as a member, with the noise measured then, so near-ties are judged as before a crash."""
        failed = self.archive.launch_audits.failed()  # a kernel that ran what it did not compile is nobody's parent
        for cand in self.archive.candidates(**self.view().scope):
            if cand.status == "evaluated" and cand.id not in failed:
                verdict = self.archive.verdict(cand.id) if cand.score is not None else None
                self.ledger.archived(cand, noise_of(verdict) if verdict else NOISE_FLOOR)

    def run(self) -> Summary:
        self.start()
        stop, interrupted = None, False
        try:
            for cand in self.archive.pending(self.run_id):  # what a crash left in flight
                self.emit({"kind": "resume", "candidate": cand})
                self._launch(cand)
            stop = self._loop()
            spent = stop.startswith(("--budget", "--max-cost", "the default budget"))  # nothing left for advice
            if self.ledger.evaluated > self.evaluated_before and not spent:
                self.drain()
                self.profile_step()  # the run's best, where it has none yet: the next run's prompts read it
                self.retime_step()
            if not self.pipeline.dead:
                self.drain()
            self.audit_step()  # before the best is reported: what it runs on the device, seen from outside it
        except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM (Terminated)
            stop, interrupted = f"interrupted ({exc.args[0] if exc.args else 'Ctrl-C'}); continue with --resume", True
        except Exception as exc:  # a fault of evolve's own: the run is closed as after Ctrl-C, and the fault named
            raise self._failed(exc) from exc
        self.pipeline.close()  # candidates still in it stay pending in the archive: --resume evaluates them
        self.keep_answered()
        summary = self.summary(stop)
        self.archive.finish_run(self.run_id, stop, summary.best.id if summary.best is not None else None)
        shutil.rmtree(self.work, ignore_errors=True)
        return replace(summary, interrupted=interrupted,
                       session_evaluated=self.ledger.evaluated - self.evaluated_before if self.config.resume else None)

    def _failed(self, exc: Exception) -> SearchFailed:
        """A fault of evolve's own: the traceback written beside the archive, the run closed for --resume."""
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
        return SearchFailed(f"{stop} (every evaluated candidate is in the archive"
                            + (f"; the traceback is in {report}, please report it)" if report else ")"))

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
            if self._follow_up():  # a repair asked for by a verdict that came in
                continue
            island = step % len(self.population.islands)
            step += 1
            if not self._take_step(island):
                if self.waiting:  # their verdicts may open new settings to try
                    self._collect(timeout=BUSY_POLL_S if self._busy() else None)
                    continue
                if self._busy():  # agent sessions at work and nothing else to evaluate: the limits again
                    continue
                return "every knob setting the tuner would try has been evaluated"
            if step % self.config.search.migrate_every == 0:
                self.emit({"kind": "migrate", "islands": self.population.migrate()})
            if self.ledger.evaluated - self.profiled_at >= self.config.profile.every:
                self.profiled_at = self.ledger.evaluated
                if self.rounds.due(self.population.ranked(), self.device, self._traces()):
                    self.drain()  # the profiler needs the card to itself
                    self.profile_step()

    def _follow_up(self) -> bool:
        """A follow-up strategy's proposal (a repair), ahead of the turn's own step."""
        return any(self.step(entry.name, 0) for entry in strategies.REGISTERED if entry.follow_up)

    def _take_step(self, island: int) -> bool:
        """One step: each strategy in the registry's order (strategies/registry.py), the ones with a share asked by
        chance where a model runs (where one-shot and agent models both run, the one-shot ones by their part of the
        models' weight); without a model the embedded search tries every island's untried settings last. False when
        the embedded search has nothing left to try."""
        for entry in strategies.REGISTERED:
            if entry.follow_up or entry.name not in self.strategies:
                continue
            share = entry.share(self.services) if entry.share is not None and self.proposer is not None else None
            if share is not None and self.rng.random() >= share:
                continue
            if self.step(entry.name, island):
                return True
        if self._busy():  # agent sessions at work: the embedded search's settings wait for them
            return False
        return any(self.step("tuner", i) for i in range(len(self.population.islands)))

    def _busy(self) -> bool:
        return any(strategy.busy() for strategy in self.strategies.values())

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
        """Proposals that arrived but were not evaluated are archived as pending: paid for, so --resume uses them."""
        for strategy in self.strategies.values():
            for proposal in strategy.close():
                self.archive.add_candidate(self.run_id, **proposal.fields, within_run=self.config.isolated)
        self.contexts.close()

    def summary(self, stop: str) -> Summary:
        return summarize(self.archive, self.run_id, stop, self.reported(), self.rounds, self.device,
                         self.clock() - self.started)
