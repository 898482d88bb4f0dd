"""evolve's own problem folder: problem.toml (cases, tolerances, forbidden calls) and reference.py (functions).

docs/problems.md documents every field; `evolve init` writes a folder with each one commented.
"""
from __future__ import annotations

import ast
from pathlib import Path

import torch

from ..problem import KNOWN_DTYPES, OUTPUT_DTYPES, Case, Problem, ProblemError, Tolerance
from .base import Inputs, Reference, as_tuple, import_file, parse

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

REFERENCE_FUNCTIONS = ("generate_input", "ref_kernel", "bytes_moved", "flops")
PARAM_TYPES = (bool, int, float, str)


def _cases(raw, key: str, dtypes: tuple[str, ...], where: Path) -> tuple[Case, ...]:
    entries = raw.get(key, [])
    if not isinstance(entries, list):
        raise ProblemError(f"{where}: [[{key}]] must be an array of tables, each with shape = {{...}}")
    cases = []
    for i, entry in enumerate(entries):
        label = f"{where}: [[{key}]] entry {i + 1}"
        shape = entry.get("shape") if isinstance(entry, dict) else None
        if not isinstance(shape, dict) or not shape:
            raise ProblemError(f"{label} needs shape = {{ NAME = int, ... }}")
        unknown = set(entry) - {"shape", "params", "dtypes", *(("weight",) if key == "benchmark" else ())}
        if unknown:
            raise ProblemError(f"{label}: unknown key(s) {', '.join(sorted(unknown))}; an entry holds shape, params "
                               f"and dtypes" + (", and a [[benchmark]] entry a weight" if "weight" in unknown else ""))
        weight = entry.get("weight", 1)
        if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not 0 < weight < float("inf"):
            raise ProblemError(f"{label}: weight = {weight!r} must be a positive number (how often the shape runs, "
                               "relative to the others)")
        for name, value in shape.items():
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ProblemError(f"{label}: {name} = {value!r} must be a positive integer")
        params = entry.get("params", {})
        if not isinstance(params, dict):
            raise ProblemError(f"{label}: params must be a table, params = {{ causal = true }}")
        for name, value in params.items():
            if not isinstance(value, PARAM_TYPES):
                raise ProblemError(f"{label}: params.{name} = {value!r} must be a boolean, number or string")
            if name in shape or name in ("dtype", "seed", "device"):
                raise ProblemError(f"{label}: params.{name} clashes with a shape name or a reserved argument")
        entry_dtypes = entry.get("dtypes", list(dtypes))
        if not isinstance(entry_dtypes, list) or not entry_dtypes:
            raise ProblemError(f"{label}: dtypes must be a non-empty list of the problem's dtypes")
        for dtype in entry_dtypes:
            if dtype not in dtypes:
                raise ProblemError(f"{label} names dtype {dtype!r}, not in dtypes {list(dtypes)}")
            cases.append(Case(tuple(shape.items()), dtype, tuple(params.items()), weight=float(weight)))
    return tuple(cases)


def _accepts(raw, tests: tuple[Case, ...], where: Path) -> tuple[tuple[str, dict], ...]:
    """`[accepts]`: per dimension of the test shapes, `{ min = 1, max = 65536 }` (with `multiple_of = 8` where a
    kernel may require it) or `{ one_of = [64, 128] }`: the shapes an evaluation may draw besides the listed ones."""
    table = raw.get("accepts", {})
    if not isinstance(table, dict):
        raise ProblemError(f"{where}: [accepts] must be a table, one entry a dimension: N = {{ min = 1, max = 4096 }}")
    names = set.intersection(*(set(dict(case.shape)) for case in tests))
    accepts = []
    for name, spec in table.items():
        label = f"{where}: [accepts] {name}"
        if name not in names:
            raise ProblemError(f"{label}: not a dimension of every [[test]] shape ({', '.join(sorted(names))})")
        if not isinstance(spec, dict) or set(spec) not in ({"one_of"}, {"min", "max"}, {"min", "max", "multiple_of"}):
            raise ProblemError(f"{label} must be {{ min = 1, max = 4096 }} (with multiple_of = 8 if need be) or "
                               f"{{ one_of = [64, 128] }}")
        values = spec.get("one_of", [spec.get("min"), spec.get("max"), spec.get("multiple_of", 1)])
        if not isinstance(values, list) or not values or \
                not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in values):
            raise ProblemError(f"{label}: every value must be a positive integer")
        if "min" in spec and (spec["min"] > spec["max"] or spec["min"] % spec.get("multiple_of", 1)):
            raise ProblemError(f"{label}: min must be at most max, and a multiple of multiple_of")
        accepts.append((name, dict(spec)))
    return tuple(accepts)


def _check_reference(path: Path) -> None:
    tree = parse(path, ", ".join(REFERENCE_FUNCTIONS))
    defined = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
    missing = [name for name in REFERENCE_FUNCTIONS if name not in defined]
    if missing:
        raise ProblemError(f"{path}: missing function(s) {', '.join(missing)} (see docs/problems.md)")


