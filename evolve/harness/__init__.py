"""The harness: evaluates one candidate kernel against one problem. Imports torch, triton, numpy and stdlib only."""
from .ladder import RUNGS, EvalOptions, evaluate
from .problem import Problem, ProblemError, load_problem

__all__ = ["RUNGS", "EvalOptions", "evaluate", "Problem", "ProblemError", "load_problem"]
