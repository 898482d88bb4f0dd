"""A problem folder: problem.toml, reference.py, seeds/, solutions/, notes.md.

Loading validates everything a later rung relies on, so a malformed folder fails here with a message that names the
file and the field, never halfway through an evaluation.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

KNOWN_DTYPES = ("float32", "bfloat16", "float16")
SHORT_DTYPE = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}  # in labels: "bf16 4096x1024"
REFERENCE_FUNCTIONS = ("generate_input", "ref_kernel", "bytes_moved", "flops")


class ProblemError(ValueError):
    """The problem folder is malformed; the message says which file and what to fix."""


@dataclass(frozen=True)
class Tolerance:
    """An element fails when |out - ref| > rtol * max(|ref|, floor); the whole output also needs min_cosine."""

    rtol: float
    floor: float
    min_cosine: float


@dataclass(frozen=True)
class Case:
    """One shape in one dtype: the keyword arguments of generate_input, bytes_moved and flops."""

    shape: tuple[tuple[str, int], ...]
    dtype: str

    @property
    def kwargs(self) -> dict:
        return {**dict(self.shape), "dtype": self.dtype}

    @property
    def label(self) -> str:
        short = SHORT_DTYPE.get(self.dtype, self.dtype)
        return f"{short} {'x'.join(str(v) for _, v in self.shape)}"


@dataclass(frozen=True)
class Problem:
    name: str
    description: str
    path: Path
    dtypes: tuple[str, ...]
    seeds: tuple[int, ...]
    tolerance: dict
    tests: tuple[Case, ...]
    benchmarks: tuple[Case, ...]
    cpu_benchmarks: tuple[Case, ...]
    forbid_calls: tuple[str, ...]
    forbid_modules: tuple[str, ...]

    @property
    def reference_path(self) -> Path:
        return self.path / "reference.py"

    @property
    def notes(self) -> str:
        notes = self.path / "notes.md"
        return notes.read_text() if notes.exists() else ""

    def seed_files(self) -> list[Path]:
        return sorted((self.path / "seeds").glob("*.py"))


def _cases(raw, key: str, dtypes: tuple[str, ...], where: Path) -> tuple[Case, ...]:
    entries = raw.get(key, [])
    if not isinstance(entries, list):
        raise ProblemError(f"{where}: [[{key}]] must be an array of tables, each with shape = {{...}}")
    cases = []
    for i, entry in enumerate(entries):
        shape = entry.get("shape") if isinstance(entry, dict) else None
        if not isinstance(shape, dict) or not shape:
            raise ProblemError(f"{where}: [[{key}]] entry {i + 1} needs shape = {{ NAME = int, ... }}")
        for name, value in shape.items():
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ProblemError(f"{where}: [[{key}]] entry {i + 1}: {name} = {value!r} must be a positive integer")
        entry_dtypes = entry.get("dtypes", list(dtypes))
        for dtype in entry_dtypes:
            if dtype not in dtypes:
                raise ProblemError(f"{where}: [[{key}]] entry {i + 1} names dtype {dtype!r}, not in dtypes {list(dtypes)}")
            cases.append(Case(tuple(shape.items()), dtype))
    return tuple(cases)


def _check_reference(path: Path) -> None:
    if not path.exists():
        raise ProblemError(f"{path}: missing; it must define {', '.join(REFERENCE_FUNCTIONS)}")
    try:
        tree = ast.parse(path.read_text(), filename=str(path))
    except SyntaxError as exc:
        raise ProblemError(f"{path}:{exc.lineno}: syntax error: {exc.msg}") from exc
    defined = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
    missing = [name for name in REFERENCE_FUNCTIONS if name not in defined]
    if missing:
        raise ProblemError(f"{path}: missing function(s) {', '.join(missing)} (see README, 'Problem folder')")


def load_problem(folder) -> Problem:
    """Read and validate a problem folder; raises ProblemError with what to fix."""
    path = Path(folder).resolve()
    if not path.is_dir():
        raise ProblemError(f"{folder}: not a folder; a problem is a folder holding problem.toml and reference.py")
    toml_path = path / "problem.toml"
    if not toml_path.exists():
        raise ProblemError(f"{toml_path}: missing; see README, 'Problem folder'")
    try:
        raw = tomllib.loads(toml_path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise ProblemError(f"{toml_path}: not valid TOML: {exc}") from exc

    for field in ("name", "dtypes", "tolerance", "test", "benchmark"):
        if field not in raw:
            raise ProblemError(f"{toml_path}: missing field {field!r}")
    dtypes = tuple(raw["dtypes"])
    for dtype in dtypes:
        if dtype not in KNOWN_DTYPES:
            raise ProblemError(f"{toml_path}: dtype {dtype!r} unknown; use one of {', '.join(KNOWN_DTYPES)}")
    tolerance = {}
    for dtype in dtypes:
        entry = raw["tolerance"].get(dtype)
        if not isinstance(entry, dict):
            raise ProblemError(f"{toml_path}: missing [tolerance.{dtype}] with rtol, floor and min_cosine")
        try:
            tolerance[dtype] = Tolerance(float(entry["rtol"]), float(entry["floor"]), float(entry["min_cosine"]))
        except KeyError as exc:
            raise ProblemError(f"{toml_path}: [tolerance.{dtype}] lacks {exc.args[0]!r}") from exc
    seeds = tuple(int(s) for s in raw.get("seeds", [1, 2, 3]))
    if not seeds:
        raise ProblemError(f"{toml_path}: seeds must hold at least one integer")
    forbid = raw.get("forbid", {})
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
        seeds=seeds,
        tolerance=tolerance,
        tests=tests,
        benchmarks=benchmarks,
        cpu_benchmarks=_cases(raw, "cpu_benchmark", dtypes, toml_path) or tests[:1],
        forbid_calls=tuple(forbid.get("calls", [])),
        forbid_modules=tuple(forbid.get("modules", [])) + ("reference",),
    )
