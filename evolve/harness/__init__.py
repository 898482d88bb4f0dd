"""The harness: evaluates one candidate kernel against one problem. Imports torch, triton, numpy, the standard library
and, of evolve, only the candidate language's rules (evolve/lang) and what counts as a secret (evolve/redact.py)."""
from .formats import load_problem
from .ladder import RUNGS, EvalOptions, evaluate
from .problem import Problem, ProblemError
from .verdict import BenchmarkRow, RungResult, Verdict

__all__ = ["RUNGS", "EvalOptions", "evaluate", "Problem", "ProblemError", "load_problem", "BenchmarkRow", "RungResult",
           "Verdict"]
