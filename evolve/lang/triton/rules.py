"""The Triton candidate language: its contract, in one place.

Everything a candidate file is told and held to lives here: what it must define (MUST), the honest idioms its host
code may use (MAY), the rules the static check enforces (RULES, each with what it protects), and the tables the
checker reads (modules, decorators, host calls, kernel names). The static check (harness/static_check.py) reads these
tables; the prompt's contract (`prompt_contract`) and README's rule table (`readme_table`) are generated from them,
and a test proves README carries the generated table. `python -m evolve.lang.triton` prints that table.
The package's LANGUAGE (evolve/lang/triton/__init__.py) hands these to the rest of evolve.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Rule:
    says: str  # what a candidate may not do (markdown: `code` in backticks)
    protects: str  # what the rule is for, now that the runner is jailed and observed from outside


MUST = (
    "Define `custom_kernel(*inputs)` returning the output tensor(s), computed by `@triton.jit` kernels that it "
    "launches.",
    "Return new, contiguous memory (never an input) with the shape and dtype the problem states; accumulate "
    "reductions in float32 whatever the input dtype.",
)

MAY = (
    "Host code (outside `@triton.jit` functions) allocates, reads metadata, computes a grid and launches kernels, and "
    "may organise that as people do: helpers, classes, a `torch.autograd.Function` or `torch.nn.Module` wrapper, "
    "`logging`, f-strings and `print`, a module-level cache behind `global`, `functools.lru_cache`, dataclasses and "
    "enums, Triton's driver and device properties, `kernel.warmup(...)` and launching the compiled kernel, any "
    "stream, `@triton.autotune` and `@triton.heuristics`, and a self-test under `if __name__ == \"__main__\":` "
    "(never run on import).",
    "A module-level dict `KNOBS` (and optionally `KNOB_SPACE`) names launch parameters the tuner may vary.",
)

RULES = {
    "forbidden-call": Rule("call the library op the problem forbids ({forbidden})",
                           "the search's purpose: a library call is not a kernel (timed, it earns only the "
                           "library's speed)"),
    "import": Rule("import anything but `torch`, `triton`, `math`, `typing` and pure standard modules (`functools`, "
                   "`itertools`, `operator`, `dataclasses`, `enum`, `collections`, `abc`, `numbers`, `warnings`, "
                   "`logging`, `contextlib`), or the problem's reference",
                   "host computation outside torch's op log (numpy), which would also win the CPU interpreter's "
                   "ranking; a kernel file needs no processes, files or the machine"),
    "dynamic-code": Rule("run code built from strings or reach names computed at run time (`eval`, `exec`, `compile`, "
                         "`__import__`, `globals`, `vars`, `open`, `getattr` with a computed name, "
                         "`operator.attrgetter`)",
                         "this check's own reading: every name it judges is spelt out in the file"),
    "internals": Rule("touch dunder attributes (but `__name__`, `__qualname__`, `__doc__`, `__init__`), frames, "
                      "code objects or tracebacks",
                      "this check's own reading: internals lead to every module in the process"),
    "undefined-name": Rule("use a name the file never defines, imports or gets from builtins",
                           "names injected at run time (Triton's interpreter puts numpy into a kernel's module)"),
    "module-write": Rule("assign into an imported module (`torch.exp = ...`, `tl.load = ...`)",
                         "the runner's own first-line checks and the meaning of the kernel language"),
    "host-compute": Rule("compute with torch on the host (`torch.exp`, `F.*`, `torch.compile`, private `torch._*` "
                         "paths, `x.numpy()`, `x.tolist()`): host code allocates, reads metadata and launches kernels",
                         "the search's purpose and the CPU ranking; the runner's op log repeats it at run time"),
    "kernel-language": Rule("name anything but `triton.language` and `math` inside a `@triton.jit` function, or "
                            "decorate one with anything but Triton's decorators",
                            "Triton's code generator runs the Python a kernel names, at compile time"),
    "kernel-introspection": Rule("inside a `@triton.jit` function, inspect what it runs on (`isinstance`, `hasattr`, "
                                 "`getattr`, `type`, `callable`, `id`, `.handle`, `.signature`, calling a function "
                                 "passed as a constexpr) or format a value in an f-string",
                                 "the CPU check: the interpreter and the compiler hand a kernel different objects, "
                                 "so such a kernel could be checked on one branch and compiled from another"),
    "typing-eval": Rule("use typing's evaluators (`get_type_hints`, `ForwardRef`, `Protocol`)",
                        "the dynamic-code rule: they evaluate strings"),
    "rebind": Rule("rebind an imported name", "this check's own reading: every use of an import means the import"),
    "entry": Rule("lack a function `custom_kernel(*inputs)`", "the contract itself"),
}

# -- the tables the static check reads -----------------------------------------------------------------------------
ALLOWED_MODULES = ("torch", "triton", "math", "typing", "typing_extensions", "__future__", "functools", "itertools",
                   "operator", "dataclasses", "enum", "collections", "abc", "numbers", "warnings", "logging",
                   "contextlib")
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
JIT_TENSOR_ESCAPES = frozenset({
    "numpy", "tolist", "item", "data_ptr", "cpu", "cuda", "storage", "untyped_storage", "detach", "clone", "copy_",
    "fill_", "zero_", "data", "grad", "backward", "tobytes",
})
JIT_INTROSPECTION_BUILTINS = frozenset({"isinstance", "issubclass", "callable", "dir", "hasattr", "getattr", "type",
                                        "id"})
JIT_INTROSPECTION_ATTRIBUTES = frozenset({"handle", "signature", "builder", "semantic", "arg_names", "params",
                                          "constexprs", "kernel", "data", "interpreter_builder"})
JIT_DECORATORS = frozenset({"triton.jit", "triton.language.jit", "triton.autotune", "triton.heuristics"})
JIT_MODULES = ("triton.language", "math")  # what a @triton.jit body may name, with these of triton's own:
JIT_HELPERS = frozenset({"triton.cdiv", "triton.next_power_of_2", "triton.jit", "triton.constexpr"})


def _forbidden(forbid_calls) -> str:
    calls = [f"`{c}`" for c in forbid_calls]
    return "here: " + ", ".join(calls) if calls else "each problem names its own, e.g. `torch.softmax` for a softmax"


def prompt_contract(forbid_calls=()) -> str:
    """The contract as the model reads it in every prompt: what to define, what host code may do, and every rule
    the load rung enforces, with the problem's forbidden calls named."""
    lines = list(MUST) + list(MAY)
    lines.append("The load rung refuses a file that does any of the following, naming the line:")
    lines += [f"- {rule.says.format(forbidden=_forbidden(forbid_calls))}" for key, rule in RULES.items()
              if forbid_calls or key != "forbidden-call"]  # a problem that names no library op has no such rule
    return "\n".join(lines)


def readme_table() -> str:
    """README's rule table (the section 'The candidate contract')."""
    rows = ["| rule | a candidate may not | what it protects |", "| --- | --- | --- |"]
    rows += [f"| {key} | {rule.says.format(forbidden=_forbidden(()))} | {rule.protects} |"
             for key, rule in RULES.items()]
    return "\n".join(rows)
