"""Problem formats: evolve's own folders, GPU MODE task folders and KernelBench files, loaded into one `Problem`.

`load(target)` tells the format from what it is given (docs/problems.md); `reference_for(problem)` is the
measurer's handle on the problem's own code. Each format is a module of its own: its loader, its reference and its
export (`evolve best --export-format`).
"""
from __future__ import annotations

from pathlib import Path

from ..problem import Problem, ProblemError

FORMATS = ("evolve", "gpumode", "kernelbench")


def detect(target) -> str:
    path = Path(target)
    if path.is_file():
        if path.suffix != ".py":
            raise ProblemError(f"{target}: a problem is a folder (problem.toml or task.yml) or a KernelBench .py file")
        return "kernelbench"
    if not path.is_dir():
        raise ProblemError(f"{target}: not a folder; a problem is a folder holding problem.toml and reference.py "
                           f"(or a GPU MODE task.yml and reference.py, or a KernelBench .py file)")
    if (path / "problem.toml").exists():
        return "evolve"
    if (path / "task.yml").exists() or (path / "task.yaml").exists():
        return "gpumode"
    raise ProblemError(f"{path / 'problem.toml'}: missing; see docs/problems.md (a GPU MODE task folder "
                       f"holds task.yml instead; `evolve init {target}` writes a new folder)")


def load_problem(target) -> Problem:
    """Read and validate a problem in any of the formats (a Problem already read is returned as it is); raises
    ProblemError with what to fix."""
    return target if isinstance(target, Problem) else load(target)


def load(target) -> Problem:
    path = Path(target).resolve()
    kind = detect(path)
    if kind == "evolve":
        from . import native

        return native.load(path)
    if kind == "gpumode":
        from . import gpumode

        return gpumode.load(path)
    from . import kernelbench

    return kernelbench.load(path)


def reference_for(problem: Problem):
    """The measurer's handle on the problem's code (imports it: only the measurer calls this)."""
    if problem.format == "gpumode":
        from .gpumode import GpuModeReference

        return GpuModeReference(problem)
    if problem.format == "kernelbench":
        from .kernelbench import KernelBenchReference

        return KernelBenchReference(problem)
    from .native import NativeReference

    return NativeReference(problem)


def export(source: str, problem: Problem, fmt: str) -> str:
    """A kernel's source as a submission in another format (`evolve best --export-format`)."""
    if fmt == "evolve":
        return source
    if fmt == "gpumode":
        from .gpumode import export as to_gpumode

        return to_gpumode(source, problem)
    if fmt == "kernelbench":
        from .kernelbench import export as to_kernelbench

        return to_kernelbench(source, problem)
    raise ValueError(f"unknown export format {fmt!r}; use one of {', '.join(FORMATS)}")


CUDA_ONLY = ("Torch not compiled with CUDA", "Found no NVIDIA driver", "no CUDA GPUs are available",
             "CUDA driver initialization failed", "without ATen_cuda")
_cuda_only: dict = {}


def cuda_only_inputs(problem: Problem) -> str | None:
    """Why a foreign problem cannot be evaluated on a machine without a GPU, or None: its generator makes its inputs
    on CUDA (10 of GPU MODE's 11 tasks do). Tried once per problem on its smallest test case, in this process."""
    if problem.format == "evolve" or not problem.tests:
        return None
    key = str(problem.path)
    if key not in _cuda_only:
        case = min(problem.tests, key=lambda c: sum(v for _, v in c.params if isinstance(v, int)) or 0)
        try:
            reference_for(problem).generate(case, 0, "cpu")
            _cuda_only[key] = None
        except Exception as exc:  # noqa: BLE001 - the problem's own code
            said = f"{type(exc).__name__}: {str(exc).split('. ')[0]}"
            _cuda_only[key] = (f"{problem.name} makes its inputs on CUDA ({said.splitlines()[0][:120]}) and this "
                               "machine has no GPU: evaluate it on a machine with one") \
                if any(mark in said for mark in CUDA_ONLY) else None
    return _cuda_only[key]
