"""`evolve best`'s check before export: the archived best goes up the whole ladder again, then (on a GPU with Nsight
Compute) through the launch audit; one that fails the audit is left out for good and the next best is tried."""
from __future__ import annotations

import tempfile
from pathlib import Path

from .standing import problem_best


class Reverifier:
    """say(line): where the report goes (stdout or stderr, as the command prints the source on the other)."""

    def __init__(self, archive, problem, loaded, device: str, say):
        from .harness.parent.ladder import device_name

        self.archive, self.problem, self.loaded, self.say = archive, problem, loaded, say
        self.device = device
        self.where = device_name(device)
        self.auditor = None  # launch_audit.Auditor, made at the first audit
        self.over: dict = {}  # the candidate reported() returned -> the higher score its run reported it over

    def reported(self):
        """The problem's best by standing.problem_best, never one that failed a launch audit."""
        chosen, top = problem_best(self.archive, self.loaded.name)
        if chosen is not None and top is not None:
            self.over[chosen.id] = top
        return chosen

    def header(self, cand) -> None:
        self.say(f"#{cand.id} from run {cand.run_id} ({cand.proposer}{' ' + cand.model if cand.model else ''}), "
                 f"score {cand.score:.4g}")
        top = self.over.get(cand.id)
        if top is not None:
            self.say(f"  run {top.run_id}'s reported best: #{top.id} scored higher ({top.score:.4g}), within the "
                     f"run's noise, or #{cand.id} re-timed above it in every round")

    def check(self, cand):
        """The whole ladder again, then the launch audit (a pass on record for this device stands). A kernel that
        no longer passes the ladder raises NoLongerPasses."""
        from .harness import EvalOptions, evaluate
        from .launch_audit import NEEDS_GPU, NOT_RUN, PASSED, Audit, Auditor, allowed_names, from_record
        from .render import ladder_lines, rung_line, shape_table

        self.header(cand)
        self.say("re-verifying it through the whole ladder (--no-verify skips this)")
        printed = []

        def live(rung):
            if rung.name not in ("benchmark", "roofline"):
                printed.append(rung.name)
                self.say(rung_line(rung))

        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "best.py"
            path.write_text(cand.source)
            verdict = evaluate(path, self.problem, EvalOptions(device=self.device), on_rung=live)
        for rung, line in zip(verdict.rungs, ladder_lines(verdict)):
            if rung.name not in printed:
                self.say(line)
        for line in shape_table(verdict):
            self.say(line)
        if not verdict.ok:
            raise NoLongerPasses("the archived best no longer passes the ladder; not exported")
        held = from_record(self.archive.launch_audits.get(cand.id, self.where))
        if verdict.mode != "gpu":
            audit = Audit(NOT_RUN, NEEDS_GPU)
        elif held is not None and held.status == PASSED:
            audit = held
        else:
            self.auditor = self.auditor or Auditor()
            audit = self.auditor.audit(cand.source, self.problem, allowed_names(verdict, cand.source),
                                       beside=self.loaded.beside_files())
        self.say(audit.line + (" (on record)" if audit.recorded else ""))
        return audit


class NoLongerPasses(RuntimeError):
    """The archived best failed a rung when verified again."""
