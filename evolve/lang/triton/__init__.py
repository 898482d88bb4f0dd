"""The Triton candidate language: its contract and rules (rules.py), its half of the runner (runner_side.py, with
launches.py and interpreter.py), as the interface (evolve/lang) hands it out."""
from __future__ import annotations

from pathlib import Path

from .. import Language, StaticRules, host
from . import rules



def _runner_side(mode: str):
    from .runner_side import RunnerSide

    return RunnerSide(mode)


def _runner_env(name: str, folder: Path) -> dict:
    """Triton's caches in the runner's own folder; the interpreter runner runs kernels under TRITON_INTERPRET."""
    env = {"TRITON_CACHE_DIR": str(folder / "triton"), "TRITON_HOME": str(folder)}
    if name == "interpret":
        env["TRITON_INTERPRET"] = "1"
    return env


LANGUAGE = Language(
    name="triton",
    rules=StaticRules(
        allowed_modules=rules.ALLOWED_MODULES, host_torch_compute=host.HOST_TORCH_COMPUTE,
        host_torch_allocation=host.HOST_TORCH_ALLOCATION, host_data_escapes=host.HOST_DATA_ESCAPES,
        kernel_tensor_escapes=host.KERNEL_TENSOR_ESCAPES,
        kernel_introspection_builtins=host.KERNEL_INTROSPECTION_BUILTINS,
        kernel_introspection_attributes=host.KERNEL_INTROSPECTION_ATTRIBUTES, kernel_decorators=rules.JIT_DECORATORS,
        kernel_modules=rules.JIT_MODULES, kernel_helpers=rules.JIT_HELPERS, rules=rules.RULES),
    prompt_contract=rules.prompt_contract,
    rule_table=rules.rule_table,
    without_gpu="interpret",  # Triton's interpreter runs a kernel on the CPU; the compile-only runner builds sm_90a
    artifact_kinds=("sass", "ptx", "ttgir", "ttir", "llir"),
    runner_side=_runner_side,
    runner_env=_runner_env,
    cache_folder="triton",
    context_folder="triton",  # context/triton: the project's Triton notes
    warm_modules=("triton", "triton.language", "evolve.lang.triton.runner_side", "evolve.lang.triton.launches",
                  "evolve.lang.triton.interpreter",
                  "torch._higher_order_ops.triton_kernel_wrap",  # a launch under the runner's op log (dynamo, sympy)
                  "triton.compiler.compiler", "triton.backends.nvidia.compiler", "triton.backends.nvidia.driver"),
)
