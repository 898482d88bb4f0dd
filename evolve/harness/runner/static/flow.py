"""What each expression of a candidate may refer to: the static check's reading of names, objects and calls.

An import alias is one name for one module; a candidate can also keep a library object in a local, a list, an
attribute, a default or a function's result, and reach the library through it (`m = torch.nn; m.functional.gelu`).
This pass gives every expression the set of things it may be, so that the check judges `m.functional.gelu` as
`torch.nn.functional.gelu`. The things (atoms):

    ("lib", path)   a library object named by a dotted path from an import: torch.nn, torch.Tensor, torch.float32
    ("made", path)  an object a library call made: torch.empty(...) is ("made", "torch.empty")
    ("def", id)     a function or lambda of the file: calling it gives what its returns may be
    ("class", id)   a class of the file: its attributes may come from its library bases
    ("box", id)     a list, tuple, set, dict, comprehension or generator of the file: its items are followed
    OWN             plain data, and what the file's own objects give (`kernel.warmup(...)`)
    UNKNOWN         what a caller the check cannot see hands in (a parameter), or what it cannot trace

The reading is flow-insensitive: names (per scope), attributes stored on any object (by attribute name), items,
parameters (from defaults and from the file's own calls) and returns are filled until nothing changes. It never
imports or runs anything. The check (check.py) decides what may be done with each atom.

Flow solves the tables (here: what each node adds to them); its reading of scopes, calls and values is in scopes.py,
calls.py and values.py, and the atoms themselves in atoms.py.
"""
from __future__ import annotations

import ast
from collections import defaultdict

from .atoms import COMPREHENSIONS, CONTAINERS, FUNCTIONS, LIBRARY_TOPS, OWN, UNKNOWN
from .calls import Calls
from .scopes import Scope, Scopes
from .values import Values

MAX_ROUNDS = 60
MAX_ATOMS = 200_000  # a file that makes the reading larger than this is not read to an end
# The file's dunder methods Python calls by itself, by the operation that calls them.
PROTOCOLS = {
    "call": ("__call__",),
    "attribute": ("__getattr__", "__getattribute__", "__get__"),
    "item": ("__getitem__", "__missing__", "__class_getitem__", "__next__", "__anext__"),
    "iterator": ("__iter__", "__aiter__", "__reversed__"),
    "enter": ("__enter__", "__aenter__"),
}
NOT_OPERATORS = frozenset({"__init__", "__post_init__", "__new__", "__init_subclass__", "__set_name__"}).union(
    *PROTOCOLS.values())


