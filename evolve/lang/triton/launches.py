"""Seeing every Triton launch a candidate makes, and compiling for Hopper without a GPU.

The runner installs a LaunchLog before it imports the candidate. It wraps the one method every launch goes through
(JITFunction.run; InterpretedFunction.run under TRITON_INTERPRET=1), counts launches, and keeps the compiled kernel of
each specialization for the compile rung. In compile-only mode (no GPU, no interpreter) a stand-in driver
reports an sm_90 target, so each launch compiles real Hopper code through Triton's own path and launches nothing.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

from triton.runtime.autotuner import Autotuner
from triton.runtime.jit import JITFunction

from ...harness.runner.sass import read_cubin

_AUTOTUNER_RUN = Autotuner.run

HOPPER = (90, 32)  # compute capability 9.0, warp size 32


class _HopperUtils:
    """Device properties an H100/H200 reports (Triton's tutorials size grids from them at import)."""

    @staticmethod
    def get_device_properties(device=0):
        return {"max_shared_mem": 232448, "multiprocessor_count": 132, "max_num_regs": 65536, "warpSize": 32,
                "sm_clock_rate": 1980000, "mem_clock_rate": 3201000, "mem_bus_width": 5120,
                "max_threads_per_block": 1024}


class _HopperStandIn:
    """Just enough of a Triton driver for JITFunction.run(warmup=True) to compile for sm_90 with no GPU, and for
    host code that asks the driver for the device and its properties."""

    def __init__(self):
        from triton.backends.compiler import GPUTarget

        self.target = GPUTarget("cuda", *HOPPER)
        self.utils = _HopperUtils()

    def get_current_target(self):
        return self.target

    def get_current_device(self):
        return 0

    def get_current_stream(self, device=None):
        return 0

    def get_active_torch_device(self):
        import torch

        return torch.device("cpu")


class LaunchLog:
    """Counts launches and keeps the compiled kernel of each specialization (for the compile rung's figures).

    It runs inside the runner, so what it says is a first line only: a candidate that launches nothing is told so
    at once, and the compile rung can show registers and spills. No verdict depends on it."""

    def __init__(self):
        self.launches = 0
        self.kernels: dict[str, object] = {}  # "name/specialization" -> CompiledKernel
        self.compile_seconds = 0.0
        self.cache_hits = self.fresh = 0  # kernels Triton found in its cache, and kernels it compiled (a record)

    def install(self, mode: str) -> None:
        """mode: 'gpu' (launch and record), 'compile' (sm_90 compile only), 'interpret' (count launches)."""
        log = self
        if mode == "interpret":
            from triton.runtime.autotuner import Autotuner
            from triton.runtime.interpreter import InterpretedFunction

            Autotuner.run = _AUTOTUNER_RUN  # a compile phase before this one compiled every config instead

            original, original_call = InterpretedFunction.run, InterpretedFunction.__call__
            inside = [0]  # launches in progress: a kernel may call other @triton.jit functions while it runs

            def interpreted_run(self, *args, **kwargs):
                log.launches += 1
                inside[0] += 1
                try:
                    return original(self, *args, **kwargs)
                finally:
                    inside[0] -= 1

            def interpreted_call(self, *args, **kwargs):
                # Called from host code, the interpreter would run the kernel's body as plain Python on real
                # tensors (where numpy could do the work); a GPU build refuses such a call, and so does this.
                if not inside[0]:
                    raise RuntimeError(f"{self.__name__} is a @triton.jit function called directly from host code: "
                                       f"launch it as kernel[grid](...)")
                return original_call(self, *args, **kwargs)

            InterpretedFunction.run = interpreted_run
            InterpretedFunction.__call__ = interpreted_call
            _rewrite_in_own_scope()
            _dot_in_float32()
            _argument_copies_unlogged()
            _autotune_without_timing()
            from triton.runtime.driver import driver

            driver.set_active(_HopperStandIn())  # host code that asks the driver for the device gets the CPU
            return

        try:  # Triton tells a listener of every kernel it compiles or finds in its cache
            from triton import knobs

            def listen(*, cache_hit=False, **_):
                if cache_hit:
                    log.cache_hits += 1
                else:
                    log.fresh += 1

            knobs.compilation.listener = listen
        except (ImportError, AttributeError):
            pass
        original_run = JITFunction.run
        compile_only = mode == "compile"
        if compile_only:
            from triton.runtime.driver import driver

            driver.set_active(_HopperStandIn())
            _compile_every_autotune_config()

        hooked = mode == "gpu" and self._count_in_hook()

        def run(self, *args, grid, warmup, **kwargs):
            if compile_only or (not warmup and not hooked):
                log.launches += 1
            before = time.perf_counter()
            kernel = original_run(self, *args, grid=grid, warmup=warmup or compile_only, **kwargs)
            if kernel is not None and not hasattr(kernel, "result"):
                key = f"{getattr(kernel, 'name', None) or self.__name__}/{id(kernel)}"
                if key not in log.kernels:
                    log.compile_seconds += time.perf_counter() - before
                    log.kernels[key] = kernel
            return kernel

        JITFunction.run = run

    def _count_in_hook(self) -> bool:
        """Triton calls knobs.runtime.launch_enter_hook before every real launch, whichever Python path led there
        (kernel[grid], or a compiled kernel launched directly, as Triton's tutorials do). False on a Triton without
        hook chains, where JITFunction.run counts instead."""
        try:
            from triton import knobs

            chain = knobs.runtime.launch_enter_hook
            log = self

            def on_launch(metadata=None):
                log.launches += 1

            chain.add(on_launch)
        except (ImportError, AttributeError):
            return False
        return True


def _rewrite_in_own_scope() -> None:
    """Triton's interpreter runs a rewritten kernel with its own module's names (numpy among them) copied into the
    kernel's module, where host code would find them. Give the rewritten kernel a scope of its own instead: the
    interpreter's names under the module's, the module itself untouched."""
    from triton.runtime import interpreter

    def compile_and_exec(self, transformed_ast):
        code = compile(transformed_ast, filename=self.filename, mode="exec")
        local_namespace = {**self.kwargs}
        scope = {**vars(interpreter), **self.fn.__globals__}
        exec(code, scope, local_namespace)
        return local_namespace[self.fn.__name__]

    interpreter.FunctionRewriter._compile_and_exec = compile_and_exec


def _argument_copies_unlogged() -> None:
    """The interpreter copies a launch's tensors to host storage and back around the kernel (storage copies the
    runner's op log would see as the candidate's own copy_). Those two steps run no candidate code: keep them out of
    the log, and nothing else (the grid and hooks, which may be the candidate's, stay logged)."""
    from torch.utils._python_dispatch import _disable_current_modes
    from triton.runtime.interpreter import GridExecutor

    for name in ("_init_args_hst", "_restore_args_dev"):
        original = getattr(GridExecutor, name)

        def unlogged(self, *args, _original=original, **kwargs):
            with _disable_current_modes():
                return _original(self, *args, **kwargs)

        setattr(GridExecutor, name, unlogged)


def _dot_in_float32() -> None:
    """The interpreter keeps bfloat16 values as their raw 16 bits and its tl.dot hands those integers to numpy's
    matmul (Triton 3.9), so any bf16 dot came out as garbage. A bf16 operand's bits are the upper half of the float32
    of the same value: widen them, and multiply in float32 as the GPU's tensor cores accumulate."""
    import numpy as np
    import triton.language as tl
    from triton.runtime import interpreter

    original = interpreter.InterpreterBuilder.create_dot

    def widen(handle):
        if handle.dtype.scalar == tl.bfloat16:
            return np.ascontiguousarray((handle.data.astype(np.uint32) << 16).view(np.float32))
        return handle.data.astype(np.float32)

    def create_dot(self, a, b, d, input_precision, max_num_imprecise_acc):
        if tl.bfloat16 not in (a.dtype.scalar, b.dtype.scalar):
            return original(self, a, b, d, input_precision, max_num_imprecise_acc)
        product = np.matmul(widen(a), widen(b)).astype(d.data.dtype)
        return interpreter.TensorHandle(product + d.data, d.dtype.scalar)

    interpreter.InterpreterBuilder.create_dot = create_dot


def _autotune_without_timing() -> None:
    """The interpreter has no device to time configs on (Triton's benchmarker needs a GPU driver): every config ties
    and the autotuner keeps its first. The kernel still runs once per call, through the chosen config."""
    from triton.runtime.autotuner import Autotuner

    def bench(self, *args, config, **meta):
        return [0.0, 0.0, 0.0]

    Autotuner._bench = bench


def _compile_every_autotune_config() -> None:
    """Without a GPU an autotuner cannot benchmark; compile each of its configs instead."""
    from triton.runtime.autotuner import Autotuner

    def run(self, *args, **kwargs):
        kwargs.pop("warmup", None)
        result = None
        for config in self.configs:
            result = self.fn.run(*args, warmup=True, **{**kwargs, **config.all_kwargs()})
        return result

    Autotuner.run = run


def describe_all(kernels: list, work_dir: Path, sass: bool = False) -> list[dict]:
    """describe() of each kernel, the cuobjdump calls side by side."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=max(1, min(8, os.cpu_count() or 1, len(kernels)))) as pool:
        return list(pool.map(lambda pair: describe(pair[1], work_dir, pair[0], sass), enumerate(kernels)))


def describe(kernel, work_dir: Path, index: int = 0, sass: bool = False) -> dict:
    """Registers, spills, shared memory and architecture of a compiled kernel, read from its cubin (a few ms);
    with sass=True also its SASS (about 0.3 s a kernel), under the key "_sass"."""
    name = kernel.metadata.name if hasattr(kernel.metadata, "name") else kernel.name
    info = {
        "name": name,
        "num_warps": getattr(kernel.metadata, "num_warps", None),
        "num_stages": getattr(kernel.metadata, "num_stages", None),
        "smem": getattr(kernel.metadata, "shared", None),
        "regs": getattr(kernel, "n_regs", None),
        "spills": getattr(kernel, "n_spills", None),
        "arch": None,
        "local_bytes": None,
    }
    cubin = kernel.asm.get("cubin") if hasattr(kernel, "asm") else None
    if cubin:
        read = read_cubin(cubin, work_dir / f"{index:02d}_{name}.cubin", sass)
        if read.get("regs") is not None:
            info["regs"] = read["regs"]
            info["local_bytes"] = read["local_bytes"]
            info["smem"] = read["smem"] if info["smem"] is None else info["smem"]
            if info["spills"] is None:
                info["spills"] = read["local_bytes"]
        info["arch"] = read.get("arch")
        if "sass" in read:
            info["_sass"] = read["sass"]
    return info


def specialization(kernel) -> str:
    """What one compiled specialization was compiled for: its constexpr values and argument types."""
    src = getattr(kernel, "src", None)
    signature = dict(getattr(src, "signature", None) or {})
    constants = getattr(src, "constants", None) or {}
    parts = []
    for position, (name, kind) in enumerate(signature.items()):
        if kind == "constexpr":
            value = constants.get((position,), constants.get(name, "?"))
            parts.append(f"{name}={value}")
        else:
            parts.append(f"{name}:{kind}")
    return " ".join(parts)


def dump(kernel, info: dict, folder: Path, index: int) -> list[str]:
    """Write TTIR/TTGIR/LLIR/PTX/cubin/SASS of one kernel under folder, and a line for it in index.txt (which
    specialization the numbered files hold); returns the file names."""
    folder.mkdir(parents=True, exist_ok=True)
    stem = f"{index:02d}_{info['name']}"
    with open(folder / "index.txt", "a") as index_file:
        index_file.write(f"{stem}  {info.get('arch') or '?'}  num_warps={info.get('num_warps')} "
                         f"num_stages={info.get('num_stages')}  {specialization(kernel)}\n")
    written = []
    for ext, content in kernel.asm.items():
        if ext == "source":
            continue
        path = folder / f"{stem}.{ext}"
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(str(content))
        written.append(path.name)
    if info.get("_sass"):
        (folder / f"{stem}.sass").write_text(info["_sass"])
        written.append(f"{stem}.sass")
    return written
