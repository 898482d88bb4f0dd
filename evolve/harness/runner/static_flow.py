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
imports or runs anything. The check (static_check.py) decides what may be done with each atom.
"""
from __future__ import annotations

import ast
import builtins
from collections import defaultdict

OWN = ("own",)
UNKNOWN = ("unknown",)
# Calls into these libraries make objects of their own (tensors, configs); a call into the standard library (max,
# functools.reduce, contextlib.nullcontext) may hand one of its arguments back.
LIBRARY_TOPS = ("torch", "triton")
MAX_ROUNDS = 60
MAX_PATH_PARTS = 24
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
COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
CONTAINERS = (ast.List, ast.Tuple, ast.Set, ast.Dict) + COMPREHENSIONS


class _Scope:
    def __init__(self, node, kind: str, parent):
        self.node, self.kind, self.parent = node, kind, parent
        self.bound: set[str] = set()
        self.globals: set[str] = set()
        self.nonlocals: set[str] = set()


def _parameters(args: ast.arguments) -> list[ast.arg]:
    return args.posonlyargs + args.args + args.kwonlyargs + [a for a in (args.vararg, args.kwarg) if a]


class Flow:
    """The sets of atoms of a module's expressions; `value(node)` after construction."""

    def __init__(self, tree: ast.Module, type_modules=(), library_step=None):
        self.type_modules = set(type_modules)
        # what `path.attr` is: ("lib", its path), ("made", path) past a plain object, None where a class lacks it
        self.library_step = library_step or (lambda path, attr, inherited=False: ("lib", f"{path}.{attr}"))
        self.parents: dict[int, tuple] = {}  # id(child) -> (parent, field)
        self.scope_of: dict[int, _Scope] = {}  # id(Name or def node) -> the scope it is read or bound in
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
        self.module = _Scope(tree, "module", None)
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

    # -- scopes ------------------------------------------------------------------------------------------------------
    def _scan(self, node, scope: _Scope, function) -> None:
        """Record which scope binds each name and where each function's exits are (Python's own scoping rules)."""
        if isinstance(node, FUNCTIONS):
            self._scan_function(node, scope)
            return
        if isinstance(node, ast.ClassDef):
            self._bind(scope, node.name, node)
            for child in node.decorator_list + node.bases + [k.value for k in node.keywords]:
                self._scan(child, scope, function)
            inner = _Scope(node, "class", scope)
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

    def _scan_function(self, node, scope: _Scope) -> None:
        args = node.args
        host = list(args.defaults) + [d for d in args.kw_defaults if d is not None]
        host += [a.annotation for a in _parameters(args) if a.annotation is not None]
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
        inner = _Scope(node, "function", scope)
        inner.bound.update(a.arg for a in _parameters(args))
        for child in node.body if isinstance(node.body, list) else [node.body]:
            self._scan(child, inner, node)

    def _scan_comprehension(self, node, scope: _Scope, function) -> None:
        generators = node.generators
        self._scan(generators[0].iter, scope, function)  # the first iterable is read in the enclosing scope
        inner = _Scope(node, "comprehension", scope)
        for index, generator in enumerate(generators):
            self._scan(generator.target, inner, function)
            if index:
                self._scan(generator.iter, inner, function)
            for condition in generator.ifs:
                self._scan(condition, inner, function)
        for child in (node.key, node.value) if isinstance(node, ast.DictComp) else (node.elt,):
            self._scan(child, inner, function)

    def _scan_name(self, node: ast.Name, scope: _Scope) -> None:
        if isinstance(node.ctx, ast.Load):
            self.scope_of[id(node)] = scope
            return
        parent = self.parents.get(id(node), (None, None))[0]
        while isinstance(parent, ast.NamedExpr) and scope.kind == "comprehension":  # PEP 572: the enclosing scope
            scope = scope.parent
        self._bind(scope, node.id, node)

    def _bind(self, scope: _Scope, name: str, node) -> None:
        scope.bound.add(name)
        if name in scope.globals:
            self.module.bound.add(name)
        self.scope_of.setdefault(id(node), scope)

    def _owner(self, scope: _Scope, name: str) -> _Scope:
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

    def _scope_key(self, node, name: str):
        """The table key for a name bound by a statement (a def, class, import, handler or pattern) where it stands."""
        owner = self._owner(self.scope_of.get(id(node), self.module), name)
        return id(owner.node), name

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

    # -- calls -------------------------------------------------------------------------------------------------------
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

    # -- values ------------------------------------------------------------------------------------------------------
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
