"""The CuTeDSL candidate language (NVIDIA's nvidia-cutlass-dsl): its contract and rules (rules.py) and its half of the
runner (runner_side.py), as the interface (evolve/lang) hands it out. It has no CPU interpreter: without a GPU a
candidate is loaded and compiled for sm_90a, and the rungs that need its kernels to run are skipped."""
from __future__ import annotations

from pathlib import Path

from .. import Language, StaticRules, host
from . import rules

HOPPER = "sm_90a"  # what the compile-only runner compiles for (no card to ask)


def _runner_side(mode: str):
    from .runner_side import RunnerSide

    return RunnerSide(mode)


def _runner_env(name: str, folder: Path) -> dict:
    """The DSL's file cache and kept PTX and cubin in the runner's own folder (nothing shared across evaluations);
    the compile-only runner names its target, having no card to ask."""
    env = {"CUTE_DSL_CACHE_DIR": str(folder / "cutedsl"), "CUTE_DSL_DUMP_DIR": str(folder / "cutedsl-kept"),
           "CUTE_DSL_KEEP": "ptx,cubin"}
    if name == "compile":
        env["CUTE_DSL_ARCH"] = HOPPER
    return env


LANGUAGE = Language(
    name="cutedsl",
    rules=StaticRules(
        allowed_modules=rules.ALLOWED_MODULES, host_torch_compute=host.HOST_TORCH_COMPUTE,
        host_torch_allocation=host.HOST_TORCH_ALLOCATION, host_data_escapes=host.HOST_DATA_ESCAPES,
        kernel_tensor_escapes=host.KERNEL_TENSOR_ESCAPES,
        kernel_introspection_builtins=host.KERNEL_INTROSPECTION_BUILTINS,
        kernel_introspection_attributes=frozenset(), kernel_decorators=rules.KERNEL_DECORATORS,
        kernel_modules=rules.KERNEL_MODULES, kernel_helpers=rules.KERNEL_HELPERS, rules=rules.RULES,
        warp_uniform_calls=rules.WARP_UNIFORM_CALLS,
        kernel_markers=rules.KERNEL_MARKERS, kernel_word="@cute.jit or @cute.kernel", kernel_module="cutlass.cute",
        kernel_names="cutlass.cute, cutlass.utils, cutlass.pipeline, cutlass.memory, the DSL's numeric types and "
                     "control flow, math and operator",
        launches="CuTeDSL kernels"),
    prompt_contract=rules.prompt_contract,
    rule_table=rules.rule_table,
    without_gpu="compile",  # no interpreter: sm_90a compiles on any machine, nothing runs without a card
    artifact_kinds=("sass", "ptx"),
    runner_side=_runner_side,
    runner_env=_runner_env,
    cache_folder="cutedsl",
    warm_modules=("cutlass", "cutlass.cute", "cutlass.cute.runtime", "evolve.lang.cutedsl.runner_side"),
    prompt_folder="cutedsl",
    context_folder="cutedsl",  # context/cutedsl: the project's own CuTeDSL notes and their examples
    # the DSL's own API, as installed: its models search the docstrings and code of what they call
    context_sources=("cutlass/cute", "cutlass/utils", "cutlass/pipeline", "cutlass/memory"),
    requires=("cutlass",),
    install="pip install 'evolve[cutedsl]' (with CUDA 13: pip install 'nvidia-cutlass-dsl[cu13]')",
)
