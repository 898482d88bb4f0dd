"""Tunable launch parameters and the optuna tuner over them.

A candidate declares its knobs as a module-level dict literal, and may narrow their ranges with a second one:

    KNOBS = {"BLOCK_SIZE": 1024, "num_warps": 4, "ROWS_PER_PROGRAM": 2}
    KNOB_SPACE = {"num_warps": [2, 4, 8, 16]}          # optional; per knob, the values to try

and reads them in its host code (`KNOBS["num_warps"]`). Without KNOB_SPACE a knob's range is derived from its value:
powers of two from a quarter to four times it, other integers from half to twice, booleans both ways. The tuner
rewrites the KNOBS literal in the source, so every tuned variant is an ordinary candidate with its own verdict.

A source without KNOBS still has the launch parameters it writes as literals, `kernel[grid](..., BLOCK_SIZE=1024,
num_warps=8)`: each keyword given one positive integer (or boolean) across the file's launches is a knob with the
derived range, and the tuner rewrites those literals. `num_warps` and `num_stages`, which change how a kernel runs
and never what it computes, are knobs however they are written: a literal takes the values of LAUNCH_OPTIONS, and
`num_warps` computed in the source (per shape, as a whole-row kernel does) takes a factor, `num_warps_scale`, the
tuner writing `max(1, min(32, int((expression) * factor)))` in its place, so the kernel keeps choosing per shape.

A trial may aim at a regime, a group of benchmark cases (one dtype, or the smaller or larger half of the shapes):
every other trial of a structure whose per-case figures are known asks a study of its own for the regime where the
structure's best is weakest, so a setting that is best in one regime only is found, and the composer (compose.py)
can dispatch to it there.
"""
from __future__ import annotations

import ast
import math
import re
from dataclasses import dataclass

KNOBS_DOC = (
    "Declare tunable launch parameters as a module-level dict literal "
    "`KNOBS = {\"BLOCK_SIZE\": 1024, \"num_warps\": 4}` "
    "and read them in host code (KNOBS[\"num_warps\"]); optionally narrow ranges with "
    "`KNOB_SPACE = {\"num_warps\": [2, 4, 8, 16]}`. The tuner searches these values with optuna; each setting is "
    "evaluated as its own candidate."
)


def _assignment(tree: ast.Module, name: str):
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and node.targets[0].id == name:
            return node
    return None


