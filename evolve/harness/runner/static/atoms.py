"""The atoms of the static check's reading (flow.py says what each is), and the kinds of node the reading groups."""
from __future__ import annotations

import ast

OWN = ("own",)
UNKNOWN = ("unknown",)
# Calls into these libraries make objects of their own (tensors, configs); a call into the standard library (max,
# functools.reduce, contextlib.nullcontext) may hand one of its arguments back.
LIBRARY_TOPS = ("torch", "triton")
COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
CONTAINERS = (ast.List, ast.Tuple, ast.Set, ast.Dict) + COMPREHENSIONS
