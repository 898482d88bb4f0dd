"""The static half of the load rung: what a candidate's source may import, call and touch.

A candidate's host code (outside @triton.jit functions) may allocate tensors, read their metadata, compute a grid and
launch Triton kernels; nothing else. Every name is resolved through the file's imports and aliases, so
`import torch.nn.functional as F; F.softmax(x)` is seen as `torch.nn.functional.softmax`. The rules are:

- imports only from ALLOWED_MODULES, and never the problem's forbidden modules (its reference);
- no dynamic escape hatches: eval/exec/compile/__import__/getattr/setattr/globals/open..., no dunder attributes;
- no assignment to anything reached through a module (no monkeypatching of torch, triton, time or evolve);
- host code uses only TORCH_HOST_ALLOWED from torch and TENSOR_HOST_ALLOWED of the tensor methods;
- the problem's forbidden calls, named exactly (`torch.softmax`, `Tensor.softmax`), anywhere in the file.

The dynamic checks in the sandbox (launch counting, the dispatch-mode op log, unchanged-function checks) back this up
for whatever a static reading cannot see.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

ALLOWED_MODULES = ("torch", "triton", "math", "typing", "__future__")

BLOCKED_BUILTINS = frozenset({
    "eval", "exec", "compile", "__import__", "getattr", "setattr", "delattr", "hasattr", "globals", "locals", "vars",
    "open",
    "input", "breakpoint", "memoryview", "type", "object", "super", "__builtins__", "__loader__", "__spec__", "help",
    "exit", "quit", "classmethod", "staticmethod", "property",
    # text of a tensor is made with the op log suspended (torch's printing code does that), so no tensor to text
    "str", "repr", "ascii", "format", "print",
    # object addresses: under the interpreter a kernel's pointers are host addresses
    "id", "hash",
})

TORCH_HOST_ALLOWED = frozenset({
    "torch.empty", "torch.empty_like", "torch.empty_strided", "torch.zeros", "torch.zeros_like", "torch.full",
    "torch.full_like", "torch.arange", "torch.Tensor", "torch.Size", "torch.dtype", "torch.device",
    "torch.float32", "torch.float", "torch.bfloat16", "torch.float16", "torch.half", "torch.float64", "torch.double",
    "torch.int8", "torch.int16", "torch.int32", "torch.int64", "torch.int", "torch.long", "torch.uint8", "torch.bool",
    "torch.is_tensor", "torch.finfo", "torch.iinfo",
    "torch.cuda.get_device_properties", "torch.cuda.current_device", "torch.cuda.is_available",
    "torch.cuda.get_device_capability",
})

TRITON_HOST_ALLOWED = frozenset({
    "triton.jit", "triton.cdiv", "triton.next_power_of_2", "triton.Config", "triton.autotune", "triton.heuristics",
    "triton.constexpr", "triton.language", "triton.language.constexpr",
} | {f"triton.language.{t}" for t in (
    "float8e4nv", "float8e5", "float16", "bfloat16", "float32", "float64", "int1", "int8", "int16", "int32", "int64",
    "uint8", "uint16", "uint32", "uint64")})

# What a name under triton may resolve to: the kernel language's modules, classes, functions, dtypes and constants.
# Anything else along the way (sys.modules re-exported as a dict, the active driver, importlib's loaders and finders,
# typing objects) is a runtime object, not part of the language.
TRITON_KINDS = ("builtins.function", "builtins.builtin_function_or_method", "builtins.module", "builtins.int",
                "builtins.float", "builtins.bool", "builtins.str", "triton.runtime.jit.JITFunction",
                "triton.runtime.jit.ConstexprFunction", "triton.runtime.interpreter.InterpretedFunction",
                "triton.language.core.dtype",
                "triton.language.core.pointer_type", "triton.language.core.constexpr")

# Attributes that reach frames, code and tracebacks: from there a candidate could walk into the harness's own frames.
INTROSPECTION = frozenset({
    "gi_frame", "gi_code", "gi_yieldfrom", "gi_running", "cr_frame", "cr_code", "cr_await", "ag_frame", "ag_code",
    "f_back", "f_locals", "f_globals", "f_builtins", "f_code", "f_trace", "f_lasti", "tb_frame", "tb_next",
})
SAFE_MODULES = ("torch", "triton", "math", "typing")

# From typing, only names for annotations: get_type_hints, ForwardRef, NamedTuple, TypedDict and the like evaluate
# strings (an eval with builtins), and Protocol makes isinstance() true of anything.
TYPING_ALLOWED = frozenset({
    "TYPE_CHECKING", "Any", "Optional", "Union", "Tuple", "List", "Dict", "Sequence", "Iterable", "Callable",
    "Mapping",
})

PROCESS_ATTRIBUTES = frozenset({
    "modules", "system", "popen", "spawn", "fork", "execv", "execve", "kill", "remove", "unlink", "rmtree",
    "exec_module", "load_module", "module_from_spec", "set_active", "reset_active",
})
# torch.Tensor methods that leave the kernel language (run as Python, e.g. under the interpreter, they hand the data
# to numpy or the host); none of them is a triton.language tensor method.
JIT_TENSOR_ESCAPES = frozenset({
    "numpy", "tolist", "item", "data_ptr", "cpu", "cuda", "storage", "untyped_storage", "detach", "clone", "copy_",
    "fill_", "zero_", "data", "grad", "backward", "tobytes",
})
# Inside a kernel: Python that inspects what it runs on. The interpreter and the compiler hand a kernel different
# objects (host arrays against IR values), so such a test lets a kernel take one branch when interpreted (checked)
# and another when compiled (reported).
JIT_INTROSPECTION_BUILTINS = frozenset({"isinstance", "issubclass", "callable", "dir"})
JIT_INTROSPECTION_ATTRIBUTES = frozenset({"handle", "signature", "builder", "semantic", "arg_names", "params",
                                          "constexprs", "kernel", "data", "interpreter_builder"})
DUNDER = re.compile(r"__\w+__")
JIT_DECORATORS = frozenset({"triton.jit", "triton.language.jit", "triton.autotune", "triton.heuristics"})

LAUNCH_KEYWORDS = {
    "stream": "kernels run on the current stream, where the harness times them",
    "use_cuda_graph": "the autotuner must time on the current stream (the harness does the timing)",
    "do_bench": "the autotuner must time on the current stream (the harness does the timing)",
}

# Attributes of Triton's kernel objects that compile or launch past kernel[grid](...) (a compiled kernel takes a
# stream argument of its own), and autotuner options that time on a stream of their own.
KERNEL_INTERNALS = frozenset({
    "warmup", "run", "cache", "device_caches", "kernel_cache", "launch_metadata", "packed_metadata", "function",
    "asm", "src", "fn", "compile", "_init_handles", "_run", "launcher", "do_bench", "use_cuda_graph",
})

TENSOR_HOST_ALLOWED = frozenset({
    "shape", "stride", "numel", "nelement", "dim", "ndim", "ndimension", "size", "dtype", "device", "is_cuda",
    "is_contiguous", "contiguous", "view", "reshape", "element_size", "data_ptr", "storage_offset", "unsqueeze",
    "squeeze", "flatten", "is_floating_point", "get_device", "layout", "new_empty", "new_zeros", "T", "mT",
    "transpose", "permute", "expand", "itemsize", "nbytes",
})


class Rejection(Exception):
    """The candidate's source breaks a rule; str() is the one-line reason."""


