"""The static check's Python-level tables, the same for any candidate language hosted in Python (a language's own
are its StaticRules, evolve/lang)."""
from __future__ import annotations

import ast

REFUSED_PATHS = {
    "logging.config": "logging.config imports modules named in strings",
    "operator.attrgetter": "it reads attributes named in strings",
    "operator.methodcaller": "it calls methods named in strings",
}
DYNAMIC_BUILTINS = frozenset({"eval", "exec", "compile", "__import__", "globals", "locals", "vars", "open",
                              "breakpoint", "setattr", "delattr", "__builtins__", "__loader__", "__spec__"})
NAMED_ATTRIBUTE_BUILTINS = frozenset({"getattr", "hasattr"})
SAFE_DUNDERS = frozenset({"__name__", "__qualname__", "__doc__", "__init__"})
INTROSPECTION = frozenset({
    "gi_frame", "gi_code", "gi_yieldfrom", "cr_frame", "cr_code", "cr_await", "ag_frame", "ag_code", "f_back",
    "f_locals", "f_globals", "f_builtins", "f_code", "f_trace", "tb_frame", "tb_next",
})
CONTAINER_NODES = (ast.List, ast.Tuple, ast.Set, ast.Dict, ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)
UNFOLLOWED = {  # where a module may not go, as the refusal says it
    ast.keyword: "a call", ast.Call: "a call", ast.AugAssign: "an operator", ast.BinOp: "an operator",
    ast.UnaryOp: "an operator", ast.Compare: "an operator", ast.withitem: "a with statement", ast.Match: "a match",
    ast.Raise: "a raise", ast.Await: "an await", ast.FormattedValue: "a format", ast.ClassDef: "a class's bases",
    ast.AnnAssign: "an annotation", ast.arg: "an annotation", ast.FunctionDef: "an annotation",
    ast.AsyncFunctionDef: "an annotation", ast.Assert: "an assertion's message", ast.Slice: "a slice",
}
TYPING_EVALUATORS = frozenset({"get_type_hints", "ForwardRef", "Protocol", "runtime_checkable", "evaluate_forward_ref",
                               "get_annotations"})
# A kernel's loops and conditions that the DSL unrolls or decides while tracing: every lane runs the same code.
UNROLLED_LOOPS = frozenset({"cutlass.range_constexpr", "triton.language.static_range"})
COMPILE_TIME_TESTS = frozenset({"cutlass.const_expr", "cutlass.constexpr"})
