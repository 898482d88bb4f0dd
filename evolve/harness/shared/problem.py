"""What a problem is, whatever file format it came in: cases, tolerances, forbidden calls, where its reference is.

Three formats load into the same `Problem` (harness/shared/formats/): evolve's own folder (problem.toml + reference.py),
a GPU MODE task folder (task.yml + reference.py) and a KernelBench file (`class Model`, `get_inputs`,
`get_init_inputs`). Loading validates everything a later rung relies on, so a malformed problem fails here with a
message that names the file and the field, never halfway through an evaluation. Loading reads files only: it never
runs the problem's code (the measurer does that, harness/measurer/measurer.py).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

KNOWN_DTYPES = ("float32", "bfloat16", "float16")
INTEGER_DTYPES = ("int64", "int32", "int16", "int8", "uint8", "bool")
OUTPUT_DTYPES = KNOWN_DTYPES + ("float64",) + INTEGER_DTYPES
SHORT_DTYPE = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}  # in labels: "bf16 4096x1024"


class ProblemError(ValueError):
    """The problem is malformed; the message says which file and what to fix."""


@dataclass(frozen=True)
class Tolerance:
    """An element fails when |out - ref| > rtol * max(|ref|, floor); the whole output also needs min_cosine, and a
    relative L2 error rms(out - ref) / max(rms(ref), floor) within sqrt(2(1 - min_cosine)) (metrics.l2_bound), so
    that an output of the wrong scale fails even where the cosine, blind to scale, passes it."""

    rtol: float
    floor: float
    min_cosine: float


# Integer outputs are compared exactly: one element off fails.
EXACT = Tolerance(rtol=0.0, floor=1.0, min_cosine=-1.0)
# A foreign format brings its own element-wise check (GPU MODE's check_implementation, KernelBench's allclose);
# evolve adds finiteness, shape and dtype, and per output dtype a cosine similarity and the relative L2 error it
# implies (0.45% in float32, 4.5% in bfloat16 and float16), which catch a wholly wrong output, or one of the wrong
# scale, whatever the format's own check says (an absolute atol passes zeros where every value is ~1e-4).
FOREIGN_COSINE = {"float64": 0.999999, "float32": 0.99999, "bfloat16": 0.999, "float16": 0.999}


@dataclass(frozen=True)
class Case:
    """One shape (and its other parameters) in one dtype: the keyword arguments of the problem's functions.

    `dtype` is None where the format has no dtype axis (GPU MODE, KernelBench: the generator picks it). `seed` is a
    foreign format's own seed for the case; evolve mixes it with the evaluation's secret, as it does its own seeds."""

    shape: tuple[tuple[str, int], ...]
    dtype: str | None
    params: tuple[tuple[str, object], ...] = ()
    seed: int | None = None
    weight: float = 1.0  # how much a benchmark case counts in the fitness (a weighted geometric mean): how often it
    # runs, where the problem says

    @property
    def kwargs(self) -> dict:
        extra = {"dtype": self.dtype} if self.dtype is not None else {}
        return {**dict(self.shape), **dict(self.params), **extra}

    @property
    def label(self) -> str:
        if self.dtype is None:  # a foreign case: every argument by name, "k=7168 m=16 n=1536"
            return " ".join(f"{k}={v}" for k, v in (*self.shape, *self.params)) or "default"
        short = SHORT_DTYPE.get(self.dtype, self.dtype)
        text = f"{short} {'x'.join(str(v) for _, v in self.shape)}"
        return " ".join([text, *(f"{k}={v}" for k, v in self.params)])


@dataclass(frozen=True)
class Problem:
    name: str
    description: str
    path: Path  # the folder (or, for KernelBench, the file) that `evolve run` and `evolve eval` were given
    dtypes: tuple[str, ...]
    seeds: tuple[int, ...]
    tolerance: dict
    tests: tuple[Case, ...]
    benchmarks: tuple[Case, ...]
    cpu_benchmarks: tuple[Case, ...]
    forbid_calls: tuple[str, ...]
    forbid_modules: tuple[str, ...]
    format: str = "evolve"  # "evolve", "gpumode" or "kernelbench"
    reference_path: Path | None = None  # the file whose functions the measurer calls
    output_dtypes: tuple[str, ...] | None = None  # per output; "input" is the case's dtype; None: every one
    contract: str = ""  # how custom_kernel is called, where the format differs from custom_kernel(*inputs)
    languages: tuple[str, ...] = ("triton",)  # the candidate languages it accepts (evolve/lang), the first the default
    extra: dict = field(default_factory=dict, compare=False)  # format-specific settings the measurer reads
    # what its kernels must accept, per dimension: {"min", "max"[, "multiple_of"]} or {"one_of"}
    # (harness/measurer/drawn_shapes.py)
    accepts: tuple[tuple[str, dict], ...] = ()

    def __post_init__(self):
        if self.reference_path is None:
            object.__setattr__(self, "reference_path", self.path / "reference.py")

    @property
    def folder(self) -> Path:
        return self.path if self.path.is_dir() else self.path.parent

    @property
    def notes(self) -> str:
        notes = self.folder / "notes.md"
        return notes.read_text() if self.path.is_dir() and notes.exists() else ""

    def beside_files(self) -> dict[str, Path]:
        """The format's files a candidate may import, copied beside it under their names (GPU MODE's task.py), and
        where they are: task.yml's `files:` may name them from elsewhere."""
        files = self.extra.get("files") or {}
        found = {name: Path(files.get(name, self.folder / name)) for name in self.extra.get("beside", ())}
        return {name: path for name, path in found.items() if path.is_file()}

    def seed_files(self, language: str | None = None) -> list[Path]:
        """seeds/: the problem's first language's at its top, another language's in a folder of its name."""
        return sorted(self._in_language(self.path / "seeds", language).glob("*.py")) if self.path.is_dir() else []

    def solution_files(self, kind: str, language: str | None = None) -> list[Path]:
        """solutions/correct or solutions/wrong kernels (each says on its first line the verdict it must get), laid
        out by language as seeds/ is."""
        folder = self._in_language(self.path / "solutions" / kind, language)
        found = sorted(folder.glob("*.py")) if self.path.is_dir() else []
        if self.format != "evolve":  # upstream's own solutions/ (GPU MODE's ref.py, empty.py) are not evolve's tests
            found = [path for path in found if _says_expect(path)]
        return found

    def _in_language(self, folder: Path, language: str | None) -> Path:
        return folder if language is None or language == self.languages[0] else folder / language

    def output_dtype(self, index: int, case: Case, produced: str) -> str:
        """The dtype output `index` must have: the problem's declaration, else what the reference produced (foreign
        formats), else the case's dtype."""
        if self.output_dtypes is None:
            return produced if case.dtype is None else case.dtype
        if index >= len(self.output_dtypes):
            return case.dtype or produced
        declared = self.output_dtypes[index]
        return (case.dtype or produced) if declared == "input" else declared

    def tolerance_for(self, case: Case, dtype: str) -> Tolerance:
        """The correctness policy for one output of this dtype in this case."""
        if dtype in INTEGER_DTYPES:
            return EXACT
        if case.dtype is not None and case.dtype in self.tolerance:
            return self.tolerance[case.dtype]
        if dtype in self.tolerance:
            return self.tolerance[dtype]
        return foreign_tolerance(dtype)


def foreign_tolerance(dtype: str) -> Tolerance:
    """evolve's guard on a foreign format's float output: no element-wise rule (the format's own check is that), the
    whole output's cosine and relative L2 error; where the reference is all zero the output must be zero too."""
    return Tolerance(rtol=math.inf, floor=1e-30, min_cosine=FOREIGN_COSINE.get(dtype, 0.99))


def _says_expect(path: Path) -> bool:
    """Whether a file starts with evolve's test metadata line (`# expect: ...`)."""
    with path.open(errors="replace") as handle:
        return handle.readline().lstrip().startswith("# expect:")
