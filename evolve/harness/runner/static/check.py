"""The static half of the load rung: a first line that tells a model early, in one line, what its file may not do.

No verdict rests on it alone. The candidate runs in a jailed runner and every figure is observed from outside it
(harness/measurer/measurer.py), so a file that walks around a rule here gains at most what the measurer lets anyone
gain: a library call is timed at the library's speed, a wrong answer fails. Each rule therefore says what it protects,
and none may refuse an honest idiom; the language's rules (evolve/lang: `StaticRules`, for Triton in
evolve/lang/triton/rules.py, with the tables this check reads) are the list. Every name is resolved through the file's
imports and aliases, so `import torch.nn.functional as F; F.softmax(x)` is seen as `torch.nn.functional.softmax`, and
through what the file binds (flow.py): `m = torch.nn; m.functional.gelu(x)` is `torch.nn.functional.gelu` too,
however `m` was bound (unpacking, a container, a default, a function's result, an attribute). A module is followed
through names, containers and the file's own functions only; handed anywhere else (a call, an attribute, a class body)
it is refused, since the check could not judge what is done with it there.
"""
from __future__ import annotations

import ast
import builtins
from pathlib import Path

from ....lang import DEFAULT as DEFAULT_LANGUAGE
from ....lang import StaticRules
from ....lang import get as get_language
from .flow import Flow
from .places import Places
from .statements import Statements
from .tables import (DYNAMIC_BUILTINS, INTROSPECTION, NAMED_ATTRIBUTE_BUILTINS, REFUSED_PATHS, SAFE_DUNDERS,
                     TYPING_EVALUATORS)


class Rejection(Exception):
    """The candidate's source cannot be read; str() is the one-line reason."""


