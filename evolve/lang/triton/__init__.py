"""The Triton candidate language: its contract and rules (rules.py), as the interface (evolve/lang) hands it out."""
from __future__ import annotations

from .. import Language, StaticRules
from . import rules

LANGUAGE = Language(
    name="triton",
    rules=StaticRules(
        allowed_modules=rules.ALLOWED_MODULES, host_torch_compute=rules.HOST_TORCH_COMPUTE,
        host_torch_allocation=rules.HOST_TORCH_ALLOCATION, host_data_escapes=rules.HOST_DATA_ESCAPES,
        kernel_tensor_escapes=rules.JIT_TENSOR_ESCAPES, kernel_introspection_builtins=rules.JIT_INTROSPECTION_BUILTINS,
        kernel_introspection_attributes=rules.JIT_INTROSPECTION_ATTRIBUTES, kernel_decorators=rules.JIT_DECORATORS,
        kernel_modules=rules.JIT_MODULES, kernel_helpers=rules.JIT_HELPERS, rules=rules.RULES),
    prompt_contract=rules.prompt_contract,
    readme_table=rules.readme_table,
    without_gpu="interpret",  # Triton's interpreter runs a kernel on the CPU; the compile-only runner builds sm_90a
    artifact_kinds=("sass", "ptx", "ttgir", "ttir", "llir"),
)
