"""Triton's half of the runner (harness/runner/runner.py asks for it through evolve.lang): installed before the
candidate is imported, it sees every launch (launches.py), keeps each compiled kernel, describes and dumps them for the
compile rung, builds launchers ahead, and under the CPU interpreter takes one of its costs once (interpreter.py).

It runs in the runner, beside candidate code: what it says is a first line that gives a model early, clear reasons.
No verdict depends on it."""
from __future__ import annotations

import sys
from pathlib import Path


class RunnerSide:
    display = "Triton"  # as messages name the language
    nothing_launched = ("no Triton kernel launched by custom_kernel: the computation must run in @triton.jit "
                        "kernels")

    def __init__(self, mode: str):
        """mode: 'gpu' (launch and record), 'compile' (sm_90 compile only), 'interpret' (the CPU interpreter)."""
        from .launches import LaunchLog

        self.log = LaunchLog()
        self.log.install(mode)
        if mode == "interpret":  # the same interpreter, its module listing taken once
            from .interpreter import speed_up

            speed_up()
        self.launched_ahead: set = set()  # kernels whose launcher build_launchers has built

    def warm_up(self) -> str:
        """What the first launch would import, taken while the runner is a spare; the language's version."""
        import triton

        try:
            # torch routes a Triton launch made under a dispatch mode (the runner's op log) through this module, whose
            # first import pulls in dynamo and sympy (3.5 s on the H200)
            import torch._higher_order_ops.triton_kernel_wrap  # noqa: F401
        except ImportError:
            pass
        return triton.__version__

    @property
    def launches(self) -> int:
        return self.log.launches

    @property
    def kernels(self) -> dict:
        return self.log.kernels

    def compile_figures(self) -> dict:
        return {"compile_seconds": round(self.log.compile_seconds, 3), "cache_hits": self.log.cache_hits,
                "fresh": self.log.fresh}

    @staticmethod
    def copy_is_its_own() -> bool:
        """Whether the copy the op log sees is Triton's autotuner saving or restoring arguments between configs
        (`restore_value`): code in triton/runtime/autotuner.py itself, which a candidate cannot write to. Called from
        the op log's __torch_dispatch__."""
        import torch

        torch_dir = str(Path(torch.__file__).parent)
        caller = sys._getframe(2)  # past this function and the op log's dispatch: torch's own wrappers, then the caller
        while caller is not None and caller.f_code.co_filename.startswith(torch_dir):
            caller = caller.f_back
        return caller is not None and caller.f_code.co_filename.replace("\\", "/").endswith(
            "triton/runtime/autotuner.py")

    @staticmethod
    def is_compile_error(error: BaseException) -> bool:
        """A CompilationError, or any error raised inside Triton's compiler or its backends (a pass that fails for
        one architecture raises a plain RuntimeError there): a kernel that compiled for some shapes only fails."""
        if type(error).__name__ == "CompilationError":
            return True
        import triton

        from ..errors import raised_inside

        root = Path(triton.__file__).parent
        return raised_inside(error, (str(root / "compiler") + "/", str(root / "backends") + "/"))

    def describe(self, work: Path, sass: bool) -> list[dict]:
        """Registers, spills, shared memory and architecture of each kernel compiled (and its SASS with sass)."""
        from .launches import describe_all

        return describe_all(list(self.log.kernels.values()), work, sass=sass)

    def dump(self, info: dict, folder: Path, index: int) -> list[str]:
        """The compiler's artifacts of the index-th kernel compiled, written under folder; the file names."""
        from .launches import dump

        return dump(list(self.log.kernels.values())[index], info, folder, index)

    def build_launchers(self) -> int:
        """Where Triton builds a C launcher per kernel signature on a kernel's first launch (with gcc, against
        libcuda: Triton 3.6 does, 3.9 launches every kernel through one), build each here, into this runner's cache,
        which needs no device. Elsewhere nothing is built. Returns how many were."""
        try:
            from triton.backends.nvidia.driver import CudaLauncher
        except Exception:  # noqa: BLE001 - another backend, or none
            return 0
        built = 0
        for key, kernel in list(self.log.kernels.items()):
            if key in self.launched_ahead:  # an earlier part built it
                continue
            self.launched_ahead.add(key)
            try:
                CudaLauncher(kernel.src, kernel.metadata)
                built += 1
            except BaseException:  # noqa: BLE001 - a Triton that launches otherwise (it asks the stand-in driver)
                pass
        return built