def _tensor_attribute_names() -> frozenset:
    import torch

    return frozenset(name for name in dir(torch.Tensor) if not name.startswith("__"))


class _Checker(ast.NodeVisitor):
    def __init__(self, forbid_calls, forbid_modules, tensor_names):
        self.forbid_calls = set(forbid_calls)
        self.forbid_methods = {c.split(".", 1)[1] for c in forbid_calls if c.startswith("Tensor.")}
        self.forbid_modules = set(forbid_modules)
        self.tensor_names = tensor_names
        self.aliases: dict[str, str] = {}
        self.in_jit = 0
        self.jit_params: set[str] = set()  # the parameters of the @triton.jit function being read
        self.jit_locals: set[str] = set()
        self.method_self: str | None = None  # the first parameter's name inside a method defined in a class body
        self.in_class = False
        self.problems: list[tuple[int, str]] = []

    def fail(self, node, message):
        self.problems.append((getattr(node, "lineno", 0), message))

    # -- imports --------------------------------------------------------------------------------------------------
    def _check_module(self, node, module: str):
        top = module.split(".")[0]
        if any(part.startswith("__") for part in module.split(".")) and module != "__future__":
            self.fail(node, f"imports {module}: candidates may not import dunder modules (they run code at import)")
            return
        if module in self.forbid_modules or top in self.forbid_modules:
            self.fail(node, f"imports {module}: this problem forbids it (the reference is not for candidates)")
        elif top not in ALLOWED_MODULES:
            self.fail(node, f"imports {module}: candidates may import only {', '.join(ALLOWED_MODULES[:-1])}")

    def visit_Import(self, node):
        for alias in node.names:
            self._check_module(node, alias.name)
            top = alias.name.split(".")[0]
            self._bind(node, alias.asname or top, alias.name if alias.asname else top)

    def visit_ImportFrom(self, node):
        if node.level:
            self.fail(node, "uses a relative import: candidates are single files")
            return
        module = node.module or ""
        self._check_module(node, module)
        for alias in node.names:
            if alias.name == "*":
                self.fail(node, f"uses 'from {module} import *': import names explicitly")
                continue
            if alias.name.startswith("__") and module != "__future__":
                self.fail(node, f"imports {alias.name} from {module}: candidates may not import dunder names")
            if module == "typing" and alias.name not in TYPING_ALLOWED:
                self.fail(node, f"imports typing.{alias.name}: from typing, candidates may use only "
                                f"{', '.join(sorted(TYPING_ALLOWED))}")
            self._bind(node, alias.asname or alias.name, f"{module}.{alias.name}")

    # -- names ----------------------------------------------------------------------------------------------------
    def _dotted(self, node) -> str | None:
        """Resolve `a.b.c` through the import aliases to a full dotted path, or None if the root is not an import."""
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name) or node.id not in self.aliases:
            return None
        return ".".join([self.aliases[node.id]] + parts[::-1])

    def _check_path(self, node, path: str):
        """Judge a dotted name as spelt and as what it really names (the path from the last module it passes
        through): tl.core.typing.ForwardRef is typing.ForwardRef, and every rule holds for both."""
        canonical = _canonical(path)
        names = {path, canonical}
        name = path if canonical == path else f"{path} (which is {canonical})"
        if names & self.forbid_calls:
            self.fail(node, f"uses {name}, which this problem forbids")
            return
        if any(p.startswith("typing.") and p.split(".")[1] not in TYPING_ALLOWED for p in names):
            self.fail(node, f"uses {name}: from typing, candidates may use only {', '.join(sorted(TYPING_ALLOWED))}")
            return
        odd = _triton_runtime_object(path) if path.startswith("triton.") else None
        if odd:
            self.fail(node, f"uses {name}, which reaches a {odd}: only the kernel language's own names may be used")
            return
        escape = _module_escape(path)
        if escape:
            self.fail(node, f"uses {name}, which reaches the module {escape}: candidates may use only "
                            f"{', '.join(SAFE_MODULES)}")
        elif self.in_jit:
            if any(p == "torch" or p.startswith("torch.") for p in names):
                self.fail(node, f"uses {name} inside a @triton.jit function: kernels use triton.language")
            elif not all(_jit_path_allowed(p) for p in names):
                self.fail(node, f"uses {name} inside a @triton.jit function: kernels may use only the public names "
                                f"of triton.language (and math)")
        elif any(p.startswith("torch") and p not in TORCH_HOST_ALLOWED and p != "torch" for p in names):
            self.fail(node, f"uses {name} in host code: host code may only allocate tensors, read their metadata "
                            f"and launch Triton kernels (the computation belongs in @triton.jit code)")
        elif any(p.startswith("triton.") and p not in TRITON_HOST_ALLOWED for p in names):
            allowed = sorted(n for n in TRITON_HOST_ALLOWED if n.count(".") < 2) + ["triton.language dtypes"]
            self.fail(node, f"uses {name} in host code: from triton, host code may use only {', '.join(allowed)}")
        elif any(part.startswith("_") for p in names for part in p.split(".")[1:]):
            self.fail(node, f"uses {name} in host code: host code may use only public names")

    def visit_Attribute(self, node):
        if node.attr in INTROSPECTION or node.attr.startswith("co_"):
            self.fail(node, f"touches {node.attr}: candidates may not inspect frames, code or tracebacks")
            return
        if node.attr.startswith("__") and node.attr.endswith("__"):
            self.fail(node, f"touches the dunder attribute {node.attr}: candidates may not reach into internals")
            return
        path = self._dotted(node)
        if path is not None:
            self._check_path(node, path)
            return  # the chain is judged as a whole
        if node.attr.startswith("_"):
            where = "kernel" if self.in_jit else "host"
            self.fail(node, f"touches the private attribute {node.attr}: {where} code may use only public names")
            return
        if node.attr in ("format", "format_map"):
            self.fail(node, f"uses .{node.attr}: format strings read attributes by name; use an f-string")
        elif node.attr in BLOCKED_BUILTINS or node.attr in PROCESS_ATTRIBUTES:
            self.fail(node, f"uses .{node.attr}: candidates may not use dynamic code, reflection, files or processes")
        elif node.attr in KERNEL_INTERNALS:
            self.fail(node, f"uses .{node.attr}: launch kernels only as kernel[grid](...), so the harness sees "
                            f"every launch")
        elif self.in_jit and node.attr in JIT_INTROSPECTION_ATTRIBUTES:
            self.fail(node, f"uses .{node.attr} inside a @triton.jit function: kernels may not inspect what they run "
                            f"on (the interpreter and the compiler hand them different objects)")
        elif self.in_jit and node.attr in JIT_TENSOR_ESCAPES:
            self.fail(node, f"uses .{node.attr} inside a @triton.jit function: kernels use triton.language")
        elif node.attr in self.forbid_methods:
            self.fail(node, f"uses Tensor.{node.attr}, which this problem forbids")
        elif (not self.in_jit and node.attr in self.tensor_names and node.attr not in TENSOR_HOST_ALLOWED):
            self.fail(node, f"uses Tensor.{node.attr} in host code: host code may only allocate tensors, read "
                            f"their metadata and launch Triton kernels (the computation belongs in @triton.jit code)")
        self.generic_visit(node)

    def _rebinds(self, node, name: str, target: str | None = None) -> bool:
        """Fail a binding of an imported name (to anything but the same import, when target is given)."""
        if name in self.aliases and self.aliases[name] != target:
            self.fail(node, f"rebinds the imported name {name}: every use of an import must mean the import")
            return True
        return False

    def _bind(self, node, name: str, target: str) -> None:
        self._rebinds(node, name, target)
        self.aliases[name] = target

    def visit_Name(self, node):
        if not isinstance(node.ctx, ast.Load) and self._rebinds(node, node.id):
            return
        if not isinstance(node.ctx, ast.Load) and self.in_class and DUNDER.fullmatch(node.id):
            self.fail(node, f"binds the special name {node.id} in a class body: that makes a special method, which "
                            f"Python and torch call implicitly, where the harness does not watch")
            return
        if not isinstance(node.ctx, ast.Load) and node.id == self.method_self:
            self.method_self = None  # `self` rebound: it may now be anything, a tensor included
        if node.id in BLOCKED_BUILTINS and node.id not in self.aliases:
            self.fail(node, f"uses the builtin {node.id}: candidates may not use dynamic code, reflection or files")
        elif self.in_jit and node.id in JIT_INTROSPECTION_BUILTINS and node.id not in self.aliases \
                and node.id not in self.jit_locals:
            self.fail(node, f"uses the builtin {node.id} inside a @triton.jit function: kernels may not inspect what "
                            f"they run on (the interpreter and the compiler hand them different objects)")
        elif node.id in self.aliases and isinstance(node.ctx, ast.Load):
            path = self.aliases[node.id]
            if _is_module(path):
                self.fail(node, f"uses the module {path} as a value: use it only as the root of a name "
                                f"(`{node.id}.x`), so every use can be checked")
            else:
                self._check_path(node, path)

    # -- writes through modules -----------------------------------------------------------------------------------
    def _check_target(self, target):
        if isinstance(target, (ast.Attribute, ast.Subscript)):
            root = target
            while isinstance(root, (ast.Attribute, ast.Subscript)):
                root = root.value
            if isinstance(root, ast.Name) and root.id in self.aliases:
                self.fail(target, f"assigns into {self.aliases[root.id]}: candidates may not modify modules")
            elif (isinstance(target, ast.Attribute) and not self.in_jit
                  and not (isinstance(target.value, ast.Name) and target.value.id == self.method_self)):
                self.fail(target, "sets an attribute on something other than a method's own instance (self.x = ...): "
                                  "an object hung on a tensor runs when the harness drops it")
        elif isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                self._check_target(element)
        elif isinstance(target, ast.Starred):
            self._check_target(target.value)

    def visit_Assign(self, node):
        for target in node.targets:
            self._check_target(target)
        self.generic_visit(node)

    def visit_AugAssign(self, node):
        self._check_target(node.target)
        self.generic_visit(node)

    def visit_Delete(self, node):
        for target in node.targets:
            self._check_target(target)
        self.generic_visit(node)

    def visit_keyword(self, node):
        if node.arg in LAUNCH_KEYWORDS:
            self.fail(node, f"passes {node.arg}=: {LAUNCH_KEYWORDS[node.arg]}")
        elif node.arg is None and isinstance(node.value, ast.Dict):
            for key in node.value.keys:
                if isinstance(key, ast.Constant) and key.value in LAUNCH_KEYWORDS:
                    self.fail(node, f"passes {key.value}= through **: {LAUNCH_KEYWORDS[key.value]}")
        self.generic_visit(node)

    def _no_string_annotation(self, annotation) -> None:
        for sub in ast.walk(annotation):
            if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
                self.fail(sub, "uses a string annotation: typing can evaluate it as code; annotate with names")
                return

    def visit_AnnAssign(self, node):
        self._no_string_annotation(node.annotation)
        self._check_target(node.target)
        self.generic_visit(node)

    # Every other statement that stores into a target: loops, with-items, comprehensions.
    def visit_For(self, node):
        self._check_target(node.target)
        self.generic_visit(node)

    visit_AsyncFor = visit_For

    def visit_withitem(self, node):
        if node.optional_vars is not None:
            self._check_target(node.optional_vars)
        self.generic_visit(node)

    def visit_comprehension(self, node):
        self._check_target(node.target)
        self.generic_visit(node)

    def visit_arg(self, node):
        self._rebinds(node, node.arg)
        self.generic_visit(node)

    def visit_ClassDef(self, node):
        self._rebinds(node, node.name)
        outer = self.in_class, self.method_self
        for child in node.bases + node.keywords + node.decorator_list + list(getattr(node, "type_params", [])):
            self.visit(child)
        self.in_class, self.method_self = True, None
        for child in node.body:
            self.visit(child)
        self.in_class, self.method_self = outer

    def visit_Constant(self, node):
        if isinstance(node.value, str) and DUNDER.fullmatch(node.value) and node.value != "__main__":
            self.fail(node, f"uses the string {node.value!r}: candidates may not reach into internals by name")

    def visit_Call(self, node):
        if self.in_jit and isinstance(node.func, ast.Name) and node.func.id in self.jit_params:
            self.fail(node, f"calls its parameter {node.func.id} inside a @triton.jit function: a function passed as a "
                            f"constexpr runs as plain Python at compile time; call @triton.jit helpers by name")
        self.generic_visit(node)

    def visit_FormattedValue(self, node):
        if not isinstance(node.value, (ast.Attribute, ast.Constant)):
            self.fail(node, "formats a value in an f-string: candidates may format only attributes such as x.shape "
                            "(text of a tensor is made out of the harness's sight)")
        self.generic_visit(node)

    def visit_BinOp(self, node):
        if isinstance(node.op, ast.Mod) and isinstance(node.left, ast.Constant) and isinstance(node.left.value, str):
            self.fail(node, "uses %-formatting: text of a tensor is made out of the harness's sight")
        self.generic_visit(node)

    def visit_MatchClass(self, node):
        self.fail(node, "uses a class pattern in match: it reads attributes by name, past the attribute rules")
        self.generic_visit(node)

    def visit_ExceptHandler(self, node):
        if node.name:
            self._rebinds(node, node.name)
        self.generic_visit(node)

    def visit_MatchAs(self, node):
        if node.name is not None:
            self._rebinds(node, node.name)
        self.generic_visit(node)

    def _no_suspension(self, node):
        self.fail(node, "uses yield, await or async: a suspended generator or coroutine runs its cleanup when it is "
                        "dropped, where the harness does not watch")

    visit_Yield = visit_YieldFrom = visit_Await = _no_suspension

    def visit_Global(self, node):
        self.fail(node, "uses a global statement: keep state out of candidates (no caching across calls)")

    def visit_Nonlocal(self, node):
        self.fail(node, "uses a nonlocal statement: keep state out of candidates (no caching across calls)")

    # -- functions --------------------------------------------------------------------------------------------------
    def _is_jit(self, node) -> bool:
        for decorator in node.decorator_list:
            target = decorator.func if isinstance(decorator, ast.Call) else decorator
            if self._dotted(target) in ("triton.jit", "triton.language.jit"):
                return True
        return False

    def visit_FunctionDef(self, node):
        if isinstance(node, ast.AsyncFunctionDef):
            self._no_suspension(node)
        self._rebinds(node, node.name)
        if DUNDER.fullmatch(node.name) and node.name != "__init__":
            self.fail(node, f"defines the special method {node.name}: Python and torch call such methods implicitly, "
                            f"where the harness does not watch")
        jit = self._is_jit(node)
        if jit:
            for decorator in node.decorator_list:
                target = decorator.func if isinstance(decorator, ast.Call) else decorator
                if self._dotted(target) not in JIT_DECORATORS:
                    self.fail(decorator, f"decorates the @triton.jit function {node.name} with something other "
                                         f"than {', '.join(sorted(JIT_DECORATORS))}")
        # Decorators, defaults and annotations run on the host when the file is imported, whatever the decorator.
        args = node.args
        host = list(node.decorator_list) + args.defaults + [d for d in args.kw_defaults if d is not None]
        every = args.posonlyargs + args.args + args.kwonlyargs + [a for a in (args.vararg, args.kwarg) if a]
        for a in every:
            self._rebinds(a, a.arg)
        annotations = [a.annotation for a in every if a.annotation is not None]
        annotations += [node.returns] if node.returns is not None else []
        for annotation in annotations:
            self._no_string_annotation(annotation)
        host += annotations
        host += list(getattr(node, "type_params", []))
        outer, self.in_jit = self.in_jit, 0
        for child in host:
            self.visit(child)
        self.in_jit = outer + jit
        outer_params = self.jit_params, self.jit_locals
        if jit:
            self.jit_params = {a.arg for a in every}
            self.jit_locals = self.jit_params | {n.id for n in ast.walk(node) if isinstance(n, ast.Name)
                                                 and not isinstance(n.ctx, ast.Load)}
        positional = args.posonlyargs + args.args
        outer_class = self.in_class, self.method_self
        if self.in_class:
            self.method_self = positional[0].arg if positional else None
        elif self.method_self in {a.arg for a in every}:
            self.method_self = None  # a nested function whose own parameter is named like the method's self
        self.in_class = False
        for child in node.body:
            self.visit(child)
        self.in_jit = outer
        self.jit_params, self.jit_locals = outer_params
        self.in_class, self.method_self = outer_class

    visit_AsyncFunctionDef = visit_FunctionDef


