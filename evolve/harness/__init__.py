"""The harness: evaluates one candidate kernel against one problem. Imports torch, triton, numpy, the standard library
and, of evolve, only the candidate language's rules (evolve/lang) and what counts as a secret (evolve/redact.py).

Its code is grouped by the process that runs it: parent/ (evolve's own process: `evaluate`), measurer/ (the trusted
measurer), runner/ (beside candidate code, jailed) and shared/ (what the processes say to each other and share)."""
from .parent.ladder import RUNGS, EvalOptions, evaluate
from .parent.verdict import BenchmarkRow, RungResult, Verdict
from .runner import jail
from .shared.formats import load_problem
from .shared.problem import Problem, ProblemError

__all__ = ["RUNGS", "EvalOptions", "evaluate", "Problem", "ProblemError", "load_problem", "BenchmarkRow", "RungResult",
           "Verdict", "jail"]
