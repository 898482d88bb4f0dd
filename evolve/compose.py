"""Shape-dispatch composition: one candidate built from the archive's verified kernels, each used where it is fastest.

Fitness is a geometric mean over the benchmark cases, and the archive's correct kernels rarely share their best
cases: one wins on short rows, another on long rows, a third in bf16. From the per-case times the archive already
holds, `plan` learns a small decision tree over what a call's inputs look like (each tensor's sizes and dtype, plain
values), with thresholds halfway (geometrically) between the benchmark values on either side of a split, so a shape
between or beyond the benchmark shapes is routed by the same rule and no benchmark shape is looked up exactly. A
rule is kept only where it gains more than the timing noise floor, each of its regimes paying for itself. Each leaf
names the kernel with the best geometric mean over the cases that reach it.

The composite is one Python file: every drawn kernel's source, its module-level names made unique with a suffix
(`_c12` for candidate 12) and otherwise unchanged, its imports hoisted and shared, then a `custom_kernel` that
dispatches. It is an ordinary candidate: the harness runs it through the whole ladder, so a mistake here costs one
evaluation, never a wrong verdict. The archive records it with proposer "composer" and every kernel it drew from as
its parents.
"""
from __future__ import annotations

import ast
import math
import re
import symtable
from dataclasses import dataclass

import numpy as np

COMPOSER = "composer"
MAX_DEPTH = 3  # at most 8 regimes: a composite stays a file a person (or a model) can read
MIN_GAIN = 0.02  # a rule must raise the predicted geometric mean by this much (the search's noise floor)
# ...or this much where the search holds less than the best alone (and MIN_GAIN over what it holds): populations of
# 40 kernels alike but for 2% noise a case gave no rule in 40 at 1.5%, 8 at 1%
HELD_MIN_GAIN = 0.015
REGIME_GAIN = math.log(1.12)  # a regime's kernel must beat the best alone there by 12% on one case, 6% on two each...
SPLIT_COST = 1e-6  # of two rules as good, the one with fewer splits
EXPECT_LINE = re.compile(r"(?m)^# expect:.*\n")
MAX_RULES = 2000  # sets of cases the search over every rule may weigh (layernorm's 12 cases: about 100)


class ComposeError(ValueError):
    """A source cannot be merged into a composite (the message says why); the kernel is left out, nothing else."""


# --- what the archive knows -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Part:
    """One verified kernel: its per-case figures. `value` is what the search ranks per case (the fraction of
    roofline on a GPU, 1 / interpreter ms on the CPU); higher is better."""

    id: int
    source: str
    value: dict  # case label -> per-case figure


@dataclass(frozen=True)
class Case:
    label: str
    features: dict  # feature -> value (see _features)


def case_value(row: dict, gpu: bool) -> float | None:
    if gpu:
        fraction = row.get("roofline_fraction")
        return float(fraction) if isinstance(fraction, (int, float)) and fraction > 0 else None
    ms = row.get("ms")
    return 1.0 / float(ms) if isinstance(ms, (int, float)) and ms > 0 else None


def _features(inputs: list) -> dict:
    """("size", i, d): dimension d of input i; ("dtype", i): its dtype; ("value", i): a plain input."""
    out = {}
    for i, leaf in enumerate(inputs):
        if "shape" in leaf:
            out[("dtype", i)] = leaf["dtype"]
            for d, n in enumerate(leaf["shape"]):
                out[("size", i, d)] = int(n)
        elif "value" in leaf and isinstance(leaf["value"], (bool, int, float, str)):
            out[("value", i)] = leaf["value"]
    return out


# --- the rule: a small decision tree ----------------------------------------------------------------------------

@dataclass(frozen=True)
class Leaf:
    part: int  # candidate id


@dataclass(frozen=True)
class Split:
    feature: tuple
    test: object  # a threshold (numbers: feature <= test goes left) or a category (feature == test goes left)
    left: "Leaf | Split"
    right: "Leaf | Split"