def read_knobs(source: str) -> tuple[dict | None, dict]:
    """(KNOBS, space) of a source, or (None, {}) when it has none to tune (declared or inferred from its launches)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None, {}
    node = _assignment(tree, "KNOBS")
    scale = _warps_scale(tree)
    scaled = ({WARPS_SCALE: scale}, {WARPS_SCALE: WARPS_SCALES}) if scale is not None else ({}, {})
    if node is None:
        inferred = {name: _literal(nodes[0]) for name, nodes in _launch_literals(tree).items()}
        space = {name: LAUNCH_OPTIONS.get(name) or default_range(value) for name, value in inferred.items()}
        # knobs: the values the source writes (a computed launch option has none, yet is in the space)
        knobs = {name: value for name, value in inferred.items() if value is not None}
        return ({**knobs, **scaled[0]}, {**space, **scaled[1]}) if inferred or scaled[0] else (None, {})
    try:
        knobs = ast.literal_eval(node.value)
    except ValueError:
        return None, {}
    if not isinstance(knobs, dict) or not knobs:
        return None, {}
    space = {}
    declared = _assignment(tree, "KNOB_SPACE")
    if declared is not None:
        try:
            raw = ast.literal_eval(declared.value)
            space = {k: list(v) for k, v in raw.items() if k in knobs and isinstance(v, (list, tuple)) and v}
        except ValueError:
            space = {}
    for name, value in knobs.items():
        if name not in space:
            space[name] = default_range(value)
    return {**knobs, **scaled[0]}, {**space, **scaled[1]}


def default_range(value) -> list:
    if isinstance(value, bool):
        return [True, False]
    if isinstance(value, int) and value > 0:
        if value & (value - 1) == 0:
            return sorted({max(1, value // 4), max(1, value // 2), value, value * 2, value * 4})
        return sorted({max(1, value // 2), value, value * 2})
    if isinstance(value, float) and math.isfinite(value):
        return [value / 2, value, value * 2]
    return [value]


# Launch options that change how a Triton kernel runs, never what it computes: tuned even where the source computes
# them (num_stages: the tuner writes a literal in place of the expression; num_warps: a factor, below). 32 warps
# (1,024 threads, a block's most) halves the registers a thread needs for a row held whole: the layernorm seed's
# 32768-wide rows ran at 128 registers a thread and 21% occupancy with 16 (Nsight Compute, H100).
LAUNCH_OPTIONS = {"num_warps": [2, 4, 8, 16, 32], "num_stages": [1, 2, 3, 4]}
# A num_warps the source computes is scaled instead: one constant in its place ran every shape with the same warps,
# and 2 warps on softmax's 131072-wide rows held whole (2,048 elements a thread) compiled for over 180 s (H100).
WARPS_SCALE = "num_warps_scale"
WARPS_SCALES = [0.5, 1, 2, 4]
LAUNCH_KNOBS = frozenset(LAUNCH_OPTIONS) | {WARPS_SCALE}  # knobs the interpreter ignores


def _launch_literals(tree: ast.Module) -> dict[str, list[ast.expr]]:
    """Keyword arguments of Triton launches (`kernel[grid](...)`) written as one positive integer or boolean
    literal, and the launch options above however written (on one line): name -> their nodes. A name given two
    different literals, or another expression anywhere, is no knob."""
    found: dict[str, list] = {}
    spoilt: set[str] = set()
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript)):
            continue
        for keyword in node.keywords:
            value, name = keyword.value, keyword.arg
            if name is None:
                continue
            literal = isinstance(value, ast.Constant) and type(value.value) in (int, bool) and \
                (isinstance(value.value, bool) or value.value > 0)
            if name == "num_warps" and not literal:
                continue  # scaled (_computed_warps)
            option = name in LAUNCH_OPTIONS and value.lineno == value.end_lineno
            if not (literal or option) or (found.get(name) and _literal(found[name][0]) != _literal(value)):
                spoilt.add(name)
                continue
            found.setdefault(name, []).append(value)
    return {name: nodes for name, nodes in found.items() if name not in spoilt}


def _literal(node):
    return node.value if isinstance(node, ast.Constant) else None


def _computed_warps(tree: ast.Module) -> list[ast.expr]:
    """The num_warps of Triton launches that the source computes (any expression on one line but a literal, or one
    read from KNOBS, directly or through a name assigned from it: a knob already)."""
    def names(node) -> set:
        return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}

    # names assigned from KNOBS (`nw = KNOBS["num_warps"]`): a num_warps of theirs is a KNOBS entry already
    from_knobs = {target.id for node in ast.walk(tree) if isinstance(node, ast.Assign) and "KNOBS" in names(node.value)
                  for target in node.targets if isinstance(target, ast.Name)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript):
            for keyword in node.keywords:
                value = keyword.value
                if keyword.arg == "num_warps" and not isinstance(value, ast.Constant) \
                        and value.lineno == value.end_lineno and not names(value) & (from_knobs | {"KNOBS"}):
                    found.append(value)
    return found


def _scaled(node: ast.expr) -> tuple[ast.expr, object]:
    """(the expression, the factor) of a computed num_warps: `max(1, min(32, int((e) * f)))` is (e, f), anything
    else (itself, 1)."""
    def call(n, name, count):
        return isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == name and \
            len(n.args) == count and not n.keywords

    if call(node, "max", 2) and call(node.args[1], "min", 2) and call(node.args[1].args[1], "int", 1):
        product = node.args[1].args[1].args[0]
        if isinstance(product, ast.BinOp) and isinstance(product.op, ast.Mult) and \
                isinstance(product.right, ast.Constant) and product.right.value in WARPS_SCALES:
            return product.left, product.right.value
    return node, 1


def _warps_scale(tree: ast.Module):
    """The factor the source's computed num_warps carry (None: it computes none)."""
    nodes = _computed_warps(tree)
    return _scaled(nodes[0])[1] if nodes else None


