"""The TileLang candidate language (tile-ai's tilelang): its contract and rules (rules.py) and its half of the runner
(runner_side.py), as the interface (evolve/lang) hands it out. It has no CPU interpreter: without a GPU a candidate
is loaded and compiled for sm_90a (TileLang lowers to CUDA C, nvcc builds it), and the rungs that need its kernels to
run are skipped."""
from __future__ import annotations

import json
from pathlib import Path

from .. import Language, StaticRules, host
from . import rules

HOPPER = {"kind": "cuda", "arch": "sm_90a"}  # what the compile-only runner compiles for (no card to ask)


def _runner_side(mode: str):
    from .runner_side import RunnerSide

    return RunnerSide(mode)


def _runner_env(name: str, folder: Path) -> dict:
    """TileLang's kernel cache in the runner's own folder (nothing shared across evaluations), its per-compile
    banner off; the compile-only runner names its target, having no card to ask."""
    env = {"TILELANG_CACHE_DIR": str(folder / "tilelang"), "TILELANG_PRINT_ON_COMPILATION": "0"}
    if name == "compile":
        env["TILELANG_DEFAULT_TARGET"] = json.dumps(HOPPER)
    return env


LANGUAGE = Language(
    name="tilelang",
    rules=StaticRules(
        allowed_modules=rules.ALLOWED_MODULES, host_torch_compute=host.HOST_TORCH_COMPUTE,
        host_torch_allocation=host.HOST_TORCH_ALLOCATION, host_data_escapes=host.HOST_DATA_ESCAPES,
        kernel_tensor_escapes=host.KERNEL_TENSOR_ESCAPES,
        kernel_introspection_builtins=host.KERNEL_INTROSPECTION_BUILTINS,
        kernel_introspection_attributes=frozenset(), kernel_decorators=rules.KERNEL_DECORATORS,
        kernel_modules=rules.KERNEL_MODULES, kernel_helpers=rules.KERNEL_HELPERS, rules=rules.RULES,
        kernel_markers=rules.KERNEL_MARKERS, kernel_word="@T.prim_func or @T.macro",
        kernel_module="tilelang.language", kernel_names="tilelang.language, math and operator",
        launches="TileLang kernels"),
    prompt_contract=rules.prompt_contract,
    rule_table=rules.rule_table,
    without_gpu="compile",  # no interpreter: sm_90a compiles on any machine with nvcc, nothing runs without a card
    artifact_kinds=("sass", "ptx", "cu"),
    runner_side=_runner_side,
    runner_env=_runner_env,
    cache_folder="tilelang",
    cache_levels=4,  # <version>/<platform>/kernels/<key>/executable.so, <version>/cuda-binaries/<key>/kernel.cubin
    warm_modules=("tilelang", "tilelang.language", "evolve.lang.tilelang.runner_side"),
    prompt_folder="tilelang",
    context_folder="tilelang",  # context/tilelang: the project's own TileLang notes and their examples
    # the DSL's own API, as installed: its models search the docstrings and code of what they call
    context_sources=("tilelang/language",),
    requires=("tilelang",),
    install="pip install 'evolve[tilelang]'",
)