def _numeric(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _best_leaf(labels, costs: "Costs") -> tuple[float, int]:
    """(summed -log(value), id) of the kernel best over these cases; ties go to the lower id (the older kernel), so
    the same data always gives the same rule."""
    sums = costs.table[:, [costs.column[label] for label in labels]].sum(axis=1)
    best = int(np.argmin(sums))  # the rows are in id order: the first of equal sums has the lowest id
    return float(sums[best]), costs.ids[best]


def _threshold(low, high):
    """A cut between two benchmark values: their geometric mean for positive sizes (shapes grow by factors), the
    arithmetic one otherwise; an integer for integers."""
    cut = math.sqrt(low * high) if low > 0 and high > 0 else (low + high) / 2
    if isinstance(low, int) and isinstance(high, int):
        cut = max(low, min(high - 1, math.floor(cut)))
    return cut


def _splits(cases: list[Case]):
    """(feature, test, margin): every cut between adjacent benchmark values, every category; the margin (how far
    apart the values on either side are, as a log ratio) breaks ties towards the cut that separates the most."""
    features = set.intersection(*(set(c.features) for c in cases))
    for feature in sorted(features, key=repr):
        values = {c.features[feature] for c in cases}
        if len(values) < 2:
            continue
        if all(_numeric(v) and math.isfinite(v) for v in values):
            ordered = sorted(values)
            for low, high in zip(ordered, ordered[1:]):
                margin = math.log(high / low) if low > 0 else (high - low) / max(abs(high), abs(low), 1)
                yield feature, _threshold(low, high), margin
        elif all(isinstance(v, (str, bool)) for v in values):
            for value in sorted(values, key=repr):
                yield feature, value, math.inf


def _goes_left(case: Case, feature, test) -> bool:
    value = case.features[feature]
    return value <= test if _numeric(value) and _numeric(test) else value == test


def learn(cases: list[Case], parts: dict[int, Part], depth: int = MAX_DEPTH, held: float | None = None):
    """The tree for these cases: of every rule up to `depth` splits deep over the benchmark cuts, the one with the
    lowest summed -log(value), where a leaf given any kernel but the best alone pays REGIME_GAIN (a regime must be
    worth it, more than the best of many kernels' timing noise on a few cases); the best kernel alone unless that
    rule raises the geometric mean over every case by more than MIN_GAIN over the best alone; or, where `held` (the
    figure the search holds) is lower, by MIN_GAIN over that and HELD_MIN_GAIN over the best alone: a best alone
    within the noise of the held kernel is not the search's best, and a rule that adds a regime to it may be.
    (Chosen split by split, each split held to MIN_GAIN of the geometric mean, no rule reached a regime of one case
    that takes two or three cuts to isolate.)"""
    costs = _undominated(cases, parts)
    leaf_loss, pid = _best_leaf([c.label for c in cases], costs)
    held_loss = -len(cases) * math.log(held) if held and held > 0 else -math.inf
    for levels in range(depth, -1, -1):  # many cases and shapes: a shallower search (one leaf always fits)
        try:
            tree, loss, _ = _cheapest(tuple(cases), costs, levels, costs.ids.index(pid), {})
            break
        except _TooMany:
            continue
    n = len(cases)
    if held_loss > leaf_loss:
        worth = held_loss - loss > n * math.log1p(MIN_GAIN) and leaf_loss - loss > n * math.log1p(HELD_MIN_GAIN)
    else:
        worth = leaf_loss - loss > n * math.log1p(MIN_GAIN)
    if not worth:
        return Leaf(pid), leaf_loss
    return tree, loss


class _TooMany(Exception):
    """The search over every rule would weigh more than MAX_RULES sets of cases."""


@dataclass(frozen=True)
class Costs:
    """-log(value) of each kernel (a row, in id order) on each case (a column)."""
    ids: list
    column: dict
    table: object  # numpy array


def _undominated(cases: list[Case], parts: dict[int, Part]) -> Costs:
    """The costs of the parts that no other part matches or beats on every case (a dominated one is never the best
    over any set of cases); of parts with equal figures, the lowest id."""
    labels = [c.label for c in cases]
    ids = sorted(parts)
    table = -np.log(np.array([[parts[pid].value[label] for label in labels] for pid in ids], dtype=float))
    kept: list[int] = []
    for row in np.lexsort((ids, table.sum(axis=1))):  # a part that dominates this one comes before it
        if not kept or not (table[kept] <= table[row]).all(axis=1).any():
            kept.append(int(row))
    kept.sort()
    return Costs([ids[row] for row in kept], {label: i for i, label in enumerate(labels)}, table[kept])


def _cheapest(cases: tuple, costs: Costs, depth: int, default: int, memo: dict):
    """(tree, summed -log(value), that plus what its leaves and splits pay): the cheapest rule for these cases, where
    a leaf of a kernel other than the one in row `default` pays REGIME_GAIN and a split SPLIT_COST; memoized by the
    cases it covers (different cuts often separate the same cases)."""
    key = (frozenset(c.label for c in cases), depth)
    if key not in memo:
        if len(memo) >= MAX_RULES:
            raise _TooMany
        labels = [c.label for c in cases]  # in the cases' order: sums added alike in every run
        loss, pid = _best_leaf(labels, costs)
        stay = float(costs.table[default, [costs.column[label] for label in labels]].sum())
        best = ((Leaf(pid), loss, loss + REGIME_GAIN) if loss + REGIME_GAIN < stay else
                (Leaf(costs.ids[default]), stay, stay))
        best_margin = None
        for feature, test, margin in (_splits(list(cases)) if depth > 0 and len(cases) > 1 else ()):
            left = tuple(c for c in cases if _goes_left(c, feature, test))
            right = tuple(c for c in cases if not _goes_left(c, feature, test))
            if not left or not right:
                continue
            left_tree, left_loss, left_cost = _cheapest(left, costs, depth - 1, default, memo)
            right_tree, right_loss, right_cost = _cheapest(right, costs, depth - 1, default, memo)
            cost = left_cost + right_cost + SPLIT_COST
            # a split must cost less than no split; among splits, ties go to the cut that separates most
            if cost < best[2] - 1e-9 or (best_margin is not None and cost < best[2] + 1e-9 and margin > best_margin):
                best, best_margin = (Split(feature, test, left_tree, right_tree), left_loss + right_loss, cost), margin
        memo[key] = best
    return memo[key]


def route(tree, case: Case) -> int:
    while isinstance(tree, Split):
        tree = tree.left if _goes_left(case, tree.feature, tree.test) else tree.right
    return tree.part


def leaves(tree) -> list[int]:
    if isinstance(tree, Leaf):
        return [tree.part]
    return leaves(tree.left) + [p for p in leaves(tree.right) if p not in leaves(tree.left)]


# --- merging sources --------------------------------------------------------------------------------------------

_SCOPE_NAMES = {ast.Lambda: "lambda", ast.ListComp: "listcomp", ast.SetComp: "setcomp", ast.DictComp: "dictcomp",
                ast.GeneratorExp: "genexpr"}


class _Renamer:
    """Finds every place a module-level name of one source is bound or read (scopes resolved by Python's own
    symtable), so that it can be suffixed in the text and, for the self-check, in the tree."""

    def __init__(self, source: str, rename: set[str], suffix: str):
        self.source, self.rename, self.suffix = source, rename, suffix
        self.edits: list[tuple[int, int, int, str]] = []  # (line, byte start, byte end, new text)
        self.lines = source.splitlines(keepends=True)

    def new(self, name: str) -> str:
        return name + self.suffix

    def _refers_to_module(self, name: str, table) -> bool:
        if name not in self.rename:
            return False
        if table.get_type() == "module":
            return True
        try:
            return table.lookup(name).is_global()
        except KeyError:  # not recorded in this scope (e.g. an annotation under postponed evaluation): the module's
            return True

    def _child(self, table, node):
        name = node.name if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) \
            else _SCOPE_NAMES[type(node)]
        for child in table.get_children():
            if child.get_name() == name and child.get_lineno() == node.lineno and child.get_id() not in self.used:
                self.used.add(child.get_id())
                return child
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            return table  # Python 3.12+ inlines comprehensions into the enclosing scope (PEP 709)
        raise ComposeError(f"line {node.lineno}: cannot resolve the scope of {name}")

    def run(self, tree: ast.Module, table) -> None:
        self.used: set[int] = set()
        self.tables = {}
        self._visit_body(tree.body, table)

    def _visit_body(self, nodes, table):
        for node in nodes:
            self._visit(node, table)

    def _def_name(self, node, table):
        if not self._refers_to_module(node.name, table):
            return
        line = self.lines[node.lineno - 1]
        raw = line.encode()
        start = len(raw[:node.col_offset].decode(errors="replace"))
        match = re.compile(r"(async\s+def|def|class)\s+(" + re.escape(node.name) + r")\b").search(line, start)
        if match is None:
            raise ComposeError(f"line {node.lineno}: cannot find the name {node.name}")
        self._edit(node.lineno, match.start(2), match.end(2))
        node.name = self.new(node.name)

    def _edit(self, lineno: int, start_char: int, end_char: int) -> None:
        self.edits.append((lineno, start_char, end_char, self.new(self.lines[lineno - 1][start_char:end_char])))

    def _visit(self, node, table):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            inner = self._child(table, node)
            for d in getattr(node, "decorator_list", []):
                self._visit(d, table)
            args = node.args
            for d in list(args.defaults) + [d for d in args.kw_defaults if d is not None]:
                self._visit(d, table)
            if not isinstance(node, ast.Lambda):
                for a in args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg]:
                    if a is not None and a.annotation is not None:
                        self._visit(a.annotation, table)
                if node.returns is not None:
                    self._visit(node.returns, table)
                self._def_name(node, table)
                self._visit_body(node.body, inner)
            else:
                self._visit(node.body, inner)
            return
        if isinstance(node, ast.ClassDef):
            inner = self._child(table, node)
            for d in node.decorator_list + node.bases + [k.value for k in node.keywords]:
                self._visit(d, table)
            self._def_name(node, table)
            self._visit_body(node.body, inner)
            return
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            inner = self._child(table, node)
            self._visit(node.generators[0].iter, table)  # evaluated in the enclosing scope
            for i, gen in enumerate(node.generators):
                self._visit(gen.target, inner)
                if i:
                    self._visit(gen.iter, inner)
                for cond in gen.ifs:
                    self._visit(cond, inner)
            for part in ([node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]):
                self._visit(part, inner)
            return
        if isinstance(node, ast.Name):
            if self._refers_to_module(node.id, table):
                line = self.lines[node.lineno - 1].encode()
                start = len(line[:node.col_offset].decode(errors="replace"))
                end = len(line[:node.end_col_offset].decode(errors="replace"))
                if self.lines[node.lineno - 1][start:end] != node.id:
                    raise ComposeError(f"line {node.lineno}: cannot place the name {node.id}")
                self._edit(node.lineno, start, end)
                node.id = self.new(node.id)
            return
        if isinstance(node, ast.Global):
            hits = [n for n in node.names if n in self.rename]
            for lineno in range(node.lineno, node.end_lineno + 1):
                text = self.lines[lineno - 1]
                for n in hits:
                    for m in re.finditer(r"\b" + re.escape(n) + r"\b", text):
                        self._edit(lineno, m.start(), m.end())
            node.names = [self.new(n) if n in self.rename else n for n in node.names]
            return
        if isinstance(node, ast.ExceptHandler) and node.name and self._refers_to_module(node.name, table):
            raise ComposeError(f"line {node.lineno}: binds the module-level name {node.name} in an except clause")
        if isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name and self._refers_to_module(node.name, table):
            raise ComposeError(f"line {node.lineno}: binds the module-level name {node.name} in a match pattern")
        for child in ast.iter_child_nodes(node):
            self._visit(child, table)

    def text(self) -> str:
        lines = list(self.lines)
        for lineno, start, end, new in sorted(set(self.edits), reverse=True):
            line = lines[lineno - 1]
            lines[lineno - 1] = line[:start] + new + line[end:]
        return "".join(lines)


