"""The tools of an agent session (strategies/agent.py): compile and check a version through the sealed harness,
read the notes, submit. Every call evaluates a file this process wrote from the model's text, with `evaluate`, as
`evolve eval` does: nothing the model sends runs anywhere else. The session is bounded in rounds and wall time."""
from __future__ import annotations

import json
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from .knowledge import TOOLS as CONTEXT_TOOLS
from .knowledge import Toolbox

_SOURCE = {"type": "string", "description": "the complete program: the whole .py file, custom_kernel included"}
AGENT_TOOLS = [
    {"type": "function", "function": {
        "name": "compile",
        "description": "Load and compile a version: whether it passes the static check and compiles, with each "
                       "kernel's registers and spills, or the error that stopped it. Nothing is timed.",
        "parameters": {"type": "object", "properties": {"source": _SOURCE}, "required": ["source"]}}},
    {"type": "function", "function": {
        "name": "check",
        "description": "Run a version on the problem's test shapes and check its outputs against the reference, "
                       "through the sealed harness: each rung's result up to correctness. Advice, never a verdict: "
                       "only a submitted program is judged.",
        "parameters": {"type": "object", "properties": {"source": _SOURCE}, "required": ["source"]}}},
    {"type": "function", "function": {
        "name": "submit",
        "description": "Submit the complete program to be evaluated as a candidate; the session ends.",
        "parameters": {"type": "object", "properties": {"source": _SOURCE}, "required": ["source"]}}},
]
SHOWN_RUNGS = {"compile": ("load", "compile"), "check": ("load", "compile", "run", "correctness")}


class AgentToolbox(Toolbox):
    """The context tools, plus compile, check and submit. evaluate(path, problem, options): the harness's."""

    def __init__(self, index, parent, problem, options, evaluate, rounds: int, seconds: float):
        super().__init__(index, parent)
        self.problem, self.options, self.evaluate = problem, options, evaluate
        self.rounds = rounds  # model calls that may ask for tools (proposer.propose reads it)
        self.deadline = time.monotonic() + seconds

    @property
    def schemas(self) -> list[dict]:
        return CONTEXT_TOOLS + AGENT_TOOLS

    def run(self, name: str, arguments) -> str:
        if name not in SHOWN_RUNGS and name != "submit":
            return super().run(name, arguments)
        try:
            args = json.loads(arguments) if isinstance(arguments, str) else dict(arguments or {})
            source = args.get("source") if isinstance(args, dict) else None
        except (ValueError, TypeError) as exc:
            return f"error: the arguments are not JSON ({exc})"
        if not isinstance(source, str) or not source.strip():
            return "error: give the complete program as `source`"
        if name == "submit":
            self.submitted = source
            return "submitted: it will be evaluated as a candidate; the session ends here"
        left = self.deadline - time.monotonic()
        if left <= 0:
            return "error: the session's time is up; submit the program now"
        return self._ladder(name, source, left)

    def _ladder(self, name: str, source: str, left: float) -> str:
        """The harness's verdict on the source, said up to the tool's last rung: a one-line summary, then JSON."""
        options = replace(self.options, timeout_s=min(self.options.timeout_s, left), dump_dir=None)
        with tempfile.TemporaryDirectory(prefix="evolve-agent-") as folder:
            path = Path(folder) / "candidate.py"
            path.write_text(source)
            verdict = self.evaluate(path, self.problem, options)
        shown = [r for r in verdict.rungs if r.name in SHOWN_RUNGS[name]]
        failed = next((r for r in shown if r.status == "failed"), None)
        summary = f"failed at {failed.name}: {(failed.reason or '')[:300]}" if failed else \
            ("compiles" if name == "compile" else "runs and is correct on the test shapes")
        rungs = [{"name": r.name, "status": r.status, "reason": r.reason} for r in shown]
        kernels = list({json.dumps({k: kernel.get(k) for k in ("name", "regs", "spills", "smem")}): None
                        for kernel in verdict.kernels if isinstance(kernel, dict)})[:8]  # each distinct once
        kernels = [json.loads(k) for k in kernels]
        return summary + "\n" + json.dumps({"rungs": rungs, "kernels": kernels})