def _tolerances(raw, dtypes, toml_path) -> dict:
    table = raw["tolerance"]
    if not isinstance(table, dict):
        raise ProblemError(f"{toml_path}: [tolerance.<dtype>] must be tables")
    tolerance = {}
    for dtype in dtypes:
        entry = table.get(dtype)
        if not isinstance(entry, dict):
            raise ProblemError(f"{toml_path}: missing [tolerance.{dtype}] with rtol, floor and min_cosine")
        try:
            tol = Tolerance(float(entry["rtol"]), float(entry["floor"]), float(entry["min_cosine"]))
        except KeyError as exc:
            raise ProblemError(f"{toml_path}: [tolerance.{dtype}] lacks {exc.args[0]!r}") from exc
        except (TypeError, ValueError) as exc:
            raise ProblemError(f"{toml_path}: [tolerance.{dtype}]: rtol, floor and min_cosine must be numbers") from exc
        if not (tol.rtol >= 0 and tol.floor > 0 and -1 <= tol.min_cosine <= 1):
            raise ProblemError(f"{toml_path}: [tolerance.{dtype}] needs rtol >= 0, floor > 0, -1 <= min_cosine <= 1")
        tolerance[dtype] = tol
    return tolerance


def load(path: Path) -> Problem:
    toml_path = path / "problem.toml"
    try:
        raw = tomllib.loads(toml_path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise ProblemError(f"{toml_path}: not valid TOML: {exc}") from exc

    for name in ("name", "dtypes", "tolerance", "test", "benchmark"):
        if name not in raw:
            raise ProblemError(f"{toml_path}: missing field {name!r}")
    if not isinstance(raw["dtypes"], list) or not raw["dtypes"]:
        raise ProblemError(f"{toml_path}: dtypes must be a non-empty list, e.g. [\"float32\", \"bfloat16\"]")
    dtypes = tuple(raw["dtypes"])
    for dtype in dtypes:
        if dtype not in KNOWN_DTYPES:
            raise ProblemError(f"{toml_path}: dtype {dtype!r} unknown; use one of {', '.join(KNOWN_DTYPES)}")
    tolerance = _tolerances(raw, dtypes, toml_path)
    seeds = raw.get("seeds", [1, 2, 3])
    if not isinstance(seeds, list) or not seeds or not all(isinstance(s, int) for s in seeds):
        raise ProblemError(f"{toml_path}: seeds must be a list of at least one integer")
    outputs = raw.get("output_dtypes")
    if outputs is not None:
        if not isinstance(outputs, list) or not outputs:
            raise ProblemError(f"{toml_path}: output_dtypes must be a list, one dtype per output (\"input\" means "
                               f"the case's dtype)")
        for dtype in outputs:
            if dtype != "input" and dtype not in OUTPUT_DTYPES:
                raise ProblemError(f"{toml_path}: output_dtypes names {dtype!r}; use \"input\" or one of "
                                   f"{', '.join(OUTPUT_DTYPES)}")
        outputs = tuple(outputs)
    forbid = raw.get("forbid", {})
    if not isinstance(forbid, dict):
        raise ProblemError(f"{toml_path}: [forbid] must be a table with calls = [...] and modules = [...]")
    for key in ("calls", "modules"):
        value = forbid.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ProblemError(f"{toml_path}: [forbid] {key} must be a list of dotted names")
    languages = _languages(raw, toml_path)
    _check_reference(path / "reference.py")
    tests = _cases(raw, "test", dtypes, toml_path)
    benchmarks = _cases(raw, "benchmark", dtypes, toml_path)
    if not tests or not benchmarks:
        raise ProblemError(f"{toml_path}: needs at least one [[test]] and one [[benchmark]] shape")
    return Problem(
        name=str(raw["name"]),
        description=str(raw.get("description", "")).strip(),
        path=path,
        dtypes=dtypes,
        seeds=tuple(seeds),
        tolerance=tolerance,
        tests=tests,
        benchmarks=benchmarks,
        cpu_benchmarks=_cases(raw, "cpu_benchmark", dtypes, toml_path) or tests[:1],
        forbid_calls=tuple(forbid.get("calls", [])),
        forbid_modules=tuple(forbid.get("modules", [])) + ("reference",),
        output_dtypes=outputs,
        languages=languages,
        accepts=_accepts(raw, tests, toml_path),
    )


def _languages(raw: dict, toml_path) -> tuple[str, ...]:
    """`languages = ["triton"]`: the candidate languages the problem accepts (the first is a run's default)."""
    from ....lang import DEFAULT, names

    languages = raw.get("languages", [DEFAULT])
    if not isinstance(languages, list) or not languages or not all(isinstance(x, str) for x in languages):
        raise ProblemError(f"{toml_path}: languages must be a non-empty list of candidate languages, e.g. "
                           f"[\"{DEFAULT}\"]")
    known = names()
    for language in languages:
        if language not in known:
            raise ProblemError(f"{toml_path}: languages names {language!r}; the languages here are "
                               f"{', '.join(known)}")
    return tuple(languages)



class NativeReference(Reference):
    """reference.py of an evolve problem folder: generate_input(seed, **case) and ref_kernel(*inputs) in float64."""

    def __init__(self, problem: Problem):
        super().__init__(problem)
        self.module = import_file(problem.reference_path, "evolve_reference")

    def generate(self, case, seed, device):
        return Inputs(as_tuple(self.module.generate_input(seed, device=device, **case.kwargs)))

    def reference(self, inputs, on_cpu):
        leaves = tuple(t.to("cpu" if on_cpu else t.device).clone() if isinstance(t, torch.Tensor) else t
                       for t in inputs.leaves)
        return as_tuple(self.module.ref_kernel(*leaves))

    @property
    def has_baseline(self):
        return hasattr(self.module, "baseline")

    def baseline(self, *leaves):
        return self.module.baseline(*leaves)

    def formula(self, name, case):
        return getattr(self.module, name)(**case.kwargs)
