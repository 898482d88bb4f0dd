"""The tools of an agent session (strategies/agent.py), as tool_registry.py names and describes them: compile, check,
time, asm and profile a version through the sealed harness, read the notes and the parent, submit. Every call
evaluates a file this process wrote from the model's text, with the run's `evaluate`, as `evolve eval` does: nothing
the model sends runs anywhere else. The session is bounded in rounds, tokens, dollars and wall time."""
from __future__ import annotations

import os
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path

from .knowledge import RESULT_CHARS, Toolbox, tool_arguments
from .harness.parent.ladder import on_gpu as on_gpu_device
from .tool_answers import LAST_RUNG, asm_answer, compile_device, default_cases, ladder_answer
from .tool_registry import PROPOSAL, SESSION, SESSION_FIXED, functions

HARNESS_TOOLS = ("compile", "check", "time", "asm")


@dataclass(frozen=True)
class Bounds:
    """What one session may spend: model calls that ask for tools, tokens, dollars, wall seconds."""
    rounds: int
    tokens: int
    dollars: float
    seconds: float


class AgentToolbox(Toolbox):
    """The session's tools. problem: the loaded problem; evaluate(path, problem dir, options): the run's harness;
    profiler: a profiling.Profiler, or None where the run cannot profile."""

    def __init__(self, index, parent, problem, options, evaluate, bounds: Bounds, profiler=None, stopped=None):
        super().__init__(index, parent)
        self.problem, self.options, self.evaluate, self.bounds = problem, options, evaluate, bounds
        self.profiler = profiler
        self.stopped = stopped  # a threading.Event set when the run ends: the session ends at its next round
        self.rounds = bounds.rounds  # model calls that may ask for tools (proposer.propose reads it)
        self.started = time.monotonic()

    @property
    def schemas(self) -> list[dict]:
        return functions(SESSION, SESSION_FIXED)

    def over(self, tokens: int, dollars: float) -> str | None:
        """Why the session must end now (a bound reached), or None."""
        b = self.bounds
        if self.stopped is not None and self.stopped.is_set():
            return "the run stopped"
        if tokens > b.tokens:
            return f"the session used {tokens} tokens, over its bound of {b.tokens}"
        if dollars > b.dollars:
            return f"the session cost ${dollars:.2f}, over its bound of ${b.dollars:.2f}"
        if time.monotonic() - self.started > b.seconds:
            return f"the session ran past its {b.seconds:.0f} s"
        return None

    def run(self, name: str, arguments) -> str:
        if name in PROPOSAL:
            return super().run(name, arguments)
        if name not in SESSION:
            return f"error: no tool {name!r}; the tools are {', '.join(SESSION)}"
        args = tool_arguments(arguments)
        if isinstance(args, str):
            return args
        source = args.get("source")
        if not isinstance(source, str) or not source.strip():
            return "error: give the complete program as `source`"
        if name == "submit":
            self.submitted = source
            return "submitted: it will be evaluated as a candidate; the session ends here"
        left = self.bounds.seconds - (time.monotonic() - self.started)
        if self.stopped is not None and self.stopped.is_set():
            return "error: the run stopped; the session ends"
        if left <= 0:
            return "error: the session's time is up; submit the program now"
        try:
            text = self.profile(source, args.get("case"), left) if name == "profile" else \
                self._harness(name, source, args, left)
        except ValueError as exc:
            return f"error: {exc}"
        except Exception as exc:  # noqa: BLE001 - the harness could not finish the call (evicted, the card busy): the
            # model reads it and may call again; the run goes on
            return f"error: the {name} call could not finish ({type(exc).__name__}: {str(exc)[:300]}); try again"
        return text if len(text) <= RESULT_CHARS else text[:RESULT_CHARS].rstrip() + "\n[...]"

    def _harness(self, name: str, source: str, args: dict, left: float) -> str:
        """compile, check, time or asm: the harness's verdict on the source, answered as the MCP server answers."""
        options = replace(self.options, timeout_s=min(self.options.timeout_s, left), dump_dir=None, prewarm=False,
                          last_rung=LAST_RUNG[name])
        if name in ("compile", "asm"):
            options = replace(options, device=compile_device(self.options.language or self.problem.languages[0],
                                                             options.device))
        on_gpu = on_gpu_device(options.device)
        if name == "time":
            cases = args.get("cases") or default_cases(self.problem, on_gpu)
            if not isinstance(cases, list) or not 1 <= len(cases) <= 2 or not all(isinstance(c, str) for c in cases):
                raise ValueError("cases is a list of one or two benchmark case labels")
            options = replace(options, bench_cases=tuple(cases))
        with tempfile.TemporaryDirectory(prefix="evolve-agent-") as folder:
            path = Path(folder) / "candidate.py"
            path.write_text(source)
            dump = Path(folder) / "compiled"
            if name == "asm":
                options = replace(options, dump_dir=str(dump), sass=True)
            verdict = self.evaluate(path, self.problem.path, options).to_json()
            names = sorted(os.listdir(dump)) if name == "asm" and dump.is_dir() else []
            if name != "asm" or not names:
                return ladder_answer("compile" if name == "asm" else name, verdict)
            kind = str(args.get("kind") or "sass")
            return asm_answer(names, lambda n: (dump / n).read_bytes(), kind, args.get("kernel"), "this program")

    def profile(self, source: str, case, left: float) -> str:
        """Nsight Compute on one benchmark case (the first unless named), holding the card as a run's profile does."""
        if self.profiler is None or not on_gpu_device(self.options.device):
            return "error: profiling needs a GPU with Nsight Compute; this run has none (compile and check work)"
        labels = [c.label for c in self.problem.benchmarks]
        label = str(case) if case else labels[0]
        if label not in labels:
            raise ValueError(f"no benchmark case {label!r}; the cases are: {', '.join(labels)}")
        from .harness.parent.lease import holding
        from .profiling import render

        with tempfile.TemporaryDirectory(prefix="evolve-agent-") as folder:
            path = Path(folder) / "candidate.py"
            path.write_text(source)
            # the card to itself, as a run's profile round has it: the lanes' evaluations stand still meanwhile
            with holding(("gpu", self.options.gpu), "agent-profile", timeout_s=left):
                result = self._profiler_within(left).profile(path, self.problem.path, labels.index(label),
                                                             beside=self.problem.beside_files(), case_label=label,
                                                             gpu=self.options.gpu)
        return f"profiled {label}\n{render(result.summary)}" if result.ok else f"not profiled: {result.message}"

    def _profiler_within(self, seconds: float):
        """The run's profiler with its child's limit cut to what the session has left."""
        import copy

        bounded = copy.copy(self.profiler)
        bounded.timeout_s = min(self.profiler.timeout_s, seconds)
        return bounded


