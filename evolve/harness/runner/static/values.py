"""Values in the static check's reading (flow.py): the atoms an expression may be, through names, attributes, items and
operators, and the library paths a value may lead to."""
from __future__ import annotations

import ast
import builtins

from .atoms import CONTAINERS, OWN, UNKNOWN

MAX_PATH_PARTS = 24


class Values:
    """Flow's reading of values: `value(node)`, and what an attribute, an item or a `with` gives."""

    def value(self, node) -> frozenset:
        """The atoms an expression may be."""
        key = id(node)
        cached = key in self._known
        if cached and key in self._memo:
            return self._memo[key]
        if cached:
            self._memo[key] = frozenset()  # a cycle reads nothing more this round
        out = frozenset(self._value(node))
        if cached:
            self._memo[key] = out
        return out

    def _value(self, node):
        if isinstance(node, ast.Name):
            return self._name_value(node)
        if isinstance(node, ast.Attribute):
            return self.attribute(self.value(node.value), node.attr)
        if isinstance(node, ast.Call):
            return self._call_value(node)
        if isinstance(node, ast.Subscript):
            return self.items_of(self.value(node.value))
        if isinstance(node, CONTAINERS):
            return {("box", id(node))}
        if isinstance(node, ast.Lambda):
            return {("def", id(node))}
        if isinstance(node, ast.IfExp):
            return self.value(node.body) | self.value(node.orelse)
        if isinstance(node, ast.BoolOp):
            return frozenset().union(*(self.value(v) for v in node.values))
        if isinstance(node, (ast.NamedExpr, ast.Starred, ast.Await)):
            return self.value(node.value)
        if isinstance(node, ast.BinOp):
            return self._combined(self.value(node.left) | self.value(node.right))
        if isinstance(node, ast.UnaryOp):
            return self._combined(self.value(node.operand))
        if isinstance(node, ast.Compare):
            return self._combined(frozenset().union(self.value(node.left), *(self.value(c) for c in node.comparators)))
        if isinstance(node, (ast.Constant, ast.JoinedStr, ast.FormattedValue, ast.Slice)):
            return {OWN}
        return {UNKNOWN}

    def _name_value(self, node: ast.Name):
        owner_id, name, owner = self.key(node)
        atoms = self.names.get((owner_id, name))
        if atoms:
            return atoms
        if owner is self.module and name not in self.module.bound and name not in self.global_names:
            if name in ("__name__", "__file__", "__doc__", "__annotations__"):
                return {OWN}
            return {("made", f"builtins.{name}")} if hasattr(builtins, name) else {UNKNOWN}
        return {UNKNOWN} if self._solved else set()  # bound in a way no table followed: nothing is assumed

    def _call_value(self, node: ast.Call):
        func = node.func
        if (isinstance(func, ast.Name) and func.id == "getattr" and self._is_builtin(func) and len(node.args) >= 2
                and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)):
            found = self.attribute(self.value(node.args[0]), node.args[1].value)
            return found | (self.value(node.args[2]) if len(node.args) > 2 else frozenset())
        return self.apply(self.value(func), self.arguments(node))

    def _is_builtin(self, node: ast.Name) -> bool:
        return self.key(node)[2] is self.module and node.id not in self.module.bound

    def attribute(self, atoms, attr: str) -> set:
        """What `x.attr` may be: a library path grows; the file's objects give what the file stored under that name
        on any object (and what a getter of that name returns)."""
        out, foreign = set(), False
        for atom in atoms:
            kind = atom[0]
            if kind == "lib":
                step = self.library_step(atom[1], attr) or ("made", atom[1])
                if step[1].count(".") >= MAX_PATH_PARTS:  # a chain that grows in a loop: the reading cannot end
                    self.complete = False
                    step = UNKNOWN
                out.add(step)
                continue
            foreign = True
            if kind in ("made", "box"):
                out.add(atom)
            elif kind == "class":
                out |= {OWN} | self.inherited(atom[1], attr)
            else:
                out.add(UNKNOWN if atom == UNKNOWN else OWN)
        if foreign:
            stored = self.fields.get(attr, set())
            out |= stored
            for atom in stored:
                if atom[0] == "def":
                    out |= self.returns.get(atom[1], set())
            out |= self.protocol["attribute"]
        return out

    def inherited(self, class_id: int, attr: str) -> set:
        """What a file's class may inherit under this name from its library bases (where a base has it)."""
        steps = (self.library_step(base, attr, True) for base in self.library_bases(class_id))
        return {step for step in steps if step is not None}

    def items_of(self, atoms) -> set:
        """What iterating or indexing may give."""
        out = set()
        for atom in atoms:
            kind = atom[0]
            if kind == "box":
                out |= self.items.get(atom[1], set())
            elif kind in ("lib", "made"):
                out.add(("made", atom[1]))
            else:
                out |= {UNKNOWN if atom == UNKNOWN else OWN} | self.protocol["item"]
        return out

    def entered(self, atoms) -> set:
        """What `with x as y` may bind: x itself (many context managers return themselves), or what it made."""
        made = {("made", a[1]) for a in atoms if a[0] == "lib"}
        return set(atoms) | self.items_of(atoms) | made | self.protocol["enter"]

    def _combined(self, atoms) -> frozenset:
        """An operator's result: a list stays the list; a library object gives an object it made."""
        out = set()
        for atom in atoms:
            if atom[0] in ("lib", "made"):
                out.add(("made", atom[1]))
            elif atom[0] == "box" or atom == UNKNOWN:
                out.add(atom)
            else:
                out.add(OWN)
        if any(a[0] in ("own", "unknown", "box") for a in out):  # the file's own dunder methods may run
            out |= self.protocol["operator"]
        return frozenset(out)

    # -- what the check asks -----------------------------------------------------------------------------------------
    def library_paths(self, atoms) -> set:
        """Every library path a value may hold or lead to: itself, a container's items, a function's returns."""
        seen, stack, out = set(), list(atoms), set()
        while stack:
            atom = stack.pop()
            if atom in seen:
                continue
            seen.add(atom)
            if atom[0] == "lib":
                out.add(atom[1])
            elif atom[0] == "box":
                stack.extend(self.items.get(atom[1], ()))
            elif atom[0] == "def":
                stack.extend(self.returns.get(atom[1], ()))
        return out