def _resolve(path: str):
    """Walk a dotted path through modules already loaded in this process; the objects along the way.

    Nothing is imported (a module the candidate names could run code at import, and this runs in the parent) and
    attributes are read with inspect.getattr_static, so no property or descriptor runs either: resolving
    triton.runtime.driver.active must not start a driver. The walk stops at anything that is not a module or class,
    and at a module not loaded yet (the rules on imports and host code still judge that name)."""
    import inspect
    import sys
    import types

    parts = path.split(".")
    obj = sys.modules.get(parts[0]) if parts[0] in SAFE_MODULES else None
    if obj is None:
        return []
    chain = [obj]
    for part in parts[1:]:
        if not isinstance(obj, (types.ModuleType, type)):
            break
        try:
            obj = inspect.getattr_static(obj, part)
        except AttributeError:
            obj = sys.modules.get(".".join(parts[: len(chain) + 1]))
            if obj is None:
                break
        chain.append(obj)
    return chain


def _canonical(path: str) -> str:
    """The path named from the last module it passes through: triton.language.core.typing.ForwardRef is
    typing.ForwardRef, so the rules for typing (and for any module) hold however it is reached."""
    import types

    parts = path.split(".")
    chain = _resolve(path)
    for index in range(len(chain) - 1, 0, -1):
        if isinstance(chain[index], types.ModuleType):
            return ".".join([chain[index].__name__] + parts[index + 1:])
    return path


