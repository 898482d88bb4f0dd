"""The static check's rules on values the flow follows (flow.py): where a module-valued expression may go, and what
a name or an attribute that may hold a library object is judged as."""
from __future__ import annotations

import ast

from .atoms import UNKNOWN
from .tables import CONTAINER_NODES, NAMED_ATTRIBUTE_BUILTINS, UNFOLLOWED


class Places:
    """The check's (check.py: _Checker) reading of where values go."""

    # -- where a module may go ----------------------------------------------------------------------------------------
    def _check_module_goes(self, node) -> None:
        """A value that is (or holds, or returns) a module may stand only where the flow follows it."""
        if isinstance(node, ast.Name) and node.id in self.aliases:
            return  # an import's own name has its own rule (`uses the module torch as a value`)
        modules = sorted(p for p in self.flow.library_paths(self.flow.value(node)) if self.lib.may_be_module(p))
        if not modules:
            return
        where = self._unfollowed_position(node)
        if where:
            self.fail(node, f"hands the module {modules[0]} to {where}: the check follows a module only through "
                            f"names, containers and the file's own functions, so that every use of it is judged")

    def _unfollowed_position(self, node) -> str | None:
        """Where a module-valued expression's value goes, when the flow does not follow it there; None when it does."""
        parent, field = self.flow.parents.get(id(node), (None, None))
        if parent is None or isinstance(parent, (ast.Attribute, ast.IfExp, ast.BoolOp, ast.Expr, ast.arguments,
                                                 ast.NamedExpr, ast.Lambda) + CONTAINER_NODES):
            return None  # read through, chosen between, thrown away, a default, or an item
        if isinstance(parent, ast.Starred):
            return self._unfollowed_position(parent)
        if isinstance(parent, ast.Call):
            first = field == "args" and parent.args and parent.args[0] is node
            named = isinstance(parent.func, ast.Name) and parent.func.id in NAMED_ATTRIBUTE_BUILTINS
            return None if field == "func" or (first and named) else "a call"
        if isinstance(parent, (ast.If, ast.While, ast.Assert, ast.comprehension)) and field in ("test", "ifs"):
            return None  # only its truth is read
        if isinstance(parent, ast.UnaryOp) and isinstance(parent.op, ast.Not):
            return None
        if isinstance(parent, ast.Compare) and all(isinstance(op, (ast.Is, ast.IsNot)) for op in parent.ops):
            return None
        if isinstance(parent, (ast.Assign, ast.AnnAssign)) and field == "value":
            targets = parent.targets if isinstance(parent, ast.Assign) else [parent.target]
            return next(filter(None, map(self._unfollowed_target, targets)), None)
        if isinstance(parent, (ast.For, ast.AsyncFor, ast.comprehension)) and field == "iter":
            return self._unfollowed_target(parent.target)
        if isinstance(parent, ast.Subscript):
            return None if field == "value" or self._only_boxes(parent.value) else "an index"
        if isinstance(parent, ast.AugAssign) and field == "value":  # `items += [m]` on a list extends the list
            return None if self._unfollowed_target(parent.target) is None and self._only_boxes(parent.target) \
                else "an operator"
        if isinstance(parent, (ast.Return, ast.Yield, ast.YieldFrom)):
            return self._unfollowed_exit(parent)
        return UNFOLLOWED.get(type(parent), "a place the check does not follow")

    def _unfollowed_target(self, target) -> str | None:
        if isinstance(target, ast.Name):
            return "a class body" if self.flow.key(target)[2].kind == "class" else None
        if isinstance(target, (ast.Tuple, ast.List)):
            return next(filter(None, map(self._unfollowed_target, target.elts)), None)
        if isinstance(target, ast.Starred):
            return self._unfollowed_target(target.value)
        if isinstance(target, ast.Subscript) and self._only_boxes(target.value):
            return None
        return "an attribute" if isinstance(target, ast.Attribute) else "an item of an object the check does not follow"

    def _unfollowed_exit(self, node) -> str | None:
        function = self.flow.enclosing.get(id(node))
        if function is None:
            return None
        if id(function) in self.flow.methods:
            return "the caller of a method (Python and libraries call methods where the check cannot see)"
        at_module = self.flow.scope_of.get(id(function)) is self.flow.module
        if getattr(function, "name", None) == "custom_kernel" and at_module:
            return "the runner"
        return None

    def _called(self, node) -> bool:
        parent, field = self.flow.parents.get(id(node), (None, None))
        return isinstance(parent, ast.Call) and field == "func"

    def _only_boxes(self, node) -> bool:
        return all(atom[0] == "box" for atom in self.flow.value(node))

    # -- objects the flow follows ------------------------------------------------------------------------------------
    def _check_object_attribute(self, node) -> None:
        """`x.attr` where x is no import: judged as the path for every library object x may be, and a private name
        on an object the library made (or that the check cannot trace) is the library's internals."""
        atoms = self.flow.value(node.value)
        paths = {f"{a[1]}.{node.attr}" for a in atoms if a[0] == "lib"}
        for atom in atoms:
            if atom[0] == "class":  # `M._apply` on a file's torch.nn.Module is torch.nn.Module._apply
                paths |= {step[1] for step in self.flow.inherited(atom[1], node.attr) if step[0] == "lib"}
        for path in sorted(paths):
            self._check_path(node, path)
            parts = path.split(".")
            if parts[:2] == ["torch", "Tensor"] and len(parts) > 2 and parts[2] in self.forbid_methods:
                self.fail(node, f"uses Tensor.{parts[2]} (as {path}), which this problem forbids")
        if self.in_jit or not node.attr.startswith("_") or node.attr.startswith("__"):
            return
        for atom in sorted(a for a in atoms if a[0] == "made" or a == UNKNOWN):
            if self._foreign_private(atom, node.attr):
                what = f"an object {atom[1]} made" if atom[0] == "made" else "a value the check cannot trace"
                self.fail(node, f"uses the private name {node.attr} on {what}: library internals are library calls "
                                f"by another name")
                return

    def _foreign_private(self, atom, attr: str) -> bool:
        """Whether a private name on this object may be the library's: always where the object's library class has
        it; otherwise unless the file itself stores or defines an attribute of that name."""
        if atom[0] == "made":
            chain = self.lib.resolve(atom[1])
            if chain and len(chain) == len(atom[1].split(".")) and isinstance(chain[-1], type):
                import inspect

                try:
                    inspect.getattr_static(chain[-1], attr)
                    return True
                except AttributeError:
                    pass
        return attr not in self.flow.file_attrs

    def _check_object_name(self, node) -> None:
        """A name that may hold a library object is judged as that object's path wherever it is read (inside a
        kernel, `h = torch.empty` is torch)."""
        for atom in sorted(a for a in self.flow.value(node) if a[0] == "lib"):
            self._check_path(node, atom[1])
