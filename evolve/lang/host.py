"""What every candidate language hosted in Python shares: the rule record, host torch's tables (what computes, what
only allocates, what hands data to Python), what a kernel body may not inspect, and the contract text and rule
table made from a language's MUST, MAY and RULES."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Rule:
    says: str  # what a candidate may not do (markdown: `code` in backticks)
    protects: str  # what the rule is for, now that the runner is jailed and observed from outside


# Rules every language hosted in Python states in the same words (a language's RULES lists them among its own).
FORBIDDEN_CALL = Rule("call the library op the problem forbids ({forbidden})",
                      "the search's purpose: a library call is not a kernel (timed, it earns only the library's speed)")
DYNAMIC_CODE = Rule("run code built from strings or reach names computed at run time (`eval`, `exec`, `compile`, "
                    "`__import__`, `globals`, `vars`, `open`, `getattr` with a computed name, `operator.attrgetter`)",
                    "this check's own reading: every name it judges is spelt out in the file")
INTERNALS = Rule("touch dunder attributes (but `__name__`, `__qualname__`, `__doc__`, `__init__`), frames, code "
                 "objects or tracebacks", "this check's own reading: internals lead to every module in the process")
TYPING_EVAL = Rule("use typing's evaluators (`get_type_hints`, `ForwardRef`, `Protocol`)",
                   "the dynamic-code rule: they evaluate strings")
REBIND = Rule("rebind an imported name", "this check's own reading: every use of an import means the import")
ENTRY = Rule("lack a function `custom_kernel(*inputs)`", "the contract itself")


STANDARD_MODULES = ("typing_extensions", "__future__", "functools", "itertools", "operator", "dataclasses", "enum",
                    "collections", "abc", "numbers", "warnings", "logging", "contextlib")  # pure: no host compute
# Host torch: anything under these computes (or hides computation from the op log).
HOST_TORCH_COMPUTE = ("torch.nn.functional.", "torch.special.", "torch.linalg.", "torch.fft.", "torch.ops.",
                      "torch.sparse.", "torch.nested.", "torch.func.", "torch.jit.", "torch.utils.", "torch.compile",
                      "torch.vmap", "torch.nn.modules.", "torch.autograd.grad")
# torch functions that are dispatcher ops but only allocate or describe memory.
HOST_TORCH_ALLOCATION = frozenset({
    "empty", "empty_like", "empty_strided", "zeros", "zeros_like", "ones", "ones_like", "full", "full_like",
    "arange", "tensor", "as_tensor", "as_strided", "is_tensor", "is_floating_point", "numel", "result_type",
    "can_cast", "promote_types", "is_complex", "is_nonzero", "get_default_dtype",
})
HOST_DATA_ESCAPES = frozenset({"numpy", "tolist"})  # hand a tensor's data to plain Python or numpy
KERNEL_TENSOR_ESCAPES = frozenset({
    "numpy", "tolist", "item", "data_ptr", "cpu", "cuda", "storage", "untyped_storage", "detach", "clone", "copy_",
    "fill_", "zero_", "data", "grad", "backward", "tobytes",
})  # tensor methods a kernel body may not call
KERNEL_INTROSPECTION_BUILTINS = frozenset({"isinstance", "issubclass", "callable", "dir", "hasattr", "getattr",
                                           "type", "id"})
KERNEL_INTROSPECTION_ATTRIBUTES = frozenset({"handle", "signature", "builder", "semantic", "arg_names", "params",
                                             "constexprs", "kernel", "data", "interpreter_builder"})


def _forbidden(forbid_calls) -> str:
    calls = [f"`{c}`" for c in forbid_calls]
    return "here: " + ", ".join(calls) if calls else "each problem names its own, e.g. `torch.softmax` for a softmax"


def prompt_contract(must, may, rules: dict, forbid_calls=()) -> str:
    """The contract as the model reads it in every prompt: what to define, what host code may do, and every rule
    the load rung enforces, with the problem's forbidden calls named."""
    lines = list(must) + list(may)
    lines.append("The load rung refuses a file that does any of the following, naming the line:")
    lines += [f"- {rule.says.format(forbidden=_forbidden(forbid_calls))}" for key, rule in rules.items()
              if forbid_calls or key != "forbidden-call"]  # a problem that names no library op has no such rule
    return "\n".join(lines)


def rule_table(rules: dict) -> str:
    """A language's rule table, as docs/languages.md carries it."""
    rows = ["| rule | a candidate may not | what it protects |", "| --- | --- | --- |"]
    rows += [f"| {key} | {rule.says.format(forbidden=_forbidden(()))} | {rule.protects} |"
             for key, rule in rules.items()]
    return "\n".join(rows)
