"""Calls in the static check's reading (flow.py): a call of the file's own function binds its arguments to the
parameters, and what calling something may give."""
from __future__ import annotations

import ast

from .atoms import LIBRARY_TOPS, OWN, UNKNOWN


class Calls:
    """Flow's reading of calls: arguments to parameters, and what a call gives."""

    def _call_effects(self, node: ast.Call) -> None:
        """A call of the file's own function binds its arguments to the parameters; a call of a container's method
        (`items.append(x)`, `table.update(...)`) puts its arguments among the items."""
        via = self.value(node.func.value) if isinstance(node.func, ast.Attribute) else None
        for atom in self.value(node.func):
            if atom[0] == "def" and atom[1] in self.definitions:
                self._bind_arguments(node, self.definitions[atom[1]], via)
            elif atom[0] == "class":
                self._construct(node, atom[1], set())
            elif atom[0] == "box":
                arguments = self.arguments(node)
                self._add(self.items, atom[1], arguments | self.items_of(arguments))

    def _construct(self, node: ast.Call, class_id: int, seen: set) -> None:
        if class_id in seen:
            return
        seen.add(class_id)
        instance = frozenset(self.instance(class_id))
        for method in self.class_body.get(class_id, []):
            if method.name in ("__init__", "__new__", "__post_init__"):
                self._bind_arguments(node, method, instance, constructed=True)
        arguments = self.arguments(node)
        for name in self.fields_declared.get(class_id, ()):  # a dataclass or NamedTuple stores its arguments
            self._add(self.fields, name, arguments)
        for base in self.bases.get(class_id, ()):
            if base[0] == "class":
                self._construct(node, base[1], seen)

    def _bind_arguments(self, node: ast.Call, definition, via, constructed: bool = False) -> None:
        """Arguments to parameters by position and keyword; a bound method's first parameter is its object."""
        positional = definition.args.posonlyargs + definition.args.args
        offsets = {0}
        if constructed or (via is not None and id(definition) in self.bound_first):
            offsets = {1}
        elif via is not None and id(definition) in self.methods and id(definition) not in self.static:
            # looked up on an instance it is bound; looked up on the class it is a plain function
            offsets = {1 for a in via if a[0] != "class"} | {0 for a in via if a[0] == "class"}
        if 1 in offsets and positional:
            self._add(self.names, (id(definition), positional[0].arg), via)
        for offset in offsets:
            self._bind_positional(node, definition, positional, offset)
        self._bind_keywords(node, definition, positional)

    def _bind_positional(self, node, definition, positional, offset: int) -> None:
        index, loose = offset, False
        rest = definition.args.vararg
        for arg in node.args:
            if isinstance(arg, ast.Starred):
                loose = True
                atoms = self.items_of(self.value(arg.value))
            else:
                atoms = self.value(arg)
            if loose:  # after *args the positions are not known: any later parameter may get it
                for param in positional[index:]:
                    self._add(self.names, (id(definition), param.arg), atoms)
                if rest is not None:
                    self._add(self.items, id(rest), atoms)
            elif index < len(positional):
                self._add(self.names, (id(definition), positional[index].arg), atoms)
                index += 1
            elif rest is not None:
                self._add(self.items, id(rest), atoms)

    def _bind_keywords(self, node, definition, positional) -> None:
        named = {p.arg: p for p in positional + definition.args.kwonlyargs}
        rest = definition.args.kwarg
        for keyword in node.keywords:
            atoms = self.value(keyword.value)
            if keyword.arg is None:  # **mapping: any parameter may get any of its items
                atoms = atoms | self.items_of(atoms)
                targets = list(named)
            else:
                targets = [keyword.arg] if keyword.arg in named else []
            for name in targets:
                self._add(self.names, (id(definition), name), atoms)
            if rest is not None and (keyword.arg is None or keyword.arg not in named):
                self._add(self.items, id(rest), atoms)

    def arguments(self, node: ast.Call) -> frozenset:
        out = set()
        for arg in node.args:
            atoms = self.value(arg.value if isinstance(arg, ast.Starred) else arg)
            out |= atoms | (self.items_of(atoms) if isinstance(arg, ast.Starred) else set())
        for keyword in node.keywords:
            atoms = self.value(keyword.value)
            out |= atoms | (self.items_of(atoms) if keyword.arg is None else set())
        return frozenset(out)

    def apply(self, callee, arguments) -> set:
        """What calling something may give."""
        out = set()
        for atom in callee:
            kind = atom[0]
            if kind in ("lib", "made"):
                out.add(("made", atom[1]))
                if atom[1].split(".")[0] not in LIBRARY_TOPS:
                    out |= arguments
            elif kind == "def":
                out |= self.returns.get(atom[1], set())
            elif kind == "class":
                out |= self.instance(atom[1])
            elif kind == "box":
                out |= {atom} | self.items.get(atom[1], set())
            elif atom == OWN:  # the file's object: a kernel launcher, a warmup, a method the flow does not name
                out |= {OWN} | self.protocol["call"]
            else:  # what the check cannot trace gives what it cannot trace
                out |= {UNKNOWN} | self.protocol["call"]
        return out

    def instance(self, class_id: int) -> set:
        return {OWN} | {("made", path) for path in self.library_bases(class_id)}

    def library_bases(self, class_id: int, seen=None) -> set:
        seen = set() if seen is None else seen
        if class_id in seen:
            return set()
        seen.add(class_id)
        out = set()
        for base in self.bases.get(class_id, ()):
            if base[0] == "lib":
                out.add(base[1])
            elif base[0] == "class":
                out |= self.library_bases(base[1], seen)
        return out
