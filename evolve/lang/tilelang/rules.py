"""The TileLang candidate language (`import tilelang.language as T`): its contract, in one place, as
lang/triton/rules.py holds Triton's. A kernel is a `@T.prim_func` function, usually made per shape by a plain Python
function and compiled with `tilelang.compile`; its body is traced by TileLang at compile time, so what it may name is
`tilelang.language` (and math), as a Triton kernel's is triton.language. `python -m evolve.lang.tilelang` prints the
rule table.
"""
from __future__ import annotations

from .. import host
from ..host import STANDARD_MODULES, Rule

MUST = (
    "Define `custom_kernel(*inputs)` returning the output tensor(s), computed by TileLang kernels: `@T.prim_func` "
    "functions (`import tilelang.language as T`), compiled with `tilelang.compile(func, out_idx=...)` (or made by "
    "`@tilelang.jit`), and called with torch tensors.",
    "Return new, contiguous memory (never an input) with the shape and dtype the problem states; accumulate "
    "reductions in float32 whatever the input dtype.",
)

MAY = (
    "Host code (outside `@T.prim_func` and `@T.macro` functions) allocates, reads metadata, builds a prim_func for a "
    "shape and dtype, compiles it with `tilelang.compile` and calls the compiled kernel, and may keep compiled "
    "kernels in a module-level dict keyed by shape and dtype (compiling once per specialization), with helpers, "
    "classes, `functools.lru_cache`, dataclasses and enums, and a self-test under `if __name__ == \"__main__\":` "
    "(never run on import).",
    "A module-level dict `KNOBS` (and optionally `KNOB_SPACE`) names launch parameters the tuner may vary.",
)

RULES = {
    "forbidden-call": host.FORBIDDEN_CALL,
    "import": Rule("import anything but `torch`, `tilelang` (the DSL), `math`, `typing` and pure standard modules "
                   "(`functools`, `itertools`, `operator`, `dataclasses`, `enum`, `collections`, `abc`, `numbers`, "
                   "`warnings`, `logging`, `contextlib`), or the problem's reference",
                   "host computation outside torch's op log (numpy, TVM's own runtime); a kernel file needs no "
                   "processes, files or the machine"),
    "dynamic-code": host.DYNAMIC_CODE,
    "internals": host.INTERNALS,
    "undefined-name": Rule("use a name the file never defines, imports or gets from builtins",
                           "names injected at run time"),
    "module-write": Rule("assign into an imported module (`torch.exp = ...`, `T.exp = ...`)",
                         "the runner's own first-line checks and the meaning of the kernel language"),
    "host-compute": Rule("compute with torch on the host (`torch.exp`, `F.*`, `torch.compile`, private `torch._*` "
                         "paths, `x.numpy()`, `x.tolist()`): host code allocates, reads metadata and launches kernels",
                         "the search's purpose; the runner's op log repeats it at run time"),
    "kernel-language": Rule("name anything but `tilelang.language` (`T.Kernel`, `T.Parallel`, `T.copy`, `T.gemm`, "
                            "`T.reduce_max`, ...), `math` and `operator` inside a `@T.prim_func` or `@T.macro` "
                            "function, or decorate one with anything but those two",
                            "TileLang traces the Python a kernel names, at compile time, on the host"),
    "kernel-introspection": Rule("inside a `@T.prim_func` or `@T.macro` function, inspect what it runs on "
                                 "(`isinstance`, `hasattr`, `getattr`, `type`, `callable`, `id`, calling a function "
                                 "passed as an argument) or format a value in an f-string",
                                 "this check's reading of a kernel: what it names is what it runs"),
    "typing-eval": host.TYPING_EVAL,
    "rebind": host.REBIND,
    "entry": host.ENTRY,
}

# -- the tables the static check reads -----------------------------------------------------------------------------
ALLOWED_MODULES = ("torch", "tilelang", "math", "typing", *STANDARD_MODULES)
KERNEL_MARKERS = frozenset({"tilelang.language.prim_func", "tilelang.language.macro"})  # what makes a kernel body
KERNEL_DECORATORS = KERNEL_MARKERS
KERNEL_MODULES = ("tilelang.language", "math", "operator")  # what a kernel body may name, and their public members
KERNEL_HELPERS = frozenset()


def prompt_contract(forbid_calls=()) -> str:
    """The contract as the model reads it in every prompt (lang/host.py), with the problem's forbidden calls named."""
    return host.prompt_contract(MUST, MAY, RULES, forbid_calls)


def rule_table() -> str:
    return host.rule_table(RULES)
