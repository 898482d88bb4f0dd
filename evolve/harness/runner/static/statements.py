"""The static check's rules on statements: writes through modules and library objects, the branches and loops of a
kernel body, and functions (a kernel's decorators, and what runs on the host when the file is imported)."""
from __future__ import annotations

import ast

from .tables import COMPILE_TIME_TESTS, SAFE_DUNDERS, UNROLLED_LOOPS


class Statements:
    """The check's (check.py: _Checker) visits of statements."""

    # -- writes through modules ---------------------------------------------------------------------------------
    def _check_target(self, target):
        if isinstance(target, (ast.Attribute, ast.Subscript)):
            root = target
            while isinstance(root, (ast.Attribute, ast.Subscript)):
                root = root.value
            if isinstance(root, ast.Name) and root.id in self.aliases:
                self.fail(target, f"assigns into {self.aliases[root.id]}: candidates may not modify modules")
            else:
                owner = sorted(a[1] for a in self.flow.value(target.value) if a[0] == "lib"
                               and not (isinstance(target, ast.Subscript) and self.lib.unsubscriptable(a[1])))
                if owner:
                    self.fail(target, f"assigns into {owner[0]}: candidates may not modify modules or the "
                                      f"library's objects")
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

    visit_AnnAssign = visit_AugAssign

    def visit_Delete(self, node):
        for target in node.targets:
            self._check_target(target)
        self.generic_visit(node)

    def visit_For(self, node):
        self._check_target(node.target)
        unrolled = isinstance(node.iter, ast.Call) and self._dotted(node.iter.func) in UNROLLED_LOOPS
        self._visit_branching(node, node.iter, unrolled)

    def visit_If(self, node):
        self._visit_branching(node, node.test, self._compile_time(node.test))

    def visit_While(self, node):
        self._visit_branching(node, node.test, self._compile_time(node.test))

    def visit_IfExp(self, node):
        self._visit_branching(node, node.test, self._compile_time(node.test))

    def _compile_time(self, test) -> bool:
        """A kernel's condition the DSL decides while tracing (`cutlass.const_expr(...)`), not each lane at run time."""
        return isinstance(test, ast.Call) and self._dotted(test.func) in COMPILE_TIME_TESTS

    def _visit_branching(self, node, head, decided: bool) -> None:
        """The head (a test or an iterable) as it stands, the rest as code some lanes may reach without the others."""
        runtime = bool(self.in_jit) and not decided
        for field, value in ast.iter_fields(node):
            values = value if isinstance(value, list) else [value]
            inside = value is not head and field != "target"
            self.branches += runtime and inside
            try:
                for child in values:
                    if isinstance(child, ast.AST):
                        self.visit(child)
            finally:
                self.branches -= runtime and inside

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

    def visit_ExceptHandler(self, node):
        if node.name:
            self._rebinds(node, node.name)
        self.generic_visit(node)

    def visit_MatchClass(self, node):
        for name in node.kwd_attrs:
            if name.startswith("__") and name not in SAFE_DUNDERS:
                self.fail(node, f"reads the dunder attribute {name} in a class pattern: candidates may not reach "
                                f"into internals")
        self.generic_visit(node)

    def visit_ClassDef(self, node):
        self._rebinds(node, node.name)
        self.generic_visit(node)

    def visit_FormattedValue(self, node):
        if self.in_jit and not isinstance(node.value, ast.Constant):
            self.fail(node, f"formats a value in an f-string inside a {self.kernel_word} function: kernels may not "
                            f"inspect what they run on")
        self.generic_visit(node)

    # -- functions ----------------------------------------------------------------------------------------------------
    def _is_jit(self, node) -> bool:
        for decorator in node.decorator_list:
            target = decorator.func if isinstance(decorator, ast.Call) else decorator
            if self._dotted(target) in self.rules.kernel_markers:
                return True
        return False

    def visit_FunctionDef(self, node):
        self._rebinds(node, node.name)
        jit = self._is_jit(node)
        if jit:
            for decorator in node.decorator_list:
                target = decorator.func if isinstance(decorator, ast.Call) else decorator
                if self._dotted(target) not in self.rules.kernel_decorators:
                    self.fail(decorator, f"decorates the {self.kernel_word} function {node.name} with something "
                                         f"other "
                                         f"than {', '.join(sorted(self.rules.kernel_decorators))}")
        # Decorators, defaults and annotations run on the host when the file is imported, whatever the decorator.
        args = node.args
        every = args.posonlyargs + args.args + args.kwonlyargs + [a for a in (args.vararg, args.kwarg) if a]
        for a in every:
            self._rebinds(a, a.arg)
        host = list(node.decorator_list) + args.defaults + [d for d in args.kw_defaults if d is not None]
        host += [a.annotation for a in every if a.annotation is not None]
        host += [node.returns] if node.returns is not None else []
        outer, self.in_jit = self.in_jit, 0
        for child in host:
            if not (isinstance(child, ast.Constant) and isinstance(child.value, str)):  # a string annotation is text
                self.visit(child)
        self.in_jit = outer + jit
        outer_params = self.jit_params, self.jit_locals
        if jit:
            self.jit_params = {a.arg for a in every}
            self.jit_locals = self.jit_params | {n.id for n in ast.walk(node) if isinstance(n, ast.Name)
                                                 and not isinstance(n.ctx, ast.Load)}
        for child in node.body:
            self.visit(child)
        self.in_jit = outer
        self.jit_params, self.jit_locals = outer_params

    visit_AsyncFunctionDef = visit_FunctionDef
