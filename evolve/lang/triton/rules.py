"""The Triton candidate language: its contract, in one place.

Everything a candidate file is told and held to lives here: what it must define (MUST), the honest idioms its host
code may use (MAY), the rules the static check enforces (RULES, each with what it protects), and the tables the
checker reads (modules, decorators, host calls, kernel names). The static check (harness/runner/static/check.py) reads
these tables; the prompt's contract (`prompt_contract`) and the rule table docs/languages.md carries (`rule_table`) are
generated from them, and a test proves the page carries the generated table. `python -m evolve.lang.triton` prints
that table.
The package's LANGUAGE (evolve/lang/triton/__init__.py) hands these to the rest of evolve.
"""
from __future__ import annotations

from .. import host
from ..host import STANDARD_MODULES, Rule

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
    "forbidden-call": host.FORBIDDEN_CALL,
    "import": Rule("import anything but `torch`, `triton`, `math`, `typing` and pure standard modules (`functools`, "
                   "`itertools`, `operator`, `dataclasses`, `enum`, `collections`, `abc`, `numbers`, `warnings`, "
                   "`logging`, `contextlib`), or the problem's reference",
                   "host computation outside torch's op log (numpy), which would also win the CPU interpreter's "
                   "ranking; a kernel file needs no processes, files or the machine"),
    "dynamic-code": host.DYNAMIC_CODE,
    "internals": host.INTERNALS,
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
    "typing-eval": host.TYPING_EVAL,
    "rebind": host.REBIND,
    "entry": host.ENTRY,
}

# -- the tables the static check reads -----------------------------------------------------------------------------
ALLOWED_MODULES = ("torch", "triton", "math", "typing", *STANDARD_MODULES)
JIT_DECORATORS = frozenset({"triton.jit", "triton.language.jit", "triton.autotune", "triton.heuristics"})
JIT_MODULES = ("triton.language", "math")  # what a @triton.jit body may name, with these of triton's own:
JIT_HELPERS = frozenset({"triton.cdiv", "triton.next_power_of_2", "triton.jit", "triton.constexpr"})


def prompt_contract(forbid_calls=()) -> str:
    """The contract as the model reads it in every prompt (lang/host.py), with the problem's forbidden calls named."""
    return host.prompt_contract(MUST, MAY, RULES, forbid_calls)


def rule_table() -> str:
    """The rule table docs/languages.md carries (its section 'Triton')."""
    return host.rule_table(RULES)