def _rescale(source: str, tree: ast.Module, factor) -> str:
    """The source with each computed num_warps scaled by `factor` (1: as the source first wrote it)."""
    edits = []
    for node in _computed_warps(tree):
        base = ast.get_source_segment(source, _scaled(node)[0])
        text = base if factor == 1 else f"max(1, min(32, int(({base}) * {factor!r})))"
        edits.append((node.lineno, node.col_offset, node.end_col_offset, text))
    lines = source.splitlines(keepends=True)
    for lineno, start, end, text in sorted(edits, reverse=True):
        lines[lineno - 1] = _spliced(lines[lineno - 1], start, end, text)
    return "".join(lines)


def _replace_literals(source: str, tree: ast.Module, text_for) -> str:
    """Replace each inferred knob's literals with text_for(name, current value)."""
    edits = sorted(((n.lineno, n.col_offset, n.end_col_offset, name, _literal(n))
                    for name, nodes in _launch_literals(tree).items() for n in nodes), reverse=True)
    lines = source.splitlines(keepends=True)
    for lineno, start, end, name, value in edits:
        lines[lineno - 1] = _spliced(lines[lineno - 1], start, end, text_for(name, value))
    return "".join(lines)


def _spliced(line: str, start: int, end: int, text: str) -> str:
    """The line with text between two of ast's column offsets (UTF-8 bytes, not characters)."""
    raw = line.encode()
    return (raw[:start] + text.encode() + raw[end:]).decode()


def _replace_value(source: str, text_for) -> str:
    """Replace the KNOBS literal's text with text_for(current_dict)."""
    tree = ast.parse(source)
    node = _assignment(tree, "KNOBS")
    if node is None:
        raise ValueError("the source declares no KNOBS")
    lines = source.splitlines(keepends=True)
    start, end = node.value.lineno - 1, node.value.end_lineno - 1
    prefix = lines[start][: node.value.col_offset]
    suffix = lines[end][node.value.end_col_offset:]
    replacement = prefix + text_for(ast.literal_eval(node.value)) + suffix
    return "".join(lines[:start]) + replacement + "".join(lines[end + 1:])


def apply_knobs(source: str, values: dict) -> str:
    """The same source with the KNOBS literal replaced by `values` (knobs not in values keep their value), or,
    without KNOBS, its launch literals."""
    tree = ast.parse(source)
    if WARPS_SCALE in values and _computed_warps(tree):
        source = _rescale(source, tree, values[WARPS_SCALE])
        tree = ast.parse(source)
    if _assignment(tree, "KNOBS") is None:
        return _replace_literals(source, tree, lambda name, value: repr(values.get(name, value)))
    return _replace_value(source, lambda current: repr({**current, **{k: v for k, v in values.items()
                                                                       if k in current}}))


def structure_key(source: str) -> str:
    """Sources that differ only in their KNOBS values share a structure (and one tuning study)."""
    from .archive import source_hash

    try:
        tree = ast.parse(source)
        if _computed_warps(tree):
            source = _rescale(source, tree, 1)
            tree = ast.parse(source)
        if _assignment(tree, "KNOBS") is None:
            return source_hash(_replace_literals(source, tree, lambda name, value: name))
        return source_hash(_replace_value(source, lambda current: repr(sorted(current))))
    except (ValueError, SyntaxError):
        return source_hash(source)


