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
        near = Path("problems") / path.name
        hint = f"; did you mean {near}?" if not path.is_absolute() and near.is_dir() and near != path else ""
        raise ProblemError(f"{target}: not a folder; a problem is a folder holding problem.toml and reference.py "
                           f"(or a GPU MODE task.yml and reference.py, or a KernelBench .py file){hint}")
    if (path / "problem.toml").exists():
        return "evolve"
    if (path / "task.yml").exists() or (path / "task.yaml").exists():
        return "gpumode"
    inside = sorted(p.name for p in path.iterdir() if p.is_dir() and (p / "problem.toml").exists())
    if inside:  # a folder of problem folders given where one problem was asked for: say which to name
        listed = ", ".join(inside[:8]) + (", ..." if len(inside) > 8 else "")
        raise ProblemError(f"{target}: a folder of problems ({listed}), not a problem; name one of them, e.g. "
                           f"{Path(str(target)) / inside[0]}")
    fresh = f"`evolve init {target}` writes one there" if not any(path.iterdir()) else \
        "`evolve init NEW_FOLDER` writes a new one"
    raise ProblemError(f"{path / 'problem.toml'}: missing; see docs/problems.md (a GPU MODE task folder "
                       f"holds task.yml instead; {fresh})")



def load_problem(target) -> Problem:
    """Read and validate a problem in any of the formats (a Problem already read is returned as it is); raises
    ProblemError with what to fix."""
    return target if isinstance(target, Problem) else load(target)


def load(target) -> Problem:
    path = Path(target).resolve()
    kind = detect(target)  # its messages name the target as given
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
_here: dict = {}  # why a problem cannot be evaluated on this machine, by kind and path, once per process


def cuda_only_inputs(problem: Problem) -> str | None:
    """Why a foreign problem cannot be evaluated on a machine without a GPU, or None: its generator makes its inputs
    on CUDA (10 of GPU MODE's 11 tasks do). Tried once per problem, in a jailed child (foreign_facts)."""
    return foreign_facts(problem)["cuda_only"]


def foreign_facts(problem: Problem) -> dict:
    """{"cuda_only": cuda_only_inputs's answer, "input_bytes": input_bytes's}, found once per problem by running the
    problem's generator, which is code from elsewhere: in a jailed child (harness/jailed.py), never in this process.
    A child that gives no answer leaves both unknown (None, 0): the evaluation then finds out in its own processes."""
    if problem.format == "evolve" or not problem.tests:
        return {"cuda_only": None, "input_bytes": 0}
    key = ("facts", str(problem.path))
    if key not in _here:
        import torch

        from .. import jailed

        answer = jailed.ask("foreign_facts", {"problem": str(problem.path)}, FACTS_LIMIT_S,
                            card=torch.cuda.is_available(), runner_user=False)  # as an evaluation's measurer sees
        cuda_only, size = answer.get("cuda_only"), answer.get("input_bytes")
        _here[key] = {"cuda_only": cuda_only if isinstance(cuda_only, str) else None,
                      "input_bytes": size if isinstance(size, int) and not isinstance(size, bool) else 0}
    return _here[key]


FACTS_LIMIT_S = 180.0  # a cold torch import and the generator's smallest case on the host


def cuda_only_inputs_here(problem: Problem) -> str | None:
    """cuda_only_inputs, found in this process (the jailed child's side)."""
    case = min(problem.tests, key=lambda c: sum(v for _, v in c.params if isinstance(v, int)) or 0)
    try:
        reference_for(problem).generate(case, 0, "cpu")
        return None
    except Exception as exc:  # noqa: BLE001 - the problem's own code
        said = f"{type(exc).__name__}: {str(exc).split('. ')[0]}"
        return (f"{problem.name} makes its inputs on CUDA ({said.splitlines()[0][:120]}) and this machine has no "
                "GPU: evaluate it on a machine with one") if any(mark in said for mark in CUDA_ONLY) else None


CHECK_MEMORY_FACTOR = 3  # the inputs, the reference's float64 copies of float32 ones, and the outputs beside them


def input_bytes(problem: Problem) -> int:
    """The bytes of a KernelBench file's inputs for one call, its inputs drawn on meta tensors (which cost nothing);
    0 for other formats or code that cannot run on meta tensors. Today's KernelBench sizes draw 4-9 GB."""
    return foreign_facts(problem)["input_bytes"] if problem.format == "kernelbench" else 0


def input_bytes_here(problem: Problem) -> int:
    """input_bytes, found in this process (the jailed child's side)."""
    if problem.format != "kernelbench":
        return 0
    import torch

    from .base import nbytes

    try:
        with torch.device("meta"):
            sample = reference_for(problem).generate(problem.tests[0], 0, "meta")
        return nbytes(sample.leaves)
    except Exception:  # noqa: BLE001 - code that cannot run on meta tensors: left to the evaluation
        return 0


def too_large_here(problem: Problem) -> str | None:
    """Why a KernelBench file's inputs cannot be checked in this machine's memory (on the host, as check-problem and
    an evaluation without a GPU check them), or None: its inputs weighed (input_bytes) against the memory available
    now."""
    need = input_bytes(problem) * CHECK_MEMORY_FACTOR
    free = available_memory()
    if not (free and need > free):
        return None
    return (f"{problem.name}: its inputs take {need / CHECK_MEMORY_FACTOR / 2**30:.1f} GB and checking them about "
            f"{need / 2**30:.0f} GB (float64 copies for the reference), more than the {free / 2**30:.0f} GB this "
            "machine has free: check it on a machine with more memory (a GPU machine evaluates on the card)")


def available_memory() -> int:
    """Bytes of host memory available now (MemAvailable), 0 where /proc/meminfo says nothing."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def cannot_run_here(problem: Problem) -> str | None:
    """Why this machine, without a GPU, cannot evaluate the problem at all (said before any process starts)."""
    return cuda_only_inputs(problem) or too_large_here(problem)
