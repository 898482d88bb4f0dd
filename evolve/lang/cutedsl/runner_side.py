"""CuTeDSL's half of the runner (harness/runner/runner.py asks for it through evolve.lang), installed before the
candidate is imported: every `cute.compile` is timed and its compiled function kept (its PTX and cubin, kept by the DSL
because the runner's environment asks for them: lang/cutedsl/__init__.py), and every run of a compiled program is
counted. In the compile-only runner (no GPU: the DSL targets sm_90a) a compiled program is counted and not run.

It runs in the runner, beside candidate code: what it says is a first line that gives a model early, clear reasons.
No verdict depends on it."""
from __future__ import annotations

import os
import time
from pathlib import Path

from ..compiled import describe_kernels, dump_kernel


class RunnerSide:
    display = "CuTeDSL"
    nothing_launched = ("no CuTeDSL kernel ran in custom_kernel: the computation must run in @cute.kernel functions, "
                        "launched from a @cute.jit function that cute.compile compiled and custom_kernel called")

    def __init__(self, mode: str):
        """mode: 'gpu' (run and count), 'compile' (compile for sm_90a, count, run nothing)."""
        from cutlass.base_dsl.compiler import CompileCallable
        from cutlass.base_dsl.jit_executor import JitCompiledFunction, JitExecutor

        kept = os.environ.get("CUTE_DSL_DUMP_DIR")  # where the DSL writes the PTX and cubin it is asked to keep
        if kept:
            Path(kept).mkdir(parents=True, exist_ok=True)
        self.launches = 0
        self.kernels: dict[str, object] = {}  # "function name/id" -> the compiled function
        self.compile_seconds = 0.0
        side = self
        compile_original = CompileCallable._compile

        names: dict[int, str] = {}  # id of a compiled function -> its key in kernels

        def compile_recorded(self, func, *args, **kwargs):
            began = time.perf_counter()
            compiled = compile_original(self, func, *args, **kwargs)
            side.compile_seconds += time.perf_counter() - began
            name = getattr(func, "__name__", None) or getattr(compiled, "function_name", None) or "kernel"
            names[id(compiled)] = f"{name}/{id(compiled)}"
            if mode != "compile":
                side.kernels.setdefault(names[id(compiled)], compiled)
            return compiled

        CompileCallable._compile = compile_recorded
        if mode == "compile":
            def counted_only(self, exe_args):
                # No device to run on. The compile rung is all a CPU sees of this language, so a kernel counts once
                # custom_kernel has called it, not when it was merely compiled.
                side.launches += 1
                side.kernels.setdefault(names.get(id(self), f"kernel/{id(self)}"), self)
                return 0

            JitCompiledFunction.run_compiled_program = counted_only
            return
        run_original = JitExecutor.run_compiled_program

        def counted(self, exe_args):
            side.launches += 1
            return run_original(self, exe_args)

        JitExecutor.run_compiled_program = counted

    def warm_up(self) -> str:
        import cutlass
        import cutlass.cute  # noqa: F401
        import cutlass.cute.runtime  # noqa: F401

        return cutlass.__version__

    def compile_figures(self) -> dict:
        return {"compile_seconds": round(self.compile_seconds, 3), "cache_hits": 0, "fresh": len(self.kernels)}

    @staticmethod
    def copy_is_its_own() -> bool:
        return False  # the DSL copies nothing on a candidate's behalf

    @staticmethod
    def is_compile_error(error: BaseException) -> bool:
        return type(error).__module__.startswith("cutlass") and "DSL" in type(error).__name__

    def _artifacts(self, compiled) -> dict:
        """The compiled function's PTX (text) and cubin (bytes), where the DSL kept them."""
        kept = getattr(getattr(compiled, "artifacts", None), "__dict__", {}) or {}
        out = {}
        for kind, key in (("ptx", "PTX"), ("cubin", "CUBIN")):
            value = kept.get(key)
            if isinstance(value, str) and kind == "cubin" and Path(value).is_file():
                value = Path(value).read_bytes()
            elif isinstance(value, str) and kind == "ptx" and not value.lstrip().startswith("//") \
                    and Path(value).is_file():
                value = Path(value).read_text()
            if value:
                out[kind] = value
        return out

    def describe(self, work: Path, sass: bool) -> list[dict]:
        return describe_kernels(self.kernels, self._artifacts, work, sass)

    def dump(self, info: dict, folder: Path, index: int) -> list[str]:
        """The index-th compiled function's PTX, cubin and (where read) SASS under folder; the file names."""
        return dump_kernel(info, folder, index, self._artifacts(list(self.kernels.values())[index]))

    def build_launchers(self) -> int:
        return 0  # the DSL builds its host launcher inside cute.compile