class Flow(Scopes, Calls, Values):
    """The sets of atoms of a module's expressions; `value(node)` after construction."""

    def __init__(self, tree: ast.Module, type_modules=(), library_step=None):
        self.type_modules = set(type_modules)
        # what `path.attr` is: ("lib", its path), ("made", path) past a plain object, None where a class lacks it
        self.library_step = library_step or (lambda path, attr, inherited=False: ("lib", f"{path}.{attr}"))
        self.parents: dict[int, tuple] = {}  # id(child) -> (parent, field)
        self.scope_of: dict[int, Scope] = {}  # id(Name or def node) -> the scope it is read or bound in
        self.exits: dict[int, list] = defaultdict(list)  # id(def) -> its Return, Yield and YieldFrom nodes
        self.enclosing: dict[int, ast.AST] = {}  # id(Return/Yield node) -> its function
        self.methods: set[int] = set()  # defs directly in a class body
        self.static: set[int] = set()  # of those, @staticmethod
        self.bound_first: set[int] = set()  # of those, @classmethod: the first parameter is bound however it is read
        self.class_body: dict[int, list] = defaultdict(list)  # id(class) -> its defs
        self.fields_declared: dict[int, set] = defaultdict(set)  # id(class) -> names annotated in its body
        self.file_attrs: set[str] = set()  # attribute names the file itself stores or defines in a class
        self.global_names: set[str] = set()
        self.nodes: list[ast.AST] = []
        self.names: dict[tuple, set] = defaultdict(set)
        self.fields: dict[str, set] = defaultdict(set)
        self.items: dict[int, set] = defaultdict(set)
        self.returns: dict[int, set] = defaultdict(set)
        self.bases: dict[int, set] = defaultdict(set)
        self.protocol: dict[str, frozenset] = defaultdict(frozenset)  # what the file's dunders give, by operation
        self.complete = True
        self._atoms = 0
        self._memo: dict[int, frozenset] = {}
        self._solved = False
        self.module = Scope(tree, "module", None)
        for node in ast.walk(tree):
            self.nodes.append(node)
            for field, value in ast.iter_fields(node):
                for child in value if isinstance(value, list) else [value]:
                    if isinstance(child, ast.AST):
                        self.parents[id(child)] = (node, field)
        self._known = {id(n) for n in self.nodes}
        self.definitions = {id(n): n for n in self.nodes if isinstance(n, FUNCTIONS)}
        self._scan(tree, self.module, None)
        self._solve()

    # -- the solution ------------------------------------------------------------------------------------------------
    def _solve(self) -> None:
        for _ in range(MAX_ROUNDS):
            self._memo, self._changed = {}, False
            self._protocols()
            for node in self.nodes:
                self._effects(node)
                if self._atoms > MAX_ATOMS:
                    self.complete = False
                    break
            if not self._changed or not self.complete:
                break
        else:
            self.complete = False
        self._memo, self._solved = {}, True

    def _protocols(self) -> None:
        """What each operation on the file's objects may give through the file's own dunder methods."""
        dunders = [d for c in self.class_body.values() for d in c if d.name.startswith("__")]
        given = defaultdict(set)
        for method in dunders:
            kind = next((k for k, names in PROTOCOLS.items() if method.name in names), None)
            if kind is None and method.name not in NOT_OPERATORS:
                kind = "operator"
            given[kind] |= self.returns[id(method)]
        for atom in given.pop("iterator", set()):  # what an iterator the file returns yields
            given["item"] |= self.items.get(atom[1], set()) if atom[0] == "box" else {atom}
        given.pop(None, None)
        self.protocol = defaultdict(frozenset, {k: frozenset(v) for k, v in given.items()})

    def _add(self, table, key, atoms) -> None:
        before = len(table[key])
        table[key] |= atoms
        grown = len(table[key]) - before
        self._changed |= grown > 0
        self._atoms += grown

    def _effects(self, node) -> None:
        """What one node adds to the tables: its bindings, a container's items, a call's parameters."""
        if isinstance(node, ast.Assign):
            for target in node.targets:
                self.assign(target, self.value(node.value))
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            self.assign(node.target, self.value(node.value))
        elif isinstance(node, ast.AugAssign):
            self._aug_assign(node)
        elif isinstance(node, ast.NamedExpr):
            self.assign(node.target, self.value(node.value))
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            self.assign(node.target, self.items_of(self.value(node.iter)))
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            self.assign(node.optional_vars, self.entered(self.value(node.context_expr)))
        elif isinstance(node, FUNCTIONS):
            self._function_effects(node)
        elif isinstance(node, ast.ClassDef):
            self._add(self.bases, id(node), frozenset().union(*(self.value(b) for b in node.bases)))
            self._bind_definition(node, {("class", id(node))})
        elif isinstance(node, ast.Call):
            self._call_effects(node)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            self._import_effects(node)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            self._add(self.names, self._scope_key(node, node.name), {UNKNOWN})
        elif isinstance(node, ast.Match):
            self._match_effects(node)
        elif isinstance(node, CONTAINERS):
            self._add(self.items, id(node), self._container_items(node))

    def assign(self, target, atoms) -> None:
        """Bind `atoms` to a target: a name, an unpacking, an attribute (by name, on any object) or an item."""
        atoms = frozenset(atoms)
        if isinstance(target, ast.Name):
            key = self.key(target)
            self._add(self.names, key[:2], atoms)
            if key[2].kind == "class":
                self._add(self.fields, target.id, atoms)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:  # a starred element takes a list of the items, the others an item each
                self.assign(element, atoms if isinstance(element, ast.Starred) else self.items_of(atoms))
        elif isinstance(target, ast.Starred):
            self._add(self.items, id(target), self.items_of(atoms))
            self.assign(target.value, {("box", id(target))})
        elif isinstance(target, ast.Attribute):
            self._add(self.fields, target.attr, atoms)
        elif isinstance(target, ast.Subscript):
            for atom in self.value(target.value):
                if atom[0] == "box":
                    self._add(self.items, atom[1], atoms | self.value(target.slice))

    def _aug_assign(self, node: ast.AugAssign) -> None:
        current, added = self.value(node.target), self.value(node.value)
        for atom in current:
            if atom[0] == "box":  # `items += [...]` extends the list in place
                self._add(self.items, atom[1], self.items_of(added))
        self.assign(node.target, self._combined(current | added))

    def _function_effects(self, node) -> None:
        args = node.args
        positional = args.posonlyargs + args.args
        for param, default in zip(positional[len(positional) - len(args.defaults):], args.defaults):
            self._add(self.names, (id(node), param.arg), self.value(default))
        for param, default in zip(args.kwonlyargs, args.kw_defaults):
            if default is not None:
                self._add(self.names, (id(node), param.arg), self.value(default))
        for param in positional + args.kwonlyargs:  # the runner, Triton or a library may call it with anything
            self._add(self.names, (id(node), param.arg), {UNKNOWN})
        for rest in (args.vararg, args.kwarg):
            if rest is not None:
                self._add(self.items, id(rest), {UNKNOWN})
                self._add(self.names, (id(node), rest.arg), {("box", id(rest))})
        if isinstance(node, ast.Lambda):  # its body is its return (or, with a yield in it, what it yields too)
            self._add(self.returns, id(node), self._exit_values(node, self.value(node.body)))
            return
        self._add(self.returns, id(node), self._exit_values(node))
        self._bind_definition(node, {("def", id(node))})

    def _exit_values(self, node, body=frozenset()) -> frozenset:
        exits = self.exits.get(id(node), [])
        values = set(body)
        for exit_ in exits:
            if isinstance(exit_, ast.YieldFrom):
                values |= self.items_of(self.value(exit_.value))
            elif exit_.value is not None:
                values |= self.value(exit_.value)
        values.add(OWN)  # None, when it falls off the end
        if any(isinstance(e, (ast.Yield, ast.YieldFrom)) for e in exits):  # a generator: its items are what it yields
            self._add(self.items, id(node), values)
            return frozenset({("box", id(node))})
        return frozenset(values)

    def _bind_definition(self, node, atoms) -> None:
        """A def or class name: the definition itself, and what its decorators make of it (a library's decorator
        from torch or triton keeps the file's function the file's: `kernel.warmup(...)` is the file's kernel)."""
        atoms = set(atoms)
        for decorator in reversed(node.decorator_list):
            made = self.apply(self.value(decorator), frozenset(atoms))
            atoms |= {a for a in made if not (a[0] == "made" and a[1].split(".")[0] in LIBRARY_TOPS)}
        key = self._scope_key(node, node.name)
        self._add(self.names, key, atoms)
        if self._owner(self.scope_of.get(id(node), self.module), node.name).kind == "class":
            self._add(self.fields, node.name, atoms)

    def _import_effects(self, node) -> None:
        for alias in node.names:
            if alias.name == "*":
                continue
            if isinstance(node, ast.Import):
                target = alias.name if alias.asname else alias.name.split(".")[0]
                atoms = {("lib", target)}
            elif node.level or node.module is None:
                atoms = {UNKNOWN}
            elif node.module in self.type_modules:
                atoms = {OWN}
            else:
                atoms = {("lib", f"{node.module}.{alias.name}")}
            self._add(self.names, self._scope_key(node, (alias.asname or alias.name).split(".")[0]), atoms)

    def _match_effects(self, node: ast.Match) -> None:
        subject = self.value(node.subject)
        for case in node.cases:
            atoms = set(subject) | self.items_of(subject) | {UNKNOWN}
            for child in ast.walk(case.pattern):
                if isinstance(child, ast.MatchClass):
                    for attr in child.kwd_attrs:
                        atoms |= self.attribute(subject, attr)
            for child in ast.walk(case.pattern):
                name = getattr(child, "name", None) or getattr(child, "rest", None)
                if isinstance(name, str):
                    self._add(self.names, self._scope_key(child, name), atoms)

    def _container_items(self, node) -> set:
        if isinstance(node, ast.Dict):
            out = set()
            for key, value in zip(node.keys, node.values):
                out |= self.value(value) if key is not None else self.items_of(self.value(value))
                out |= self.value(key) if key is not None else set()
            return out
        if isinstance(node, ast.DictComp):
            return set(self.value(node.key) | self.value(node.value))
        if isinstance(node, COMPREHENSIONS):
            return set(self.value(node.elt))
        out = set()
        for element in node.elts:
            out |= self.items_of(self.value(element.value)) if isinstance(element, ast.Starred) else self.value(element)
        return out
