"""What the parent asks of a problem before it evaluates one: whether this machine can (a foreign problem that makes
its inputs on CUDA, a KernelBench file whose inputs outgrow the host's memory), and how large one call's inputs are.
A foreign problem's generator is code from elsewhere, so it runs in a jailed child (harness/parent/jailed.py, the work
"foreign_facts"), never in this process."""
from __future__ import annotations

from pathlib import Path

from ..shared.problem import Problem

_here: dict = {}  # why a problem cannot be evaluated on this machine, by kind and path, once per process


def cuda_only_inputs(problem: Problem) -> str | None:
    """Why a foreign problem cannot be evaluated on a machine without a GPU, or None: its generator makes its inputs
    on CUDA (10 of GPU MODE's 11 tasks do). Tried once per problem, in a jailed child (foreign_facts)."""
    return foreign_facts(problem)["cuda_only"]


def foreign_facts(problem: Problem) -> dict:
    """{"cuda_only": cuda_only_inputs's answer, "input_bytes": input_bytes's}, found once per problem by running the
    problem's generator, which is code from elsewhere: in a jailed child (harness/parent/jailed.py), never in this
    process. A child that gives no answer leaves both unknown (None, 0): the evaluation then finds out in its own
    processes."""
    if problem.format == "evolve" or not problem.tests:
        return {"cuda_only": None, "input_bytes": 0}
    key = ("facts", str(problem.path))
    if key not in _here:
        import torch

        from . import jailed

        answer = jailed.ask("foreign_facts", {"problem": str(problem.path)}, FACTS_LIMIT_S,
                            card=torch.cuda.is_available(), runner_user=False)  # as an evaluation's measurer sees
        cuda_only, size = answer.get("cuda_only"), answer.get("input_bytes")
        _here[key] = {"cuda_only": cuda_only if isinstance(cuda_only, str) else None,
                      "input_bytes": size if isinstance(size, int) and not isinstance(size, bool) else 0}
    return _here[key]


FACTS_LIMIT_S = 180.0  # a cold torch import and the generator's smallest case on the host


CHECK_MEMORY_FACTOR = 3  # the inputs, the reference's float64 copies of float32 ones, and the outputs beside them


def input_bytes(problem: Problem) -> int:
    """The bytes of a KernelBench file's inputs for one call, its inputs drawn on meta tensors (which cost nothing);
    0 for other formats or code that cannot run on meta tensors. Today's KernelBench sizes draw 4-9 GB."""
    return foreign_facts(problem)["input_bytes"] if problem.format == "kernelbench" else 0


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