def _triton_runtime_object(path: str) -> str | None:
    """The type of the first object along a triton path that is not part of the kernel language, if any."""
    for obj in _resolve(path)[1:]:
        kind = f"{type(obj).__module__}.{type(obj).__qualname__}"
        if not isinstance(obj, type) and kind not in TRITON_KINDS:
            return kind
    return None


def _module_escape(path: str) -> str | None:
    """The first module along the path that lies outside the safe packages (typing.sys -> 'sys'), if any."""
    import types

    for obj in _resolve(path):
        if isinstance(obj, types.ModuleType) and obj.__name__.split(".")[0] not in SAFE_MODULES:
            return obj.__name__
    return None


def _jit_path_allowed(path: str) -> bool:
    """Inside a kernel: the kernel language (triton.language and its public submodules), math, and the triton
    names host code may use; nothing private, and no other part of triton (its compiler and runtime are Python)."""
    parts = path.split(".")
    if any(part.startswith("_") for part in parts[1:]):
        return False
    if parts[0] == "math" or path in TRITON_HOST_ALLOWED:
        return True
    return path == "triton.language" or path.startswith("triton.language.")


def _is_module(path: str) -> bool:
    import types

    chain = _resolve(path)
    return bool(chain) and len(chain) == len(path.split(".")) and isinstance(chain[-1], types.ModuleType)


