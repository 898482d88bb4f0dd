"""TileLang's half of the runner (harness/runner/runner.py asks for it through evolve.lang), installed before the
candidate is imported: every compiled kernel (a `tilelang.JITKernel`, made by `tilelang.compile` or `@tilelang.jit`) is
timed and kept, and every call of one is counted. In the compile-only runner (no GPU: TileLang targets sm_90a, as the
runner's environment says) a call is counted and nothing runs. The compile rung's figures (registers, spills, shared
memory, SASS) come from the cubin TileLang built for the kernel (read back through its own build step, which its binary
cache answers).

It runs in the runner, beside candidate code: what it says is a first line that gives a model early, clear reasons.
No verdict depends on it."""
from __future__ import annotations

import re
import time
from pathlib import Path

from ..compiled import describe_kernels, dump_kernel


class RunnerSide:
    display = "TileLang"
    nothing_launched = ("no TileLang kernel ran in custom_kernel: the computation must run in @T.prim_func kernels, "
                        "compiled with tilelang.compile (or @tilelang.jit) and called by custom_kernel")

    def __init__(self, mode: str):
        """mode: 'gpu' (run and count), 'compile' (compile for sm_90a, count, run nothing)."""
        from tilelang.jit.kernel import JITKernel

        self.launches = 0
        self.kernels: dict[str, object] = {}  # "prim_func name/id" -> the compiled kernel
        self.compile_seconds = 0.0
        self.loaded = 0  # kernels TileLang read back from its disk cache (a restored evaluation's) instead of building
        self._cubins: dict[int, bytes | None] = {}
        side = self
        init_original = JITKernel.__init__

        def init_recorded(self, *args, **kwargs):
            began = time.perf_counter()
            init_original(self, *args, **kwargs)
            side.compile_seconds += time.perf_counter() - began
            side.loaded += bool(kwargs.get("from_database"))
            if self.target.kind.name != "cuda":  # a host target computes outside any GPU kernel
                raise ValueError(f"a TileLang kernel compiled for {self.target.kind.name}: candidates compile for "
                                 f"the GPU (tilelang.compile's default target)")

        JITKernel.__init__ = init_recorded
        call_original = JITKernel.__call__

        def counted(self, *args, **kwargs):
            side.launches += 1
            side.kernels.setdefault(f"{_name(self)}/{id(self)}", self)
            if mode == "compile":
                return _outputs_unwritten(self)  # no device to run on: the outputs it would have made, empty
            return call_original(self, *args, **kwargs)

        JITKernel.__call__ = counted

    def warm_up(self) -> str:
        import tilelang
        import tilelang.language  # noqa: F401

        return tilelang.__version__

    def compile_figures(self) -> dict:
        return {"compile_seconds": round(self.compile_seconds, 3), "cache_hits": self.loaded,
                "fresh": max(0, len(self.kernels) - self.loaded)}

    @staticmethod
    def copy_is_its_own() -> bool:
        return False  # TileLang copies nothing on a candidate's behalf

    @staticmethod
    def is_compile_error(error: BaseException) -> bool:
        """TileLang's and TVM's own errors, or any error raised inside their code (a failed nvcc is a plain
        RuntimeError there): a kernel that compiled for some shapes only fails."""
        from ..errors import package_folders, raised_inside

        module = type(error).__module__
        return (module.startswith(("tvm", "tilelang")) or type(error).__name__ in ("TVMError", "InternalError")
                or raised_inside(error, package_folders("tilelang", "tvm")))

    def _cubin(self, kernel) -> bytes | None:
        """The kernel's cubin as TileLang built it: its own build step, which its binary cache answers without
        compiling again; else built anew by nvcc from its CUDA source. None where neither can be had (no nvcc)."""
        if id(kernel) in self._cubins:
            return self._cubins[id(kernel)]
        cubin = None
        try:
            from tilelang.cuda.backend import tilelang_callback_cuda_compile

            with kernel.target:
                built = tilelang_callback_cuda_compile(kernel.get_kernel_source(), kernel.target, kernel.pass_configs)
            cubin = bytes(built) if bytes(built[:4]) == b"\x7fELF" else None  # a fatbin (several archs) is not read
        except Exception:  # noqa: BLE001 - its build step moved or failed: nvcc below
            pass
        if cubin is None:
            cubin = _nvcc(kernel, "cubin")
        self._cubins[id(kernel)] = cubin
        return cubin

    @staticmethod
    def _ptx(kernel) -> str | None:
        """The kernel's PTX, built from its CUDA source by nvcc as TileLang builds it (for --dump)."""
        ptx = _nvcc(kernel, "ptx")
        return ptx.decode() if ptx else None

    def describe(self, work: Path, sass: bool) -> list[dict]:
        return describe_kernels(self.kernels, lambda kernel: {"cubin": self._cubin(kernel)}, work, sass)

    def dump(self, info: dict, folder: Path, index: int) -> list[str]:
        """The index-th compiled kernel's CUDA source, PTX, cubin and (where read) SASS under folder; the file names."""
        kernel = list(self.kernels.values())[index]
        files = {"cu": kernel.get_kernel_source(), "ptx": self._ptx(kernel), "cubin": self._cubin(kernel)}
        return dump_kernel(info, folder, index, {kind: content for kind, content in files.items() if content})

    def build_launchers(self) -> int:
        return 0  # TileLang builds its host launcher inside tilelang.compile


def _nvcc(kernel, target_format: str) -> bytes | None:
    """The kernel's CUDA source built by nvcc to `target_format` ("ptx", "cubin") with TileLang's default options, or
    None where that cannot be done (no nvcc here)."""
    from tilelang.contrib import nvcc

    try:
        with kernel.target:
            return bytes(nvcc.compile_cuda(kernel.get_kernel_source(), target_format=target_format,
                                           options=nvcc.default_compile_options(kernel.compile_flags)))
    except Exception:  # noqa: BLE001 - no nvcc here: the rung says what it could not read
        return None


def _name(kernel) -> str:
    """The kernel's name as the GPU reports a launch of it (the `__global__` function of its CUDA source, which the
    launch audit compares with what ran), else its prim_func's."""
    try:
        found = re.search(r"__global__\s+void\s+(?:__launch_bounds__\([^)]*\)\s*)?(\w+)\s*\(",
                          kernel.get_kernel_source())
        if found:
            return found.group(1)
    except Exception:  # noqa: BLE001
        pass
    func = getattr(kernel, "prim_func", None)
    attrs = getattr(func, "attrs", None)
    try:
        return str(attrs["global_symbol"]) if attrs is not None and "global_symbol" in attrs else "main"
    except Exception:  # noqa: BLE001
        return "main"


def _outputs_unwritten(kernel):
    """What a call with out_idx returns (new tensors for the outputs TileLang allocates), empty; None without."""
    import torch

    func = kernel.prim_func
    indices = getattr(kernel.adapter, "result_idx", None) or []
    outputs = []
    for index in indices:
        buffer = func.buffer_map[func.params[index]]
        shape = [int(d) for d in buffer.shape]
        outputs.append(torch.empty(shape, dtype=getattr(torch, str(buffer.dtype))))
    if not outputs:
        return None
    return outputs[0] if len(outputs) == 1 else outputs
