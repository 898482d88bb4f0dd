"""The runner: the one process that imports the candidate.
`python -m evolve.harness.runner.runner IN OUT MODE WORK SHM LANGUAGE`.

It jails itself (harness/runner/jail.py) before anything else of its own runs (forked from the fork server, torch and
Triton are imported already; started on its own, it imports them after), tells the measurer how it was set up, and
then only answers the measurer: load the candidate, call custom_kernel on inputs the measurer placed in shared memory,
hand back where the outputs are. Everything it says after the candidate is imported is treated as the candidate's
word: the measurer reads the outputs' bytes itself and times the calls from outside, so a lie here can make a verdict
worse, never better. What it checks itself (host torch ops, a kernel launched, the outputs' types) is a first line
that gives a model early, clear reasons. What it knows of the candidate's language (how launches are seen, what a
compiled kernel is) it asks of the language's runner side (evolve.lang).
"""
from __future__ import annotations

import importlib.util
import math
import sys
import time
import traceback
from pathlib import Path

from ..shared.wire import short_error

# torch ops a candidate's host code may run (allocation, views, fills): anything else is library compute. Copies
# (clone, copy_, a dtype or layout conversion) are not here: copying a transposed view is a whole transpose, a
# conversion is arithmetic. `x.contiguous()` and `x.to(x.dtype)` on a tensor already so run no op at all.
ALLOWED_OPS = frozenset({
    "empty", "empty_like", "empty_strided", "zeros", "zeros_like", "full", "full_like", "fill", "fill_", "zero_",
    "new_empty", "new_empty_strided", "new_zeros", "new_full", "view", "_unsafe_view", "reshape", "as_strided",
    "t", "transpose", "permute", "unsqueeze", "squeeze", "expand", "detach", "alias",
    "lift_fresh", "arange", "slice", "select", "split", "flatten", "_reshape_alias", "unbind", "set_", "resize_",
    "ones", "ones_like", "view_as", "expand_as", "reshape_as", "narrow", "chunk", "movedim",
})
COPY_OPS = frozenset({"clone", "copy_", "_to_copy", "contiguous", "to", "_copy_from", "_copy_from_and_resize"})


class Refused(Exception):
    """The candidate did something the first line refuses; str() is the reason."""


