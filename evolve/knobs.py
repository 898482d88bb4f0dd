"""Tunable launch parameters and the optuna tuner over them.

A candidate declares its knobs as a module-level dict literal, and may narrow their ranges with a second one:

    KNOBS = {"BLOCK_SIZE": 1024, "num_warps": 4, "ROWS_PER_PROGRAM": 2}
    KNOB_SPACE = {"num_warps": [2, 4, 8, 16]}          # optional; per knob, the values to try

and reads them in its host code (`KNOBS["num_warps"]`). Without KNOB_SPACE a knob's range is derived from its value:
powers of two from a quarter to four times it, other integers from half to twice, booleans both ways. The tuner
rewrites the KNOBS literal in the source, so every tuned variant is an ordinary candidate with its own verdict.
"""
from __future__ import annotations

import ast
import math

KNOBS_DOC = (
    "Declare tunable launch parameters as a module-level dict literal `KNOBS = {\"BLOCK_SIZE\": 1024, \"num_warps\": 4}` "
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
    """(KNOBS, space) of a source, or (None, {}) when it declares none or they are not plain literals."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None, {}
    node = _assignment(tree, "KNOBS")
    if node is None:
        return None, {}
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
    return knobs, space


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
    """The same source with the KNOBS literal replaced by `values` (knobs not in values keep their value)."""
    return _replace_value(source, lambda current: repr({**current, **{k: v for k, v in values.items()
                                                                       if k in current}}))


def structure_key(source: str) -> str:
    """Sources that differ only in their KNOBS values share a structure (and one tuning study)."""
    from .archive import source_hash

    try:
        return source_hash(_replace_value(source, lambda current: repr(sorted(current))))
    except (ValueError, SyntaxError):
        return source_hash(source)


class Tuner:
    """One optuna study per structure; trials are candidates, their scores come back through tell()."""

    def __init__(self, seed: int = 0, trials: int = 6):
        import optuna

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        self._optuna = optuna
        self.seed = seed
        self.trials = trials
        self.studies: dict[str, object] = {}
        self.tried: dict[str, set] = {}

    def _study(self, key: str):
        if key not in self.studies:
            sampler = self._optuna.samplers.TPESampler(seed=self.seed + len(self.studies), n_startup_trials=3)
            self.studies[key] = self._optuna.create_study(direction="maximize", sampler=sampler)
            self.tried[key] = set()
        return self.studies[key]

    def remember(self, source: str, knobs: dict, score: float | None) -> None:
        """Feed an archived result (on resume, or the base candidate) into its structure's study."""
        _, space = read_knobs(source)
        key = structure_key(source)
        study = self._study(key)
        values = {k: knobs[k] for k in space if k in knobs}
        frozen = tuple(sorted((k, repr(v)) for k, v in values.items()))
        if frozen in self.tried[key] or any(values[k] not in space[k] for k in values):
            return
        self.tried[key].add(frozen)
        distributions = {k: self._optuna.distributions.CategoricalDistribution(space[k]) for k in values}
        state = self._optuna.trial.TrialState.COMPLETE if score is not None else self._optuna.trial.TrialState.FAIL
        study.add_trial(self._optuna.trial.create_trial(params=values, distributions=distributions,
                                                        value=score if score is not None else None, state=state))

    def exhausted(self, source: str) -> bool:
        key = structure_key(source)
        _, space = read_knobs(source)
        size = math.prod(len(v) for v in space.values()) if space else 0
        return len(self.tried.get(key, ())) >= min(self.trials + 1, size)

    def suggest(self, source: str) -> tuple[str, dict, object] | None:
        """(new source, knob values, trial) for an untried setting of this structure, or None when exhausted."""
        knobs, space = read_knobs(source)
        if knobs is None or self.exhausted(source):
            return None
        key = structure_key(source)
        study = self._study(key)
        for _ in range(20):
            trial = study.ask({k: self._optuna.distributions.CategoricalDistribution(v) for k, v in space.items()})
            values = dict(trial.params)
            frozen = tuple(sorted((k, repr(v)) for k, v in values.items()))
            if frozen not in self.tried[key]:
                self.tried[key].add(frozen)
                return apply_knobs(source, values), values, trial
            study.tell(trial, state=self._optuna.trial.TrialState.PRUNED)
        return None

    def tell(self, source: str, trial, score: float | None) -> None:
        study = self._study(structure_key(source))
        if score is None:
            study.tell(trial, state=self._optuna.trial.TrialState.FAIL)
        else:
            study.tell(trial, score)
