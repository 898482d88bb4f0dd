"""The CuTeDSL candidate language (NVIDIA's nvidia-cutlass-dsl: `import cutlass.cute as cute`): its contract, in one
place, as lang/triton/rules.py holds Triton's. A kernel is a `@cute.kernel` function launched from a `@cute.jit`
one; both are traced by the DSL at compile time, so what they may name is the DSL's own modules, as a Triton
kernel's is triton.language. `python -m evolve.lang.cutedsl` prints the rule table.
"""
from __future__ import annotations

from .. import host
from ..host import STANDARD_MODULES, Rule

MUST = (
    "Define `custom_kernel(*inputs)` returning the output tensor(s), computed by CuTeDSL kernels: `@cute.kernel` "
    "functions launched from a `@cute.jit` function, compiled with `cute.compile` on tensors wrapped by "
    "`cutlass.cute.runtime.from_dlpack`, and called.",
    "Return new, contiguous memory (never an input) with the shape and dtype the problem states; accumulate "
    "reductions in float32 whatever the input dtype.",
)

MAY = (
    "Host code (outside `@cute.jit` and `@cute.kernel` functions) allocates, reads metadata, wraps tensors with "
    "`from_dlpack`, compiles with `cute.compile` and calls the compiled function, and may keep compiled functions in "
    "a module-level dict keyed by shape and dtype (compiling once per specialization), with helpers, classes, "
    "`functools.lru_cache`, dataclasses and enums, and a self-test under `if __name__ == \"__main__\":` (never run on "
    "import).",
    "A module-level dict `KNOBS` (and optionally `KNOB_SPACE`) names launch parameters the tuner may vary.",
)

RULES = {
    "forbidden-call": host.FORBIDDEN_CALL,
    "import": Rule("import anything but `torch`, `cutlass` (the DSL), `math`, `typing` and pure standard modules "
                   "(`functools`, `itertools`, `operator`, `dataclasses`, `enum`, `collections`, `abc`, `numbers`, "
                   "`warnings`, `logging`, `contextlib`), or the problem's reference",
                   "host computation outside torch's op log (numpy); a kernel file needs no processes, files or the "
                   "machine"),
    "dynamic-code": host.DYNAMIC_CODE,
    "internals": host.INTERNALS,
    "undefined-name": Rule("use a name the file never defines, imports or gets from builtins",
                           "names injected at run time"),
    "module-write": Rule("assign into an imported module (`torch.exp = ...`, `cute.exp = ...`)",
                         "the runner's own first-line checks and the meaning of the kernel language"),
    "host-compute": Rule("compute with torch on the host (`torch.exp`, `F.*`, `torch.compile`, private `torch._*` "
                         "paths, `x.numpy()`, `x.tolist()`): host code allocates, reads metadata and launches kernels",
                         "the search's purpose; the runner's op log repeats it at run time"),
    "kernel-language": Rule("name anything but the DSL's `cutlass.cute`, `cutlass.utils`, `cutlass.pipeline`, "
                            "`cutlass.memory` and its "
                            "numeric types and control flow (`cutlass.Float32`, `cutlass.range`, `cutlass.const_expr`, "
                            "...), `math` and `operator` inside a `@cute.jit` or `@cute.kernel` function, or decorate "
                            "one with anything but those two",
                            "the DSL traces the Python a kernel names, at compile time, on the host"),
    "kernel-introspection": Rule("inside a `@cute.jit` or `@cute.kernel` function, inspect what it runs on "
                                 "(`isinstance`, `hasattr`, `getattr`, `type`, `callable`, `id`, calling a function "
                                 "passed as an argument) or format a value in an f-string",
                                 "this check's reading of a kernel: what it names is what it runs"),
    "warp-index-in-branch": Rule("call `cute.arch.warp_idx()` (or `make_warp_uniform`) inside a runtime `if`, "
                                 "`while` or `for` of a kernel: bind `warp = cute.arch.warp_idx()` before any branch",
                                 "the kernel itself: the call shuffles over all 32 lanes (shfl.sync, full mask), "
                                 "so under `if lane_idx() == 0:` lane 0 waits for the other 31 forever and the "
                                 "kernel hangs until the evaluation's time limit"),
    "typing-eval": host.TYPING_EVAL,
    "rebind": host.REBIND,
    "entry": host.ENTRY,
}

# -- the tables the static check reads -----------------------------------------------------------------------------
ALLOWED_MODULES = ("torch", "cutlass", "math", "typing", *STANDARD_MODULES)
KERNEL_MARKERS = frozenset({"cutlass.cute.kernel", "cutlass.cute.jit"})  # what makes a function a kernel body
KERNEL_DECORATORS = KERNEL_MARKERS
# made warp-uniform with a full-warp shuffle (shfl.sync.idx, mask 0xffffffff, as the sm_90a PTX shows)
WARP_UNIFORM_CALLS = frozenset({"cutlass.cute.arch.warp_idx", "cutlass.cute.arch.make_warp_uniform"})
# What a kernel body may name: these modules and their public members (the DSL's types count as modules here: a
# value of theirs has their methods), and the DSL's top-level helpers below.
_TYPES = ("Float16", "BFloat16", "Float32", "Float64", "TFloat32", "Float8E4M3FN", "Float8E5M2", "Int8", "Int16",
          "Int32", "Int64", "Uint8", "Uint16", "Uint32", "Uint64", "Boolean", "Numeric", "Integer", "Float",
          "Constexpr", "Tensor", "Layout", "Shape", "Stride", "Coord", "IntTuple", "Tile", "Tiler", "Pointer",
          "AddressSpace", "LoopUnroll")
KERNEL_MODULES = ("cutlass.cute", "cutlass.utils", "cutlass.pipeline", "cutlass.memory", "math", "operator",
                  *(f"cutlass.{name}" for name in _TYPES))
KERNEL_HELPERS = frozenset(f"cutlass.{name}" for name in (
    "const_expr", "dynamic_expr", "range", "range_constexpr", "range_dynamic", "min", "max", "and_", "or_", "not_",
    "all_", "any_", "select_", "as_numeric", "full", "full_like", "if_generate", "for_generate", "while_generate",
    "yield_out", "align",
))


def prompt_contract(forbid_calls=()) -> str:
    """The contract as the model reads it in every prompt (lang/host.py), with the problem's forbidden calls named."""
    return host.prompt_contract(MUST, MAY, RULES, forbid_calls)


def rule_table() -> str:
    return host.rule_table(RULES)