def _frozen(values: dict) -> tuple:
    """A setting as the tuner's record of tried ones keys it."""
    return tuple(sorted((k, repr(v)) for k, v in values.items()))


def regimes(labels: list[str]) -> dict[str, tuple[str, ...]]:
    """Groups of benchmark cases a trial can aim at, from their labels ("bf16 4096x32768"): one per dtype (a label's
    first word) and the smaller and larger half of the shapes by element count; each a proper, non-empty part."""
    def elements(label: str) -> int:
        return math.prod(int(d) for d in re.findall(r"\d+", label.partition(" ")[2]) or [0])

    groups: dict[str, list[str]] = {}
    for label in labels:
        head, _, rest = label.partition(" ")
        if rest:
            groups.setdefault(head, []).append(label)
    by_size = sorted(labels, key=lambda label: (elements(label), label))
    half = len(by_size) // 2
    groups["smaller shapes"], groups["larger shapes"] = by_size[:half], by_size[half:]
    return {name: tuple(group) for name, group in groups.items() if 0 < len(group) < len(labels)}


def regime_value(cases: dict, labels) -> float | None:
    """The geometric mean of a setting's per-case figures over one regime's cases; None where one is missing."""
    values = [cases.get(label) for label in labels]
    if not values or any(not isinstance(v, (int, float)) or v <= 0 for v in values):
        return None
    return math.exp(sum(math.log(v) for v in values) / len(values))


@dataclass
class Trial:
    """A suggestion's handle: the optuna trial, and the regime whose study asked for it (None: all cases)."""
    trial: object
    regime: str | None
    values: dict