def _bound_names(tree) -> set:
    """Every name the file binds anywhere: assignments, definitions, imports, parameters, handlers, patterns."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            names.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            names.add(node.rest)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            names.update(node.names)
    return names


def _is_main_guard(node) -> bool:
    """`if __name__ == "__main__":` at module level: its body never runs when the file is imported."""
    test = node.test if isinstance(node, ast.If) else None
    return (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == "__name__"
            and len(test.comparators) == 1 and isinstance(test.comparators[0], ast.Constant)
            and test.comparators[0].value == "__main__" and not node.orelse)


class _Checker(Places, Statements, ast.NodeVisitor):
    """The rules, visited over the file: imports and names here, where values go in places.py, statements in
    statements.py."""

    def __init__(self, forbid_calls, forbid_modules, bound: set, allow_modules=(), *, flow: Flow, library: _Library):
        self.flow, self.lib, self.rules = flow, library, library.rules
        self.kernel_word = self.rules.kernel_word  # what the messages call a kernel function (@triton.jit)
        self.allow_modules = set(allow_modules)
        self.type_names: set[str] = set()  # names imported from an allowed problem module: annotations only
        self.annotations: set[int] = set()  # ids of the bare-name annotations where such a name may stand
        self.forbid_calls = set(forbid_calls)
        self.forbid_methods = {c.split(".", 1)[1] for c in forbid_calls if c.startswith("Tensor.")}
        self.forbid_modules = set(forbid_modules)
        self.bound = bound
        self.known = bound | set(dir(builtins)) | {"__name__", "__file__", "__doc__", "__annotations__"}
        self.aliases: dict[str, str] = {}
        self.in_jit = 0
        self.branches = 0  # runtime branches and loops around the node, inside a kernel body
        self.jit_params: set[str] = set()
        self.jit_locals: set[str] = set()
        self.problems: list[tuple[int, str]] = []

    def fail(self, node, message):
        self.problems.append((getattr(node, "lineno", 0), message))

    def visit(self, node):
        if isinstance(node, ast.expr) and isinstance(getattr(node, "ctx", ast.Load()), ast.Load):
            self._check_module_goes(node)
        return super().visit(node)

    # -- the file ----------------------------------------------------------------------------------------------------
    def visit_Module(self, node):
        for child in ast.walk(node):  # where a problem's type names may appear: `data: input_t`, `-> output_t`
            if isinstance(child, ast.arg) and isinstance(child.annotation, ast.Name):
                self.annotations.add(id(child.annotation))
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) and isinstance(child.returns, ast.Name):
                self.annotations.add(id(child.returns))
            elif isinstance(child, ast.AnnAssign) and isinstance(child.annotation, ast.Name):
                self.annotations.add(id(child.annotation))
        for child in node.body:
            if _is_main_guard(child):
                continue  # a self-test below the guard may compare with the library: it never runs on import
            self.visit(child)

    # -- imports ------------------------------------------------------------------------------------------------------
    def _check_module(self, node, module: str):
        top = module.split(".")[0]
        if any(part.startswith("__") for part in module.split(".")) and module != "__future__":
            self.fail(node, f"imports {module}: candidates may not import dunder modules (they run code at import)")
        elif module in self.forbid_modules or top in self.forbid_modules:
            self.fail(node, f"imports {module}: this problem forbids it (the reference is not for candidates)")
        elif module in self.allow_modules and isinstance(node, ast.ImportFrom):
            return  # the problem's own type names (a GPU MODE task.py), held to annotations below
        elif module in self.allow_modules:
            self.fail(node, f"imports {module} as a module: only `from {module} import NAME` of its type names, "
                            f"used as annotations")
        elif top not in self.rules.allowed_modules:
            self.fail(node, f"imports {module}: candidates may import only "
                            f"{', '.join(self.rules.allowed_modules[:4])} and pure standard modules "
                            f"({', '.join(self.rules.allowed_modules[6:])})")
        elif module in REFUSED_PATHS:
            self.fail(node, f"imports {module}: {REFUSED_PATHS[module]}")
        elif self.lib.unresolved(module):
            self.fail(node, f"imports {module}, which the check cannot load ({self.lib.unresolved(module)})")

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
            if module in self.allow_modules:
                self.type_names.add(alias.asname or alias.name)
                continue
            self._bind(node, alias.asname or alias.name, f"{module}.{alias.name}")
            self._check_path(node, f"{module}.{alias.name}", imported=True)

    def _bind(self, node, name: str, target: str) -> None:
        self._rebinds(node, name, target)
        self.aliases[name] = target

    def _rebinds(self, node, name: str, target: str | None = None) -> bool:
        if name in self.aliases and self.aliases[name] != target:
            self.fail(node, f"rebinds the imported name {name}: every use of an import must mean the import")
            return True
        return False

    # -- names --------------------------------------------------------------------------------------------------------
    def _dotted(self, node) -> str | None:
        """Resolve `a.b.c` through the import aliases to a full dotted path, or None if the root is not an import."""
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name) or node.id not in self.aliases:
            return None
        return ".".join([self.aliases[node.id]] + parts[::-1])

    def _check_path(self, node, path: str, imported: bool = False):
        """Judge a dotted name as spelt and as what it really names (the path from the last module it passes
        through): tl.core.typing.ForwardRef is typing.ForwardRef, and every rule holds for both."""
        canonical = self.lib.canonical(path)
        names = {path, canonical}
        name = path if canonical == path else f"{path} (which is {canonical})"
        if names & self.forbid_calls:
            self.fail(node, f"uses {name}, which this problem forbids")
            return
        refused = next((p for p in names if p in REFUSED_PATHS), None)
        if refused:
            self.fail(node, f"uses {name}: {REFUSED_PATHS[refused]}")
            return
        if any(p.split(".")[0] in ("typing", "typing_extensions") and p.split(".")[1:2]
               and p.split(".")[1] in TYPING_EVALUATORS for p in names):
            self.fail(node, f"uses {name}: typing's evaluators run strings as code")
            return
        unresolved = self.lib.unresolved(path)
        if unresolved:
            self.fail(node, f"uses {name}, which names nothing the check can see ({unresolved}): name only what the "
                            f"library's modules hold")
            return
        escape = self.lib.module_escape(path)
        if escape:
            self.fail(node, f"uses {name}, which reaches the module {escape}: candidates may use only "
                            f"{', '.join(self.lib.safe[:4])} and pure standard modules")
            return
        if self.in_jit:
            if self.branches and names & self.rules.warp_uniform_calls:
                self.fail(node, f"uses {name} inside a runtime if, while or for of a {self.kernel_word} function: "
                                f"it shuffles over all 32 lanes of the warp, so where only some lanes get there "
                                f"they wait for the rest forever and the kernel hangs; bind its value once at the "
                                f"top of the kernel (`warp = cute.arch.warp_idx()`) and use that")
                return
            if any(p == "torch" or p.startswith("torch.") for p in names):
                self.fail(node, f"uses {name} inside a {self.kernel_word} function: kernels use "
                                f"{self.rules.kernel_module}")
            elif not all(self.lib.kernel_path_allowed(p) for p in names):
                self.fail(node, f"uses {name} inside a {self.kernel_word} function: kernels may use only the "
                                f"public names of {self.rules.kernel_names}")
            return
        if any(part.startswith("_") for p in names for part in p.split(".")[1:]):
            self.fail(node, f"uses {name} in host code: library internals (private names) are library calls by "
                            f"another name")
        elif not imported and any(self.lib.host_compute(p) for p in names):
            self.fail(node, f"uses {name} in host code: host code may only allocate tensors, read their metadata "
                            f"and launch {self.rules.launches} (the computation belongs in {self.kernel_word} "
                            f"code)")

    def visit_Attribute(self, node):
        if node.attr in INTROSPECTION or node.attr.startswith("co_"):
            self.fail(node, f"touches {node.attr}: candidates may not inspect frames, code or tracebacks")
            return
        if node.attr.startswith("__") and node.attr.endswith("__") and node.attr not in SAFE_DUNDERS:
            self.fail(node, f"touches the dunder attribute {node.attr}: candidates may not reach into internals")
            return
        path = self._dotted(node)
        if path is not None:
            self._check_path(node, path)
            parts = path.split(".")
            if parts[:2] == ["torch", "Tensor"] and len(parts) > 2 and parts[2] in self.forbid_methods:
                self.fail(node, f"uses Tensor.{parts[2]} (as {path}), which this problem forbids")
            return  # the chain is judged as a whole
        if isinstance(node.ctx, ast.Load):
            self._check_object_attribute(node)
        if self.in_jit:
            if node.attr.startswith("_"):
                self.fail(node, f"touches the private attribute {node.attr} inside a {self.kernel_word} function: "
                                f"kernels may use only public names")
            elif node.attr in self.rules.kernel_introspection_attributes:
                self.fail(node, f"uses .{node.attr} inside a {self.kernel_word} function: kernels may not inspect "
                                f"what they run on (the interpreter and the compiler hand them different objects)")
            elif node.attr in self.rules.kernel_tensor_escapes:
                self.fail(node, f"uses .{node.attr} inside a {self.kernel_word} function: kernels use "
                                f"{self.rules.kernel_module}")
        elif node.attr in self.rules.host_data_escapes:
            self.fail(node, f"uses .{node.attr} in host code: it hands a tensor's data to plain Python, where the "
                            f"work would not be a kernel")
        if node.attr in self.forbid_methods:
            self.fail(node, f"uses Tensor.{node.attr}, which this problem forbids")
        if node.attr in ("format", "format_map") and not _plain_format(node.value):
            self.fail(node, f"uses .{node.attr} on a format string with attribute or index fields: they read "
                            f"attributes by name; use an f-string")
        self.generic_visit(node)

    def visit_Name(self, node):
        if not isinstance(node.ctx, ast.Load):
            if self._rebinds(node, node.id):
                return
            plain = ("__all__", "__version__", "__slots__")
            if node.id.startswith("__") and node.id.endswith("__") and node.id not in plain:
                self.fail(node, f"binds the dunder name {node.id}: candidates may not reach into internals")
            return
        if node.id in self.type_names:
            if id(node) not in self.annotations:
                self.fail(node, f"uses {node.id}, a name from the problem's own module, outside a type annotation "
                                f"(`data: {node.id}`)")
            return
        if node.id in self.aliases:
            path = self.aliases[node.id]
            if self.lib.is_module(path):
                self.fail(node, f"uses the module {path} as a value: use it only as the root of a name "
                                f"(`{node.id}.x`), so every use can be checked")
            else:
                self._check_path(node, path)
            return
        if node.id in DYNAMIC_BUILTINS and node.id not in self.bound:
            self.fail(node, f"uses the builtin {node.id}: candidates may not run code built from strings or reach "
                            f"names computed at run time")
        elif node.id in NAMED_ATTRIBUTE_BUILTINS and node.id not in self.bound and not self._called(node):
            self.fail(node, f"uses the builtin {node.id} as a value: whatever calls it reads an attribute named at run "
                            f"time; call it with the name in the source")
        elif node.id not in self.known:
            self.fail(node, f"uses the name {node.id}, which the file never defines or imports (names injected at "
                            f"run time are not the candidate's)")
        elif self.in_jit and node.id in self.rules.kernel_introspection_builtins and node.id not in self.jit_locals:
            self.fail(node, f"uses the builtin {node.id} inside a {self.kernel_word} function: kernels may not "
                            f"inspect what they run on (the interpreter and the compiler hand them different objects)")
        elif node.id in self.bound:
            self._check_object_name(node)

    def visit_Call(self, node):
        func = node.func
        if (isinstance(func, ast.Name) and func.id in NAMED_ATTRIBUTE_BUILTINS and func.id not in self.bound
                and not self.in_jit):
            name = node.args[1] if len(node.args) > 1 else None
            if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
                self.fail(node, f"uses the builtin {func.id} with a computed name: name the attribute in the "
                                f"source so it can be checked")
            else:
                self.visit_Attribute(ast.Attribute(value=node.args[0], attr=name.value, ctx=ast.Load(),
                                                   lineno=node.lineno))
        if self.in_jit and isinstance(func, ast.Name) and func.id in self.jit_params:
            self.fail(node, f"calls its parameter {func.id} inside a {self.kernel_word} function: a function "
                            f"passed as a constexpr runs as plain Python at compile time; call {self.kernel_word} "
                            f"helpers by name")
        self.generic_visit(node)



def _plain_format(value) -> bool:
    """A string literal whose fields read no attribute or item ('{}', '{0}', '{name:>8}' but not '{0.x}', '{0[k]}')."""
    if not (isinstance(value, ast.Constant) and isinstance(value.value, str)):
        return False
    import string

    try:
        fields = [f for _, f, _, _ in string.Formatter().parse(value.value) if f is not None]
    except ValueError:
        return False
    return not any("." in f or "[" in f for f in fields)


_UNTOLD = object()


class _Library:
    """Dotted paths through the language's own packages (its allowed modules), walked through what they name.

    Attributes are read with inspect.getattr_static, so no property or descriptor runs: resolving
    triton.runtime.driver.active must not start a driver. A module that lacks a name the path asks of it is given the
    submodule of that name, imported, or else what the module's own __getattr__ computes, so a path names the same
    object whatever this process had loaded before (`import triton` loads 42 of Triton's 148 modules). That runs the
    library's import-time code: evaluations run this check in a checker process of its own (parent/check_file.py), never
    in the parent. A module with neither is recorded in `unloadable`, and a path through it is refused, not guessed."""

    def __init__(self, rules: StaticRules):
        self.rules = rules
        self.safe = rules.allowed_modules  # paths may pass through these packages only
        self.unloadable: dict[str, str] = {}  # module.name -> why it is no object the check can see

    def top(self, name: str):
        """The allowed top-level module of that name, imported; None for any other name."""
        import importlib

        if name not in self.safe:
            return None
        try:
            return importlib.import_module(name)
        except (Exception, SystemExit) as exc:
            self.unloadable.setdefault(name, f"{type(exc).__name__}: {exc}")
            return None

    def member(self, owner, part: str):
        """owner.part as the walk sees it (raises AttributeError where owner has no such member)."""
        import inspect
        import types

        try:
            return inspect.getattr_static(owner, part)
        except AttributeError:
            if not isinstance(owner, types.ModuleType):
                raise
        return self._loaded_member(owner, part)

    def _loaded_member(self, module, part: str):
        """The submodule module.part imported, or what module.__getattr__ gives for part (library code either way)."""
        import importlib
        import importlib.util

        name = f"{module.__name__}.{part}"
        if name in self.unloadable or part.startswith("__"):
            raise AttributeError(name)
        try:
            if hasattr(module, "__path__") and importlib.util.find_spec(name) is not None:
                return importlib.import_module(name)
            getter = module.__dict__.get("__getattr__")
            if callable(getter):
                return getter(part)
            self.unloadable[name] = f"{module.__name__} has no attribute or module {part}"
        except (Exception, SystemExit) as exc:
            self.unloadable[name] = f"{type(exc).__name__}: {exc}"
        raise AttributeError(name)

    def host_compute(self, path: str) -> bool:
        import torch

        if not path.startswith("torch."):
            return False
        if any(path.startswith(prefix) or path == prefix.rstrip(".") for prefix in self.rules.host_torch_compute):
            return True
        parts = path.split(".")
        return (len(parts) == 2 and parts[1] in dir(torch._C._VariableFunctions)
                and parts[1] not in self.rules.host_torch_allocation)

    def kernel_path_allowed(self, path: str) -> bool:
        """Inside a kernel: the kernel language's modules and their public members, and the language's own
        decorators and helpers; nothing private (for Triton: triton.language and math, never its compiler or
        runtime, which are Python)."""
        parts = path.split(".")
        if any(part.startswith("_") for part in parts[1:]):
            return False
        return path in self.rules.kernel_helpers or any(path == m or path.startswith(m + ".")
                                                          for m in self.rules.kernel_modules)

    def resolve(self, path: str):
        """Walk a dotted path through modules and classes; the objects along the way. The walk stops at anything
        that is not a module or class (the flow judges what such an object hands out), and where a module or class
        has no such member (`unresolved` says why, for a module)."""
        import types

        parts = path.split(".")
        obj = self.top(parts[0])
        if obj is None:
            return []
        chain = [obj]
        for part in parts[1:]:
            if not isinstance(obj, (types.ModuleType, type)):
                break
            try:
                obj = self.member(obj, part)
            except AttributeError:
                break
            chain.append(obj)
        return chain

    def unresolved(self, path: str) -> str | None:
        """Why a path that runs through modules names nothing the check can see: a module that is neither loadable
        nor an attribute. None where every module along it has the next name (or the walk leaves the modules)."""
        import types

        parts = path.split(".")
        chain = self.resolve(path)
        if not chain:
            return self.unloadable.get(parts[0]) if parts[0] in self.safe else None
        if len(chain) < len(parts) and isinstance(chain[-1], types.ModuleType):
            return self.unloadable.get(f"{chain[-1].__name__}.{parts[len(chain)]}", "not found")
        return None

    def canonical(self, path: str) -> str:
        """The path named from the last module it passes through: triton.language.core.typing.ForwardRef is
        typing.ForwardRef, so the rules for typing (and for any module) hold however it is reached."""
        import types

        parts = path.split(".")
        chain = self.resolve(path)
        for index in range(len(chain) - 1, 0, -1):
            if isinstance(chain[index], types.ModuleType):
                return ".".join([chain[index].__name__] + parts[index + 1:])
        return path


    def module_escape(self, path: str) -> str | None:
        """The first module along the path that lies outside the allowed packages (typing.sys -> 'sys'), if any; a
        library table of modules counts as the modules it holds (triton.language.extra.modules is sys.modules)."""
        import types

        for obj in self.resolve(path):
            if isinstance(obj, types.ModuleType) and obj.__name__.split(".")[0] not in self.safe:
                return obj.__name__
            held = self.held_modules(obj)
            if held:
                return f"{held[0]} (through a table of modules)"
        return None


    def held_modules(self, obj) -> list[str]:
        """The names of outside modules a library container holds among its keys or values."""
        import types

        if isinstance(obj, dict):
            values = list(obj.values()) + list(obj.keys())
        elif isinstance(obj, (list, tuple, set, frozenset)):
            values = list(obj)
        else:
            return []
        return [v.__name__ for v in values if isinstance(v, types.ModuleType)
                and v.__name__.split(".")[0] not in self.safe]


    def unsubscriptable(self, path: str) -> bool:
        """Whether `path[key] = value` cannot change what path names: a module, or a class or object whose type has
        no __setitem__ (the assignment raises). A flow value that may be such an object (a library call's result may be
        any of its arguments: `smem.allocate_tensor(Float32, ...)`) is then no write into the library."""
        import types

        chain = self.resolve(path)
        if len(chain) != len(path.split(".")):
            return False  # not resolved to its end: judged as a library object
        obj = chain[-1]
        if isinstance(obj, types.ModuleType):
            return True
        # A class or a plain library object (an enum member) whose type has no __setitem__: the assignment raises.
        return not any("__setitem__" in vars(klass) for klass in type(obj).__mro__)

    def is_module(self, path: str) -> bool:
        import types

        chain = self.resolve(path)
        return bool(chain) and len(chain) == len(path.split(".")) and isinstance(chain[-1], types.ModuleType)


    def library_step(self, path: str, attr: str, inherited: bool = False):
        """What `path.attr` is, for the flow: a path while it names a module, a class or what a module or class holds
        (modules by their own name, so that a loop through modules closes); past any other object, an object the
        library made (its attributes have no name to judge); None where a class lacks the attribute, or where a file's
        class would inherit it from this library class and the class does not have it itself. Read statically."""
        import types

        obj = self.static_object(path)
        if obj is _UNTOLD:
            return "lib", f"{path}.{attr}"
        try:
            value = self.member(obj, attr)
        except AttributeError:  # a module without it is refused by name; an object with __getattr__ computes it
            if inherited and isinstance(obj, type):
                return None  # a metaclass's __getattr__ (Enum's) reads the file's own class, which the flow follows
            if isinstance(obj, types.ModuleType) or _computes_missing(obj):
                return "lib", f"{path}.{attr}"
            return None if isinstance(obj, type) else ("made", path)
        if isinstance(value, types.ModuleType):
            return "lib", value.__name__
        if isinstance(obj, (types.ModuleType, type)) or isinstance(value, type) or _computed_on_read(value):
            return "lib", f"{path}.{attr}"
        return "made", path


    def static_object(self, path: str):
        """The object at a dotted path, walked as `member` walks through modules, classes and plain objects alike;
        _UNTOLD where a step is missing or computed when read."""
        parts = path.split(".")
        obj = self.top(parts[0])
        if obj is None:
            return _UNTOLD
        for part in parts[1:]:
            try:
                value = self.member(obj, part)
            except AttributeError:
                return _UNTOLD
            if not isinstance(obj, type) and _computed_on_read(value):
                return _UNTOLD
            obj = value
        return obj


    def may_be_module(self, path: str) -> bool:
        """Whether a path may name a module: it does, or the walk cannot tell (it reaches a name of a module the check
        cannot see, or one an object computes when read). Walked as resolve walks."""
        import types

        parts = path.split(".")
        obj = self.top(parts[0])
        if obj is None:
            return True
        for part in parts[1:]:
            owner = obj
            try:
                obj = self.member(owner, part)
            except AttributeError:  # a module's name the check cannot see; or an object's __getattr__
                return isinstance(owner, types.ModuleType) or _computes_missing(owner)
            if not isinstance(owner, types.ModuleType) and _computed_on_read(obj):
                return True
        return isinstance(obj, types.ModuleType)


def _computes_missing(owner) -> bool:
    """Whether reading a name `owner` lacks runs code: a __getattr__ where Python looks for one, in the classes of
    type(owner)'s MRO. (hasattr(type(owner), "__getattr__") also finds the metaclass's: Python 3.11's EnumType has
    one, which makes every enum member look like an object that computes its attributes, though it computes none.)"""
    return any("__getattr__" in vars(klass) for klass in type(owner).__mro__)


def _computed_on_read(attribute) -> bool:
    """A class attribute whose value is computed when it is read (a property or other descriptor of Python code);
    functions, methods and C-level slots are not modules when read."""
    import types

    plain = (types.FunctionType, types.BuiltinFunctionType, types.MethodDescriptorType, types.WrapperDescriptorType,
             types.GetSetDescriptorType, types.MemberDescriptorType, types.ClassMethodDescriptorType, staticmethod,
             classmethod, type, types.ModuleType)
    return hasattr(type(attribute), "__get__") and not isinstance(attribute, plain)


ENTRY = "custom_kernel(*inputs)"  # the entry point's signature in evolve's format; GPU MODE's is custom_kernel(data)


def _parse(source: str, filename: str):
    try:
        return ast.parse(source, filename=filename)
    except SyntaxError as exc:
        raise Rejection(f"SyntaxError at line {exc.lineno}: {exc.msg}") from exc


def _lacks_entry(tree) -> bool:
    """No module-level `def custom_kernel`, nor `custom_kernel = f` naming a function the file defines (GPU MODE's
    users alias theirs), through any chain of such names."""
    defined = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    aliases = {n.targets[0].id: n.value.id for n in tree.body
               if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name)
               and isinstance(n.value, ast.Name)}
    name, seen = "custom_kernel", set()
    while name in aliases and name not in defined and name not in seen:
        seen.add(name)
        name = aliases[name]
    return name not in defined


def _no_entry(entry: str) -> str:
    return f"defines no function {entry}"


def check_source(source: str, filename: str, forbid_calls=(), forbid_modules=(), allow_modules=(),
                 language: str = DEFAULT_LANGUAGE, entry: str = ENTRY) -> list[str]:
    """All rule violations in the file as 'line N: reason' strings; empty when the source is acceptable.

    A syntax error raises Rejection with the compiler's message.
    """
    import importlib

    rules = get_language(language).rules
    for name in rules.allowed_modules[:4]:  # the language's packages themselves (never a name the candidate
        importlib.import_module(name)  # chose), so that paths into them resolve the same everywhere
    tree = _parse(source, filename)
    library = _Library(rules)
    try:
        imported = ast.Module(body=[n for n in tree.body if not _is_main_guard(n)], type_ignores=[])
        flow = Flow(imported, allow_modules, library.library_step)
        checker = _Checker(forbid_calls, forbid_modules, _bound_names(tree), allow_modules, flow=flow,
                           library=library)
        checker.visit(tree)
    except RecursionError:
        raise Rejection("the file nests expressions too deeply to be read") from None
    if not flow.complete:
        checker.problems.append((0, "the check cannot follow this file's names to an end (a library path that "
                                    "grows in a loop): name the library object in full"))
    if _lacks_entry(tree):
        checker.problems.append((0, _no_entry(entry)))
    seen, out = set(), []
    for line, message in sorted(checker.problems):
        if message not in seen:
            seen.add(message)
            out.append(f"line {line}: {message}" if line else message)
    return out


def screen(path, forbid_calls=(), forbid_modules=(), strict: bool = True, allow_modules=(),
           language: str = DEFAULT_LANGUAGE, entry: str = ENTRY) -> list[str]:
    """The load rung's static verdict on a candidate file: its violations, or a reason it cannot be read.

    strict=False keeps only what no candidate can pass without (a custom_kernel, valid syntax), so that the
    defences behind this check can be tested on their own.
    """
    try:
        source = Path(path).read_text()
        if not strict:
            return [_no_entry(entry)] if _lacks_entry(_parse(source, str(path))) else []
        return check_source(source, str(path), forbid_calls, forbid_modules, allow_modules, language, entry)
    except Rejection as exc:
        return [str(exc)]
    except (OSError, UnicodeDecodeError) as exc:
        return [f"cannot read the candidate: {exc}"]


def summary(problems: list[str]) -> str:
    return problems[0] + (f" (+{len(problems) - 1} more)" if len(problems) > 1 else "")
