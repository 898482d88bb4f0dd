"""The scopes of the static check's reading (flow.py): which scope binds each name a candidate writes, and where each of
its functions exits, by Python's own scoping rules."""
from __future__ import annotations

import ast

from .atoms import COMPREHENSIONS, FUNCTIONS


class Scope:
    def __init__(self, node, kind: str, parent):
        self.node, self.kind, self.parent = node, kind, parent
        self.bound: set[str] = set()
        self.globals: set[str] = set()
        self.nonlocals: set[str] = set()


def parameters(args: ast.arguments) -> list[ast.arg]:
    return args.posonlyargs + args.args + args.kwonlyargs + [a for a in (args.vararg, args.kwarg) if a]


class Scopes:
    """Flow's reading of scopes: what `_scan` records when the flow is built, and `key(name)` after."""

    def _scan(self, node, scope: Scope, function) -> None:
        """Record which scope binds each name and where each function's exits are (Python's own scoping rules)."""
        if isinstance(node, FUNCTIONS):
            self._scan_function(node, scope)
            return
        if isinstance(node, ast.ClassDef):
            self._bind(scope, node.name, node)
            for child in node.decorator_list + node.bases + [k.value for k in node.keywords]:
                self._scan(child, scope, function)
            inner = Scope(node, "class", scope)
            for child in node.body:
                self._scan(child, inner, function)
            self.file_attrs |= inner.bound
            return
        if isinstance(node, COMPREHENSIONS):
            self._scan_comprehension(node, scope, function)
            return
        if isinstance(node, (ast.Return, ast.Yield, ast.YieldFrom)) and function is not None:
            self.exits[id(function)].append(node)
            self.enclosing[id(node)] = function
        if isinstance(node, ast.Global):
            scope.globals.update(node.names)
            self.global_names.update(node.names)
        elif isinstance(node, ast.Nonlocal):
            scope.nonlocals.update(node.names)
        elif isinstance(node, ast.Name):
            self._scan_name(node, scope)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                self._bind(scope, (alias.asname or alias.name).split(".")[0], node)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            self._bind(scope, node.name, node)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            self._bind(scope, node.name, node)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            self._bind(scope, node.rest, node)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, (ast.Store, ast.Del)):
            self.file_attrs.add(node.attr)
        elif isinstance(node, ast.AnnAssign) and scope.kind == "class" and isinstance(node.target, ast.Name):
            self.fields_declared[id(scope.node)].add(node.target.id)
        for child in ast.iter_child_nodes(node):
            self._scan(child, scope, function)

    def _scan_function(self, node, scope: Scope) -> None:
        args = node.args
        host = list(args.defaults) + [d for d in args.kw_defaults if d is not None]
        host += [a.annotation for a in parameters(args) if a.annotation is not None]
        if not isinstance(node, ast.Lambda):
            self._bind(scope, node.name, node)
            host += node.decorator_list + ([node.returns] if node.returns is not None else [])
            if scope.kind == "class":
                self.methods.add(id(node))
                self.class_body[id(scope.node)].append(node)
                kinds = {d.id for d in node.decorator_list if isinstance(d, ast.Name)}
                if "staticmethod" in kinds:
                    self.static.add(id(node))
                if "classmethod" in kinds:
                    self.bound_first.add(id(node))
        self.scope_of[id(node)] = scope
        for child in host:
            self._scan(child, scope, None)
        inner = Scope(node, "function", scope)
        inner.bound.update(a.arg for a in parameters(args))
        for child in node.body if isinstance(node.body, list) else [node.body]:
            self._scan(child, inner, node)

    def _scan_comprehension(self, node, scope: Scope, function) -> None:
        generators = node.generators
        self._scan(generators[0].iter, scope, function)  # the first iterable is read in the enclosing scope
        inner = Scope(node, "comprehension", scope)
        for index, generator in enumerate(generators):
            self._scan(generator.target, inner, function)
            if index:
                self._scan(generator.iter, inner, function)
            for condition in generator.ifs:
                self._scan(condition, inner, function)
        for child in (node.key, node.value) if isinstance(node, ast.DictComp) else (node.elt,):
            self._scan(child, inner, function)

    def _scan_name(self, node: ast.Name, scope: Scope) -> None:
        if isinstance(node.ctx, ast.Load):
            self.scope_of[id(node)] = scope
            return
        parent = self.parents.get(id(node), (None, None))[0]
        while isinstance(parent, ast.NamedExpr) and scope.kind == "comprehension":  # PEP 572: the enclosing scope
            scope = scope.parent
        self._bind(scope, node.id, node)

    def _bind(self, scope: Scope, name: str, node) -> None:
        scope.bound.add(name)
        if name in scope.globals:
            self.module.bound.add(name)
        self.scope_of.setdefault(id(node), scope)

    def _owner(self, scope: Scope, name: str) -> Scope:
        """The scope whose binding of `name` a read in `scope` sees."""
        current, first = scope, True
        while current is not None:
            if name in current.globals:
                return self.module
            if name not in current.nonlocals and (first or current.kind != "class") and name in current.bound:
                return current
            first = False
            current = current.parent
        return self.module

    def key(self, node: ast.Name):
        scope = self.scope_of.get(id(node), self.module)
        owner = self._owner(scope, node.id)
        return id(owner.node), node.id, owner

    def _scope_key(self, node, name: str):
        """The table key for a name bound by a statement (a def, class, import, handler or pattern) where it stands."""
        owner = self._owner(self.scope_of.get(id(node), self.module), name)
        return id(owner.node), name