class Tuner:
    """Per structure, one optuna study over all cases and one per regime a trial has aimed at; trials are
    candidates, their scores (and per-case figures) come back through tell() and reach every study of the structure."""

    def __init__(self, seed: int = 0, trials: int = 6):
        import optuna

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        self._optuna = optuna
        self.seed = seed
        self.trials = trials
        self.studies: dict[tuple, object] = {}  # (structure, regime or None) -> study
        self.tried: dict[str, set] = {}
        self.history: dict[str, list[tuple[dict, float | None, dict]]] = {}  # structure -> (values, score, cases)
        self.suggested: dict[str, int] = {}
        self._labels: dict[tuple, tuple[str, ...]] = {}  # (structure, regime) -> its case labels
        # structure -> its knob space as first read: a range inferred around a launch literal moves with the value a
        # setting writes, and a study's space must not
        self.spaces: dict[str, dict] = {}
        self.ignored: frozenset = frozenset()  # knobs left as the source has them (LAUNCH_KNOBS under the interpreter)

    def _space(self, source: str) -> tuple[str, dict | None, dict]:
        """(structure key, KNOBS, the structure's knob space as first read, less the ignored knobs)."""
        knobs, space = read_knobs(source)
        key = structure_key(source)
        space = self.spaces.setdefault(key, space) if space else space
        return key, knobs, {k: v for k, v in space.items() if k not in self.ignored}

    def _study(self, key: str, space: dict, regime: str | None = None, labels: tuple = ()):
        if (key, regime) not in self.studies:
            sampler = self._optuna.samplers.TPESampler(seed=self.seed + len(self.studies), n_startup_trials=3)
            study = self._optuna.create_study(direction="maximize", sampler=sampler)
            self.studies[(key, regime)] = study
            self.tried.setdefault(key, set())
            for values, score, cases in self.history.get(key, []):  # a new regime's study starts from what is known
                self._add(study, space, values, score if regime is None else regime_value(cases, labels))
        return self.studies[(key, regime)]

    def _add(self, study, space: dict, values: dict, value: float | None) -> None:
        values = {k: v for k, v in values.items() if k in space}  # a knob the tuner leaves as written: not a param
        distributions = {k: self._optuna.distributions.CategoricalDistribution(space[k]) for k in values}
        state = self._optuna.trial.TrialState.COMPLETE if value is not None else self._optuna.trial.TrialState.FAIL
        study.add_trial(self._optuna.trial.create_trial(params=values, distributions=distributions, value=value,
                                                        state=state))

    def _record(self, key: str, space: dict, values: dict, score: float | None, cases: dict | None,
                asked=None) -> None:
        """A setting's result into every study of its structure (the one that asked is told, the rest given it)."""
        self.history.setdefault(key, []).append((values, score, cases or {}))
        for (structure, regime), study in list(self.studies.items()):
            if structure != key:
                continue
            labels = self._labels.get((key, regime), ())
            value = score if regime is None else regime_value(cases or {}, labels)
            if asked is not None and asked.regime == regime and value is None:
                study.tell(asked.trial, state=self._optuna.trial.TrialState.FAIL)
            elif asked is not None and asked.regime == regime:
                study.tell(asked.trial, value)
            else:
                self._add(study, space, values, value)

    def remember(self, source: str, knobs: dict, score: float | None, cases: dict | None = None) -> None:
        """Feed an archived result (on resume, or the base candidate) into its structure's studies."""
        key, _, space = self._space(source)
        self._study(key, space)
        values = {k: knobs[k] for k in space if k in knobs}
        frozen = _frozen(values)
        if frozen in self.tried[key] or any(values[k] not in space[k] for k in values):
            return
        self.tried[key].add(frozen)
        self._record(key, space, values, score, cases)

    def exhausted(self, source: str) -> bool:
        """Whether the structure's settings worth trying are spent (the base's own among them: never proposed)."""
        key, knobs, space = self._space(source)
        size = math.prod(len(v) for v in space.values()) if space else 0
        own = _frozen({k: (knobs or {}).get(k) for k in space})
        return len(self.tried.get(key, set()) | {own}) >= min(self.trials + 1, size)

    def weakest(self, source: str) -> tuple[str, tuple[str, ...]] | None:
        """(name, case labels) of the regime where this structure's best setting so far is weakest, or None while
        no setting's per-case figures are known."""
        known = [cases for _, _, cases in self.history.get(structure_key(source), []) if cases]
        if not known:
            return None
        best = {}
        for name, labels in regimes(sorted(known[-1])).items():
            reached = [v for v in (regime_value(cases, labels) for cases in known) if v is not None]
            if reached:
                best[name] = (max(reached), labels)
        if not best:
            return None
        name = min(best, key=lambda n: (best[n][0], n))
        return name, best[name][1]

    def suggest(self, source: str) -> tuple[str, dict, Trial] | None:
        """(new source, knob values, trial) for an untried setting of this structure, or None when exhausted; every
        second one aims at the structure's weakest regime once per-case figures are known."""
        key, knobs, space = self._space(source)
        if knobs is None or self.exhausted(source):
            return None
        self.suggested[key] = self.suggested.get(key, 0) + 1
        aim = self.weakest(source) if self.suggested[key] % 2 == 0 else None
        regime, labels = aim if aim else (None, ())
        self._labels[(key, regime)] = labels
        study = self._study(key, space, regime, labels)
        own = {k: knobs.get(k) for k in space}  # the base's own setting: tuning it again gives the base
        for _ in range(20):
            trial = study.ask({k: self._optuna.distributions.CategoricalDistribution(v) for k, v in space.items()})
            values = dict(trial.params)
            frozen = _frozen(values)
            if frozen not in self.tried[key] and values != own:
                self.tried[key].add(frozen)
                return apply_knobs(source, values), values, Trial(trial, regime, values)
            study.tell(trial, state=self._optuna.trial.TrialState.PRUNED)
        return None

    def tell(self, source: str, handle: Trial, score: float | None, cases: dict | None = None) -> None:
        """A suggested setting's fitness and per-case figures ({case label: fraction}), for every study."""
        key, _, space = self._space(source)
        self._record(key, space, handle.values, score, cases, asked=handle)
