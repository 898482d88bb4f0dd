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


def cuda_only_inputs_here(problem: Problem) -> str | None:
    """Whether the problem makes its inputs on CUDA, found in this process (the jailed child's side of
    harness/parent/problem_facts.py)."""
    case = min(problem.tests, key=lambda c: sum(v for _, v in c.params if isinstance(v, int)) or 0)
    try:
        reference_for(problem).generate(case, 0, "cpu")
        return None
    except Exception as exc:  # noqa: BLE001 - the problem's own code
        said = f"{type(exc).__name__}: {str(exc).split('. ')[0]}"
        return (f"{problem.name} makes its inputs on CUDA ({said.splitlines()[0][:120]}) and this machine has no "
                "GPU: evaluate it on a machine with one") if any(mark in said for mark in CUDA_ONLY) else None


def input_bytes_here(problem: Problem) -> int:
    """The bytes of a KernelBench file's inputs for one call, found in this process (the jailed child's side of
    harness/parent/problem_facts.py)."""
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


def shapes_ahead(problem, secret: int, device) -> dict:
    """The inputs of the compile rung's calls ("tests") and of each benchmark case's first call ("benchmarks"),
    described (shape, strides, dtype; other values as they are) from the problem's generator run under
    FakeTensorMode: no memory, no data. Run where the problem's code runs: the measurer for an evolve problem, a
    foreign problem's own process (harness/runner/problem_process.py) for the others; harness/measurer/ahead.py hands
    them on."""
    import json
    import sys

    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode

    from ..seeds import COMPILE_SEED, WARM_SEED, mix
    from .base import dtype_name

    parts = {"tests": [(case, COMPILE_SEED) for case in problem.tests],
             "benchmarks": [(case, WARM_SEED) for case in problem.benchmarks]}
    # A reference of its own, with the modules it imports put back after: a format that keeps what its generator
    # first made (KernelBench keeps the first model) must not keep fake tensors for the real calls.
    modules = dict(sys.modules)
    try:
        reference = reference_for(problem)
    finally:
        for name, module in modules.items():
            if sys.modules.get(name) is not module:
                sys.modules[name] = module
    described: dict = {}
    for part, wanted in parts.items():
        sets = described[part] = []
        for case, seed in wanted:
            try:
                with FakeTensorMode():
                    inputs = reference.generate(case, mix(secret, seed, case.seed), device)
                    # the runner's inputs are contiguous copies (shared memory), whatever the generator's strides
                    descs = [{"shape": list(v.shape), "stride": list(torch.empty(v.shape, device="meta").stride()),
                              "dtype": dtype_name(v)}
                             if isinstance(v, torch.Tensor) else {"value": v} for v in inputs.leaves]
                json.dumps(descs)
            except Exception:  # noqa: BLE001 - a generator that needs real data: that case compiles on the card
                continue
            sets.append({"inputs": descs, "tree": inputs.tree})
    return described