def check_source(source: str, filename: str, forbid_calls=(), forbid_modules=()) -> list[str]:
    """All rule violations in the file as 'line N: reason' strings; empty when the source is acceptable.

    A syntax error raises Rejection with the compiler's message.
    """
    import importlib

    for name in SAFE_MODULES:  # the allowed packages themselves (never a name the candidate chose), so that paths
        importlib.import_module(name)  # into them resolve the same in the parent as in the child
    try:
        tree = ast.parse(source, filename=filename)
    except SyntaxError as exc:
        raise Rejection(f"SyntaxError at line {exc.lineno}: {exc.msg}") from exc
    checker = _Checker(forbid_calls, forbid_modules, _tensor_attribute_names())
    checker.visit(tree)
    defined = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    if "custom_kernel" not in defined:
        checker.problems.append((0, "defines no function custom_kernel(*inputs)"))
    seen, out = set(), []
    for line, message in sorted(checker.problems):
        if message not in seen:
            seen.add(message)
            out.append(f"line {line}: {message}" if line else message)
    return out



def screen(path, forbid_calls=(), forbid_modules=(), strict: bool = True) -> list[str]:
    """The load rung's static verdict on a candidate file: its violations, or a reason it cannot be read.

    strict=False keeps only what no candidate can pass without (a custom_kernel, valid syntax), so that the
    sandbox's dynamic defences can be tested on their own.
    """
    try:
        problems = check_source(Path(path).read_text(), str(path), forbid_calls, forbid_modules)
    except Rejection as exc:
        return [str(exc)]
    except (OSError, UnicodeDecodeError) as exc:
        return [f"cannot read the candidate: {exc}"]
    if not strict:
        problems = [p for p in problems if p.endswith("custom_kernel(*inputs)")]
    return problems


def summary(problems: list[str]) -> str:
    return problems[0] + (f" (+{len(problems) - 1} more)" if len(problems) > 1 else "")