def _import_bindings(node) -> dict[str, str]:
    """name -> the import statement (normalised) that binds it."""
    text = ast.unparse(node)
    if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
        raise ComposeError(f"line {node.lineno}: a star import binds names no one can list")
    if isinstance(node, ast.Import):
        return {(a.asname or a.name.split(".")[0]): text for a in node.names}
    return {(a.asname or a.name): text for a in node.names}


def _module_level(tree: ast.Module):
    """Every node that runs in the module's own scope (function and class bodies left out)."""
    stack = list(tree.body)
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            stack.extend(ast.iter_child_nodes(node))


def _same_scope(stmt):
    """The nodes of a statement evaluated in its own scope (function bodies and lambdas left out)."""
    stack = [stmt]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)) and node is not stmt:
            continue
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            stack.extend(node.decorator_list + node.args.defaults)
            continue
        stack.extend(ast.iter_child_nodes(node))


def _class_binds(node: ast.ClassDef) -> set[str]:
    names = set()
    for stmt in node.body:
        names |= {n.id for n in _same_scope(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(stmt.name)
    return names


def split_source(source: str, suffix: str) -> tuple[list[ast.stmt], str]:
    """(the source's module-level import statements, the rest with every module-level name suffixed)."""
    try:
        tree = ast.parse(source)
        table = symtable.symtable(source, "<candidate>", "exec")
    except (SyntaxError, ValueError) as exc:
        raise ComposeError(f"does not parse: {exc}") from None
    imports = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    imported: dict[str, str] = {}
    for node in imports:
        imported.update(_import_bindings(node))
    bound = set()
    for sym in table.get_symbols():
        if sym.is_assigned() or sym.is_imported() or sym.is_namespace():
            bound.add(sym.get_name())
    stack = list(table.get_children())
    while stack:  # names a function declares global and assigns: module-level too
        child = stack.pop()
        stack.extend(child.get_children())
        for sym in child.get_symbols():
            if sym.is_declared_global() and sym.is_assigned():
                bound.add(sym.get_name())
    for node in _module_level(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)) and node not in imports:
            raise ComposeError(f"line {node.lineno}: an import inside a statement at module level")
    clash = sorted(n for n in imported if n in bound and any(
        isinstance(t, ast.Name) and t.id == n and isinstance(t.ctx, ast.Store) for t in ast.walk(tree)))
    if clash:
        raise ComposeError(f"rebinds the imported name {clash[0]}")
    rename = {n for n in bound - set(imported) if not (n.startswith("__") and n.endswith("__"))}
    import builtins

    shadowed = sorted(n for n in rename if hasattr(builtins, n))
    if shadowed:  # a read before the module binds it means the builtin; renaming could not keep both meanings
        raise ComposeError(f"binds the builtin name {shadowed[0]} at module level")
    for node in ast.walk(tree):  # `X = X * 2` in a class body reads the module's X before the class binds its own
        if isinstance(node, ast.ClassDef):
            bound_here: set[str] = set()
            for stmt in node.body:
                reads = {n.id for n in _same_scope(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
                early = sorted((reads & rename) - bound_here & _class_binds(node))
                if early:
                    raise ComposeError(f"class {node.name} reads the module-level name {early[0]} before binding "
                                       "its own")
                bound_here |= {n.id for n in _same_scope(stmt) if isinstance(n, ast.Name)
                               and isinstance(n.ctx, ast.Store)}
                if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    bound_here.add(stmt.name)
    if "globals" in source or "__name__" in source and "__main__" not in source:
        raise ComposeError("reads module names at run time (globals() or __name__)")
    renamer = _Renamer(source, rename, suffix)
    renamer.run(tree, table)
    # drop the hoisted imports from the text (whole lines; a statement sharing a line with an import is refused)
    text = renamer.text()
    lines = text.splitlines(keepends=True)
    for node in sorted(imports, key=lambda n: -n.lineno):
        first, last = node.lineno - 1, node.end_lineno - 1
        start_ok = lines[first][:node.col_offset].strip() == ""
        end_ok = lines[last].encode()[node.end_col_offset:].decode(errors="replace").strip() in ("", "\\")
        if not (start_ok and end_ok):
            raise ComposeError(f"line {node.lineno}: an import shares its line with other code")
        del lines[first:last + 1]
    body = "".join(lines)
    # the self-check: the text edits did exactly what the tree edits did
    expected = ast.Module(body=[n for n in tree.body if n not in imports], type_ignores=[])
    try:
        got = ast.parse(body)
    except SyntaxError as exc:
        raise ComposeError(f"renaming broke the source ({exc})") from None
    if ast.dump(got) != ast.dump(expected):
        raise ComposeError("renaming by text and by tree disagree")
    return imports, body


# --- the composite ----------------------------------------------------------------------------------------------

def _condition(feature, test) -> str:
    kind, i = feature[0], feature[1]
    if kind == "size":
        return f"inputs[{i}].shape[{feature[2]}] <= {test!r}"
    if kind == "dtype":
        return f"inputs[{i}].dtype == torch.{test}"
    if isinstance(test, bool):
        return f"inputs[{i}]" if test else f"not inputs[{i}]"
    if _numeric(test):
        return f"inputs[{i}] <= {test!r}"
    return f"inputs[{i}] == {test!r}"


def _describe(feature) -> str:
    kind, i = feature[0], feature[1]
    return {"size": lambda: f"dimension {feature[2]} of input {i}", "dtype": lambda: f"the dtype of input {i}",
            "value": lambda: f"input {i}"}[kind]()


def _dispatch(tree, suffix_of, indent: str = "    ") -> list[str]:
    if isinstance(tree, Leaf):
        return [f"{indent}return custom_kernel{suffix_of(tree.part)}(*inputs)"]
    lines = [f"{indent}if {_condition(tree.feature, tree.test)}:"]
    lines += _dispatch(tree.left, suffix_of, indent + "    ")
    if isinstance(tree.right, Leaf):
        return lines + _dispatch(tree.right, suffix_of, indent)
    return lines + [f"{indent}else:"] + _dispatch(tree.right, suffix_of, indent + "    ")


def rule_text(tree) -> str:
    if isinstance(tree, Leaf):
        return f"#{tree.part}"
    test = f"<= {tree.test!r}" if _numeric(tree.test) else f"== {tree.test!r}"
    return f"({_describe(tree.feature)} {test}: {rule_text(tree.left)}; else {rule_text(tree.right)})"


@dataclass(frozen=True)
class Plan:
    source: str
    parts: tuple[int, ...]  # every kernel drawn from, the one chosen for the most cases first
    predicted: float  # the geometric mean of the chosen kernels' per-case figures
    rule: str
    chosen: dict  # case label -> candidate id


def build(tree, parts: dict[int, Part], cases: list[Case], predicted: float, unit: str = "figure") -> Plan:
    used = leaves(tree)
    chosen = {c.label: route(tree, c) for c in cases}
    used.sort(key=lambda pid: (-sum(v == pid for v in chosen.values()), pid))
    suffix_of = lambda pid: f"_c{pid}"  # noqa: E731
    future, hoisted, bindings, bodies = [], [], {}, []
    for pid in used:
        imports, body = split_source(parts[pid].source, suffix_of(pid))
        body = EXPECT_LINE.sub("", body)  # a solution's verdict marker (tests/test_solutions.py) says nothing here
        for node in imports:
            for name, text in _import_bindings(node).items():
                if bindings.setdefault(name, text) != text:
                    raise ComposeError(f"#{pid} binds {name} by `{text}`, another kernel by `{bindings[name]}`")
            text = ast.unparse(node)
            target = future if isinstance(node, ast.ImportFrom) and node.module == "__future__" else hoisted
            if text not in target:
                target.append(text)
        bodies.append((pid, body.strip("\n")))
    if "torch" not in bindings:
        hoisted.insert(0, "import torch")
    elif bindings["torch"] != "import torch" and isinstance(tree, Split) and _uses_dtype(tree):
        raise ComposeError("`torch` is bound by something other than `import torch`")
    table = [f"case | kernel | {unit}"] + [
        f"{c.label!r} | #{chosen[c.label]} | {parts[chosen[c.label]].value[c.label]:.4g}" for c in cases]
    # comments, not a docstring: labels and values come from the problem and need no escaping there
    header = ["# Shape-dispatch composite of " + ", ".join(f"#{p}" for p in used) + " (built by evolve from their "
              "archived per-case figures).", "#", f"# Rule: {rule_text(tree)}", "#",
              f"# Per benchmark case, the kernel the rule picks and its archived {unit}:",
              *(f"#   {line}" for line in table)]
    header = [line.replace("\n", " ").replace("\r", " ") for line in header]
    out = header + future + hoisted + [""]
    for pid, body in bodies:
        out += ["", f"# ---- kernel #{pid}: its module-level names end in {suffix_of(pid)} " + "-" * 40, "", body, ""]
    out += ["", "def custom_kernel(*inputs):",
            '    """Dispatch by what the inputs look like; thresholds lie between the benchmark values."""']
    out += _dispatch(tree, suffix_of)
    source = "\n".join(out) + "\n"
    try:
        ast.parse(source)
    except SyntaxError as exc:
        raise ComposeError(f"the composite does not parse ({exc})") from None
    return Plan(source=source, parts=tuple(used), predicted=predicted, rule=rule_text(tree), chosen=chosen)


def _uses_dtype(tree) -> bool:
    return isinstance(tree, Split) and (tree.feature[0] == "dtype" or _uses_dtype(tree.left)
                                        or _uses_dtype(tree.right))


def plan(parts: list[Part], cases: list[Case], incumbent: float | None, noise, unit: str = "figure") -> Plan | None:
    """The composite worth trying, or None: per-case winners must differ, the rule must use two kernels or more,
    and its predicted geometric mean must beat `incumbent` by more than the timing noise: `noise` is a relative
    figure, or a function of the ids the rule draws from giving theirs and the incumbent's. Kernels whose source
    cannot be merged are left out."""
    if not cases:
        return None
    labels = [c.label for c in cases]
    usable = {p.id: p for p in parts if all(p.value.get(label, 0) > 0 for label in labels)}
    if len(usable) < 2:
        return None
    winners = {max(usable.values(), key=lambda p: (p.value[label], -p.id)).id for label in labels}
    if len(winners) < 2:
        return None
    while len(usable) >= 2:
        tree, loss = learn(cases, usable, held=incumbent)
        if isinstance(tree, Leaf):
            return None
        predicted = math.exp(-loss / len(cases))
        margin = noise(tuple(leaves(tree))) if callable(noise) else noise
        if incumbent is not None and not predicted > incumbent * (1 + margin):
            return None
        try:
            return build(tree, usable, cases, predicted, unit)
        except ComposeError as exc:
            bad = _culprit(exc, leaves(tree), usable)
            usable.pop(bad)
    return None


def _culprit(exc: ComposeError, used: list[int], parts: dict[int, Part]) -> int:
    """The kernel to leave out after a failed merge: the first one whose source cannot be split alone, else the
    last drawn (a clash between two kernels' imports)."""
    for pid in used:
        try:
            split_source(parts[pid].source, f"_c{pid}")
        except ComposeError:
            return pid
    return used[-1]


def cases_from(rows: list[dict]) -> list[Case] | None:
    """The cases as one verdict's per-shape rows describe them; None when its rows do not say what the inputs
    were (verdicts archived before inputs were recorded)."""
    out = []
    for row in rows:
        inputs = row.get("inputs")
        if not isinstance(inputs, list) or not inputs:
            return None
        out.append(Case(label=row["case"], features=_features(inputs)))
    return out


class Planner:
    """Which composite a run should try next, from its population's kernels and their per-case figures (each
    verdict read once: a verdict never changes once admitted)."""

    def __init__(self, problem, figures):
        self.problem = problem
        self.figures = figures.rows  # case_figures.CaseFigures.rows: a kernel's verdict by case, read once
        self.composed: set[str] = set()  # hashes of composites already proposed

    def next(self, best, ranked, noise_of_id, hash_of) -> Plan | None:
        """The shape-dispatch composite worth evaluating now against `best`, drawn from `ranked` (best first), or
        None (plan says when one is); noise_of_id(id) is a kernel's timing noise, hash_of(source) a source's hash."""
        if self.problem.format == "gpumode":  # its candidates take one structured argument, not flat inputs
            return None
        if best is None:
            return None
        gpu = self.figures(best)["mode"] == "gpu"
        labels = [c.label for c in (self.problem.benchmarks if gpu else self.problem.cpu_benchmarks)]
        parts, cases = [], None
        for cand in ranked:
            if cand.proposer == COMPOSER or not cand.source:
                continue  # a composite is composed from its own parts, never nested
            figures = self.figures(cand)
            rows = figures["rows"]
            if figures["mode"] != ("gpu" if gpu else "cpu") or any(label not in rows for label in labels):
                continue  # measured on other shapes (the problem changed since) or in another mode
            values = {label: case_value(rows[label], gpu) for label in labels}
            if any(v is None for v in values.values()):
                continue
            cases = cases or cases_from([rows[label] for label in labels])
            parts.append(Part(cand.id, cand.source, values))
        if cases is None:
            return None

        def noise(drawn: tuple[int, ...]) -> float:  # of the incumbent and the kernels the rule draws from
            return max(noise_of_id(i) for i in (best.id, *drawn))

        found = plan(parts, cases, best.score, noise,
                     "fraction of roofline" if gpu else "1 / interpreter ms (CPU ranking only)")
        if found is None or hash_of(found.source) in self.composed:
            return None
        return found