class Runner:
    def __init__(self, link, mode: str, work: Path, language: str):
        import torch
        from torch.utils import _pytree

        from ...lang import get

        self.torch, self.pytree = torch, _pytree
        self.link, self.mode, self.work = link, mode, work
        self.side = get(language).runner_side(mode)  # sees launches from before the candidate is imported
        self.module = None
        self.mapped = None
        self.gate_addr = self.done_addr = 0
        self.kept: list = []  # the last call's outputs, alive until the measurer has read them
        self._files: dict = {}

    # -- set-up, before the candidate exists -------------------------------------------------------------------------
    def hello(self, jail_status: str, started: float) -> None:
        torch = self.torch
        version = self.side.warm_up()  # taken here, while the runner is a spare
        info = {"kind": "ready", "jail": jail_status, "torch": torch.__version__, "language": self.side.display,
                "version": version, "device": "cpu"}
        if self.mode == "gpu":
            from ..shared import cuda_ipc

            torch.cuda.init()
            info["device"] = torch.cuda.get_device_name()
            self.mapped = cuda_ipc.Mapped()
        info["warm_s"] = round(time.time() - started, 3)
        self.link.send(info)

    def on_gate(self, message: dict) -> None:
        """The measurer's two signal words: the gate (wait for it before a timed call) and done (set after)."""
        self.gate_addr = self.mapped.pointer(message["handle"], 0, 8)
        self.done_addr = self.gate_addr + 4
        self.link.send({"kind": "ack"})

    def on_load(self, message: dict) -> None:
        """Import the candidate from its real file (Triton reads kernel source with inspect). The parent ran the
        static check on the file before any process started."""
        started = time.perf_counter()
        if message.get("beside"):  # the format's files copied beside the candidate (GPU MODE's task.py)
            sys.path.insert(0, str(Path(message["candidate"]).parent))
        try:
            spec = importlib.util.spec_from_file_location("candidate", message["candidate"])
            module = importlib.util.module_from_spec(spec)
            sys.modules["candidate"] = module
            spec.loader.exec_module(module)
        except BaseException as exc:  # noqa: BLE001 - anything the candidate raises at import is its failure
            return self.fail(f"import failed: {short_error(exc)}", started, log=traceback.format_exc()[-4000:])
        if not callable(getattr(module, "custom_kernel", None)):
            return self.fail("custom_kernel is not a function", started)
        self.module = module
        self.link.send({"kind": "loaded", "seconds": round(time.perf_counter() - started, 4)})

    # -- calls ------------------------------------------------------------------------------------------------------
    def _inputs(self, descs: list) -> tuple:
        out = []
        for d in descs:
            if "value" in d:
                out.append(d["value"])
            elif self.mode == "gpu":
                from ..shared import cuda_ipc

                ptr = self.mapped.pointer(d["handle"], d["offset"], d["nbytes"])
                out.append(cuda_ipc.tensor_at(ptr, d["shape"], d["dtype"]))
            else:
                out.append(self._file(d))
        return tuple(out)

    def _file(self, d: dict):
        from ..shared.formats.base import itemsize

        torch = self.torch
        key = (d["path"], d["dtype"])
        if key not in self._files:
            numel = d["nbytes"] // itemsize(d["dtype"])
            self._files[key] = torch.from_file(d["path"], shared=True, size=numel, dtype=getattr(torch, d["dtype"]))
        return self._files[key][: math.prod(d["shape"])].view(d["shape"])

    def _poison(self, expects: list) -> None:
        """All-ones bytes in the allocator's free blocks of each output's size: NaN in every float type, -1 in an
        integer one, so an element the kernel never writes shows."""
        torch = self.torch
        for e in expects:
            block = torch.empty(e["nbytes"] + 4, dtype=torch.uint8, device="cuda")
            block.fill_(255)
            del block

    def _validate(self, out, expects: list, inputs: tuple, buffers=()) -> tuple:
        from ..shared.formats.base import dtype_name

        torch = self.torch
        outs = tuple(self.pytree.tree_leaves(out)) if type(out) in (tuple, list, dict) else (out,)
        if len(outs) != len(expects):
            raise Refused(f"returned {len(outs)} output(s), expected {len(expects)}")
        device = "cuda" if self.mode == "gpu" else "cpu"
        for o, e in zip(outs, expects):
            if type(o) is not torch.Tensor:
                raise Refused(f"returned a {type(o).__name__}, not a plain torch.Tensor")
            if dtype_name(o) != e["dtype"] and not (e.get("any_float") and o.is_floating_point()):
                raise Refused(f"output dtype {dtype_name(o)}, expected {e['dtype']}")
            if list(o.shape) != list(e["shape"]):
                raise Refused(f"output shape {tuple(o.shape)}, expected {tuple(e['shape'])}")
            if o.device.type != device:
                raise Refused(f"output on {o.device}, expected {device}")
            if not o.is_contiguous():
                raise Refused(f"output strides {o.stride()} are not contiguous")
            for index, value in enumerate(inputs):
                if isinstance(value, torch.Tensor) and value.numel() and o.data_ptr() == value.data_ptr() \
                        and index not in buffers:  # an output buffer the task handed out may be returned
                    raise Refused("output aliases an input; return a new tensor")
        return outs

    def on_call(self, message: dict) -> None:
        from torch.utils._python_dispatch import TorchDispatchMode

        torch = self.torch
        self.kept = []
        self.inputs_seconds = 0.0
        if self.module is None and message["sets"]:
            return self.fail("the candidate is not loaded")
        ops: set = set()

        side = self.side

        class OpLog(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                name = func._overloadpacket.__name__
                if name not in COPY_OPS or not side.copy_is_its_own():
                    ops.add(name)
                return func(*args, **(kwargs or {}))

        launches = self.side.launches
        started = time.perf_counter()
        sets, purpose = message["sets"], message["purpose"]
        gpu = self.mode == "gpu"
        stream = torch.cuda.current_stream() if gpu else None
        error = None
        results = []
        try:
            prepared = [(self._inputs(s["inputs"]), s["expect"], s["tree"]) for s in sets]
            self.inputs_seconds = time.perf_counter() - started
            if gpu and message["gate"]:
                from ..shared import cuda_ipc

                cuda_ipc.wait_value(stream.cuda_stream, self.gate_addr, message["call"])
                if not sets:  # the measurer's calibration, before the candidate exists: one tiny kernel, so the
                    torch.zeros(1, device="cuda")  # switches into this process's context and back are real
            for inputs, expects, tree in prepared:
                if gpu and message["poison"]:
                    self._poison(expects)
                with OpLog():
                    out = self._call_candidate(inputs, tree)
                results.append((out, inputs, expects))
        except BaseException as exc:  # noqa: BLE001 - the candidate's exception is its failure
            error = exc
        if gpu:
            from ..shared import cuda_ipc

            cuda_ipc.write_value(stream.cuda_stream, self.done_addr, message["call"])
        extra = ops - ALLOWED_OPS
        copies = "; copies and conversions (a non-contiguous input's .contiguous(), .to(dtype), .clone(), .copy_()) " \
                 "are work for a kernel: read the strides instead" if extra & COPY_OPS else ""
        ops_reason = (f"custom_kernel ran torch ops {', '.join(sorted(extra)[:4])}: host code may only allocate and "
                      f"launch {side.display} kernels{copies}") if extra else None
        if purpose == "compile":
            if gpu and error is None:
                try:
                    torch.cuda.synchronize()
                except BaseException as exc:  # noqa: BLE001 - a kernel that faulted
                    error = exc
            if ops_reason:
                return self.fail(ops_reason, started)
            return self.compiled(started, error, message["dump"])
        if error is not None:
            return self.fail(short_error(error), started, log=traceback.format_exc()[-4000:])
        try:
            outs = [self._validate(out, expects, inputs, s.get("buffers", ())) for (out, inputs, expects), s
                    in zip(results, sets)]
            self.kept = outs
            self.link.send({"kind": "outputs", "call": message["call"],
                            "outputs": [self._export(o, s.get("output_files"), inputs, s.get("buffers", ()))
                                        for o, s, (_, inputs, _) in zip(outs, sets, results)]})
        except Refused as exc:
            return self.fail(str(exc), started)
        except BaseException as exc:  # noqa: BLE001
            return self.fail(short_error(exc), started, log=traceback.format_exc()[-4000:])
        # After the outputs are out (a timed call's window is closing): the first line's own findings.
        if ops_reason:
            return self.fail(ops_reason, started)
        if self.side.launches == launches and sets:
            return self.fail(self.side.nothing_launched, started)
        self.link.send({"kind": "checked", "call": message["call"]})

    def _export(self, outs: tuple, files, inputs=(), buffers=()) -> list:
        from ..shared.formats.base import dtype_name

        torch = self.torch
        described = []
        for index, o in enumerate(outs):
            entry = {"handle": "", "offset": 0, "nbytes": o.numel() * o.element_size(), "shape": list(o.shape),
                     "dtype": dtype_name(o)}
            handed = next((i for i in buffers if isinstance(inputs[i], torch.Tensor)
                           and inputs[i].data_ptr() == o.data_ptr()), None)
            if self.mode == "gpu" and handed is not None:  # the measurer's own buffer: it reads it where it is
                described.append({**entry, "input": handed})
                continue
            if self.mode == "gpu":
                from ..shared import cuda_ipc

                entry["handle"], entry["offset"] = cuda_ipc.export(o.data_ptr())
            else:
                target = self._file(files[index])
                with torch.no_grad():
                    target.copy_(o)
            described.append(entry)
        return described

    def compiled(self, started: float, error, dump) -> None:
        """dump: False, True (every compiler artifact and the SASS) or "files" (the artifacts without the SASS,
        which takes cuobjdump about 0.3 s a kernel: evolve run leaves it to whoever reads it later)."""
        side = self.side
        if not side.kernels:
            if error is not None:
                reason = f"custom_kernel raised before any kernel compiled: {short_error(error)}"
                if "compil" in f"{type(error).__name__} {str(error)[:200]}".lower():
                    reason = f"CompilationError: {short_error(error)}"
                return self.fail(reason, started, log="".join(traceback.format_exception(error))[-20000:])
            return self.fail(side.nothing_launched, started)
        if error is not None and side.is_compile_error(error):
            return self.fail(f"CompilationError: {compile_error_line(str(error))[:300]}", started,
                             log=str(error)[-20000:])
        folder = self.work / "dump"
        calls_done = time.perf_counter()
        infos = side.describe(self.work, sass=dump is True)
        for index, info in enumerate(infos):
            info["files"] = side.dump(info, folder, index) if dump in (True, "files") else []
            info.pop("_sass", None)
        now = time.perf_counter()
        self.link.send({"kind": "compiled", "seconds": round(now - started, 4),
                        **side.compile_figures(),
                        "calls_seconds": round(calls_done - started, 4), "describe_seconds": round(now - calls_done, 4),
                        "inputs_seconds": round(self.inputs_seconds, 4),
                        "kernels": infos, "error": short_error(error) if error is not None else ""})

    def _call_candidate(self, leaves, tree):
        """GPU MODE's candidates take the generated structure as one argument, evolve's the inputs in order."""
        if tree:
            return self.module.custom_kernel(self.pytree.tree_unflatten(list(leaves), self.pytree.treespec_loads(tree)))
        return self.module.custom_kernel(*leaves)

    def on_precompile(self, message: dict) -> None:
        """Compile-only, beside a GPU runner: call custom_kernel on tensors of the given shapes, strides and dtypes on
        the meta device (no memory, no data), so that each launch compiles its kernel for sm_90 into this runner's
        Triton cache, which the measurer then hands to the GPU runner. Nothing here is a verdict: a set whose host code
        cannot run without data is skipped, and the GPU runner compiles whatever is missing."""
        torch = self.torch
        started = time.perf_counter()
        done, errors = 0, []
        for s in message["sets"] if self.module is not None else []:
            try:
                leaves = [d["value"] if "value" in d else
                          torch.empty_strided(d["shape"], d["stride"], dtype=getattr(torch, d["dtype"]), device="meta")
                          for d in s["inputs"]]
                self._call_candidate(leaves, s.get("tree"))
                done += 1
            except BaseException as exc:  # noqa: BLE001 - host code that reads its data, say: the GPU runner compiles
                errors.append(short_error(exc))
        launchers = self.side.build_launchers() if message.get("launchers") else 0
        self.link.send({"kind": "precompiled", "seconds": round(time.perf_counter() - started, 4), "sets": done,
                        "kernels": len(self.side.kernels), "launchers": launchers,
                        "error": errors[0] if errors else ""})

    def fail(self, reason: str, started: float | None = None, log: str = "") -> None:
        seconds = round(time.perf_counter() - started, 4) if started else 0.0
        self.link.send({"kind": "failed", "reason": reason[:2000], "log": log[-20000:], "seconds": seconds})

    def serve(self) -> None:
        from ..shared.wire import Closed

        handlers = {"gate": self.on_gate, "load": self.on_load, "call": self.on_call, "precompile": self.on_precompile}
        while True:
            try:
                message = self.link.recv()
            except Closed:
                return
            if message.get("kind") == "quit":
                return
            try:
                handlers[message["kind"]](message)
            except Exception as exc:  # noqa: BLE001 - e.g. a CUDA context the candidate's kernel broke
                self.fail(f"crashed: {short_error(exc)}", log=traceback.format_exc()[-4000:])


def compile_error_line(message: str) -> str:
    """The line of a compiler's message that says what failed: its last, or the one before where the last is the
    command a failed nvcc ran (TileLang ends its message so)."""
    lines = [line.strip() for line in message.strip().splitlines() if line.strip()] or [""]
    return lines[-2] if lines[-1].startswith("Command:") and len(lines) > 1 else lines[-1]


def main(argv) -> int:
    started = time.time()
    in_fd, out_fd, mode, work, shm = int(argv[1]), int(argv[2]), argv[3], Path(argv[4]), argv[5]
    language = argv[6]  # a name evolve.lang knows
    from . import jail

    # The compile-only runner gets no GPU device files: it never needs a card, so it cannot reach one.
    # The shared buffers' folder: its files may be written, nothing made there (harness/measurer/exchange.py).
    status = jail.apply([str(work), "/proc/self"], devices=mode != "compile", existing=[shm])
    from ..shared import lifeline

    # After the jail, never before: a thread started earlier would stay outside it (jail.apply refuses to jail a
    # process with threads). A first line only: the measurer kills this group too when the parent is gone.
    lifeline.watch()
    from ..shared.wire import Link

    link = Link(in_fd, out_fd)
    sys.setrecursionlimit(10000)
    runner = Runner(link, mode, work, language)
    runner.hello(status, started)
    runner.serve()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

