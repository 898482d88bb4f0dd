"""The run, correctness and benchmark rungs, as observed inside the sandboxed child.

The reference module, baselines, peaks and captured functions are loaded or measured before the candidate is
imported; each call's inputs and reference are made by the harness just before the call, from a secret seed. Each
candidate call is guarded: launches counted, threads counted, torch ops logged, inputs compared with a pristine copy
afterwards (correctness checks), captured functions and interpreter hooks checked unchanged, nothing of the call
dropped and no collection run before its check is done.
"""
from __future__ import annotations

import gc
import hashlib
import importlib
import math
import sys
import threading
import types
import time

import torch

from . import metrics
from .child import _load_module, _short_exception
from .launches import LaunchLog
from .timing import collector_paused, cpu_time, fresh_copy
from .problem import load_problem

_perf_counter = time.perf_counter
_modules = sys.modules
_active_count = threading.active_count
_clone = torch.Tensor.clone
_to = torch.Tensor.to
_equal = torch.equal
_empty = torch.empty
_fill = torch.Tensor.fill_
_isfinite = torch.isfinite
_count_nonzero = torch.count_nonzero
_logical_not = torch.logical_not
_untyped_storage = torch.Tensor.untyped_storage

# Namespaces whose functions, classes and modules must not change once the candidate is loaded: the harness's own
# modules and classes, and what it and the reference compute with.
WATCHED = (
    "evolve.harness.metrics", "evolve.harness.timing", "evolve.harness.child", "evolve.harness.rungs",
    "evolve.harness.launches", "evolve.harness.static_check", "evolve.harness.problem", "time", "os", "json", "hmac",
    "hashlib", "threading", "builtins", "importlib", "math", "gc", "torch", "torch.Tensor", "torch._C.TensorBase",
    "torch.cuda", "torch.cuda.Event", "torch.nn.functional", "torch.testing", "torch.utils._python_dispatch",
    "triton.runtime.jit.JITFunction", "triton.runtime.autotuner.Autotuner",
)

# torch ops a candidate's host code may run (allocation, views, fills); anything else is library compute.
ALLOWED_OPS = frozenset({
    "empty", "empty_like", "empty_strided", "zeros", "zeros_like", "full", "full_like", "fill", "fill_", "zero_",
    "new_empty", "new_empty_strided", "new_zeros", "new_full", "view", "_unsafe_view", "reshape", "as_strided",
    "t", "transpose", "permute", "unsqueeze", "squeeze", "expand", "clone", "copy_", "contiguous", "detach", "alias",
    "lift_fresh", "arange", "slice", "select", "split", "flatten", "_reshape_alias", "unbind", "set_", "resize_",
})


_getprofile, _gettrace = sys.getprofile, sys.gettrace
_thread_getprofile = getattr(threading, "getprofile", lambda: None)
_thread_gettrace = getattr(threading, "gettrace", lambda: None)
_monitoring = getattr(sys, "monitoring", None)
_function_modes = torch._C._len_torch_function_stack
_dispatch_modes = torch._C._len_torch_dispatch_stack
_gc_callbacks = gc.callbacks
_gc_isenabled = gc.isenabled


HOOK_LEFT = ("the candidate left a hook installed (a profile or trace function, a monitoring tool, a gc callback, "
             "or a torch function or dispatch mode): code that runs inside the harness's checks is not allowed")


def _interpreter_hooks() -> tuple:
    """Every place the interpreter or torch calls code without being asked: profile and trace functions (this thread
    and new ones), sys.monitoring tools, gc callbacks, torch function and dispatch modes. A candidate that leaves one
    set runs code inside the harness's checks, where nothing watches it."""
    tools = tuple(_monitoring.get_tool(i) for i in range(6)) if _monitoring is not None else ()
    return (_getprofile(), _gettrace(), _thread_getprofile(), _thread_gettrace(), tools, tuple(_gc_callbacks),
            _function_modes(), _dispatch_modes())


def _attachment(tensor) -> str | None:
    """What a tensor carries that could run the candidate's code when the harness drops it (a finalizer in an
    attribute, a hook, a generator's finally): Python attributes on it, its storage or a view's base; autograd state."""
    while tensor is not None:
        try:
            storage = _untyped_storage(tensor)
        except RuntimeError:
            return "no plain storage (a sparse or nested tensor)"
        if tensor.__dict__ or storage.__dict__:
            return "Python attributes"
        if (tensor.requires_grad or tensor.grad_fn is not None or tensor._grad is not None or tensor._backward_hooks
                or tensor._post_accumulate_grad_hooks):
            return "autograd state"
        tensor = tensor._base
    return None


def _check_ops(ops, who: str = "custom_kernel") -> None:
    extra = ops - ALLOWED_OPS
    if extra:
        raise Fail(f"{who} ran torch ops {', '.join(sorted(extra)[:4])}: host code may only allocate and launch "
                   f"Triton kernels")


def _check_inputs_bare(inputs) -> None:
    for value in inputs:
        if isinstance(value, torch.Tensor):
            attached = _attachment(value)
            if attached:
                raise Fail(f"custom_kernel attached {attached} to its input: leave inputs as they were given")


class Fail(Exception):
    """A candidate behaviour that fails the current rung; str() is the reason."""


class Sentinels:
    """Namespaces the harness relies on, snapshotted before the candidate loads and compared after every call.

    A snapshot holds every function, class and module in each namespace (plain data such as counters may change);
    a replaced or removed one is reported, and so is one added to a class, where it would shadow an inherited
    method. Additions to modules are not: importing a submodule adds one. The harness's own classes are watched
    like its modules."""

    def __init__(self):
        self.snapshots: list[tuple[str, object, dict]] = []
        self.instances: dict[int, frozenset] = {}  # id(namespace) -> attributes the harness itself sets later

    @staticmethod
    def _watchable(value) -> bool:
        return callable(value) or isinstance(value, (types.ModuleType, staticmethod, classmethod, property))

    def _snap(self, label: str, namespace) -> None:
        entries = {k: v for k, v in vars(namespace).items() if self._watchable(v)}
        self.snapshots.append((label, namespace, entries))

    def capture(self, extra=()) -> None:
        for dotted in WATCHED:
            namespace = _resolve(dotted)
            if namespace is None:
                continue
            self._snap(dotted, namespace)
            if dotted.startswith("evolve.harness."):
                for name, value in list(vars(namespace).items()):
                    if isinstance(value, type) and value.__module__ == dotted:
                        self._snap(f"{dotted}.{name}", value)
        for label, namespace in extra:
            self._snap(label, namespace)

    def capture_instances(self, instances) -> None:
        """The harness's own objects (label, object, attributes it sets later): a function or module hung on one
        would shadow its class's method (ctx.check_case = ...), so any new one is reported too."""
        for label, obj, later in instances:
            if obj is not None:
                self._snap(label, obj)
                self.instances[id(obj)] = frozenset(later)

    def changed(self) -> list[str]:
        out = []
        for label, namespace, entries in self.snapshots:
            now = vars(namespace)
            for key, value in entries.items():
                if now.get(key, _MISSING) is not value:
                    out.append(f"{label}.{key}")
            if isinstance(namespace, type):  # a new attribute on a class shadows an inherited one (Tensor.max)
                for key, value in now.items():
                    if key not in entries and self._watchable(value) and not key.startswith("__"):
                        out.append(f"{label}.{key}")
            elif id(namespace) in self.instances:
                later = self.instances[id(namespace)]
                for key, value in now.items():
                    if key not in entries and key not in later and self._watchable(value):
                        out.append(f"{label}.{key}")
        return out


_MISSING = object()


def _resolve(dotted: str):
    parts = dotted.split(".")
    for split in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        try:
            for attr in parts[split:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return None
        return obj
    return None


class OpLog(torch.utils._python_dispatch.TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.ops: set[str] = set()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops.add(func._overloadpacket.__name__)
        return func(*args, **(kwargs or {}))


def warm_up(mode: str) -> None:
    """Pay one-time costs (the dispatch-mode machinery, first allocations) before the job arrives."""
    with OpLog():
        _empty((1,), device="cuda" if mode == "gpu" else "cpu")


# Seed offsets of the harness's own inputs (mixed with the run's secret): the problem's correctness seeds are small.
BENCH_SEED = 1 << 40  # + the timed repetition's number: every timed call of a candidate sees new values
BASELINE_SEED = 1 << 41  # two fixed sets for timing the library baselines, which are not candidates
COMPILE_SEED = 1 << 42  # the compile rung's calls


def _mix(secret: int, seed: int) -> int:
    return int.from_bytes(hashlib.sha256(f"{secret}:{seed}".encode()).digest()[:7], "little")


def _as_tuple(value):
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


class Context:
    def __init__(self, job: dict, channel):
        self.job = job
        self.ch = channel
        self.mode = job["mode"]
        self.problem = load_problem(job["problem"])
        name = "evolve_reference_" + hashlib.sha256(str(self.problem.path).encode()).hexdigest()[:12]
        self.reference = _load_module(name, self.problem.reference_path)
        self.device = torch.device("cuda", torch.cuda.current_device()) if self.mode == "gpu" else torch.device("cpu")
        self.secret = int(job["secret"])
        self.launch_log = LaunchLog()
        self.sentinels = Sentinels()
        self.hooks: tuple = ()
        self._launches_at_return = 0
        self.candidate = None
        self.timer = None
        self.baselines: dict = {}
        self.roofline_inputs: dict = {}
        self.first_outputs: dict = {}
        self._timed_ops: set = set()

    # -- setup, all before the candidate is imported ----------------------------------------------------------------
    def device_info(self) -> dict:
        import triton

        info = {"mode": self.mode, "torch": torch.__version__, "triton": triton.__version__}
        if self.mode == "gpu":
            info["device"] = torch.cuda.get_device_name()
            info["capability"] = list(torch.cuda.get_device_capability())
        else:
            info["device"] = "cpu (Triton interpreter)" if self.mode == "interpret" else "cpu (compile for sm_90)"
        return info

    def synchronize(self):
        if self.mode == "gpu":
            torch.cuda.synchronize()

    def make_inputs(self, case, seed: int):
        return _as_tuple(self.reference.generate_input(_mix(self.secret, seed), device=self.device, **case.kwargs))

    @property
    def device_key(self) -> str:
        import triton

        name = torch.cuda.get_device_name() if self.mode == "gpu" else "cpu"
        return f"{name}|torch {torch.__version__}|triton {triton.__version__}"

    @property
    def baseline_key(self) -> str:
        digest = hashlib.sha256(self.problem.reference_path.read_bytes()).hexdigest()[:12]
        return f"{self.device_key}|{self.problem.name}|{digest}"

    def prepare_gpu(self) -> None:
        from . import peaks
        from .timing import GpuTimer

        torch.cuda.set_per_process_memory_fraction(float(self.job.get("memory_fraction", 0.9)))
        self.timer = GpuTimer(self.device, budget_s=float(self.job.get("bench_budget_s", 0.4)))
        if "benchmark" not in self.job["rungs"]:
            return
        cached = (self.job.get("peaks") or {}).get(self.device_key)
        measured = cached or peaks.measure(self.timer, self.device)
        self.ch.send({"kind": "peaks", "key": self.device_key, "cached": bool(cached), **measured})
        self.baselines = dict((self.job.get("baselines") or {}).get(self.baseline_key, {}))
        for case in self.problem.benchmarks:
            if case.label not in self.baselines and hasattr(self.reference, "baseline"):
                figures = self._time_baselines(case, [self.make_inputs(case, BASELINE_SEED + i) for i in range(2)])
                self.baselines[case.label] = figures
                self.ch.send({"kind": "baseline", "key": self.baseline_key, "case": case.label, **figures})

    def _time_baselines(self, case, sets) -> dict:
        import torch._dynamo as dynamo

        for knob in ("recompile_limit", "cache_size_limit"):
            if hasattr(dynamo.config, knob):
                setattr(dynamo.config, knob, 256)
        eager = self.timer.time(self.reference.baseline, sets)
        figures = {"torch_ms": eager["ms"]}
        try:
            compiled = torch.compile(self.reference.baseline, dynamic=False)
            figures["compile_ms"] = self.timer.time(compiled, sets)["ms"]
        except Exception as exc:  # noqa: BLE001 - torch.compile missing a compiler is not the candidate's fault
            figures["compile_error"] = str(exc)[:200]
        return figures

    def prepare_cases(self) -> None:
        cases = self.problem.benchmarks if self.mode == "gpu" else self.problem.cpu_benchmarks
        for case in cases:
            self.roofline_inputs[case.label] = {
                "bytes": int(self.reference.bytes_moved(**case.kwargs)),
                "flops": int(self.reference.flops(**case.kwargs)),
            }

    def seal(self) -> None:
        """Just before the candidate is imported (launch log installed): what must not change from here on."""
        self.sentinels.capture(extra=[("reference", self.reference)])
        self.sentinels.capture_instances([("ctx", self, ("candidate",)), ("ctx.launch_log", self.launch_log, ()),
                                          ("ctx.sentinels", self.sentinels, ()), ("ctx.timer", self.timer, ()),
                                          ("ch", self.ch, ())])
        self.hooks = _interpreter_hooks()

    # -- guarded candidate calls ------------------------------------------------------------------------------------
    def tampering(self) -> str | None:
        """Why the harness can no longer trust its own code after the candidate ran, if it cannot."""
        changed = self.sentinels.changed()
        if changed:
            return (f"the candidate replaced {', '.join(changed[:3])}: patching the harness, timers or comparison "
                    f"functions is not allowed")
        if not self.launch_log.hook_intact():
            return "the candidate removed the harness's Triton launch hook: patching the harness is not allowed"
        if _interpreter_hooks() != self.hooks:
            return HOOK_LEFT
        return None

    def untouched(self, rung: str) -> bool:
        reason = self.tampering()
        if reason:
            self.ch.rung(rung, False, reason)
        return reason is None

    def guards(self, threads: int, launches: int) -> None:
        """What every candidate call must leave behind: no patched functions, a launch, no extra thread."""
        reason = self.tampering()
        if reason:
            raise Fail(reason)
        if _gc_isenabled():  # every guarded call runs with it paused (timing.collector_paused)
            raise Fail("custom_kernel switched automatic garbage collection on: a collection inside the harness's "
                       "checks could run the candidate's finalizers")
        if self.launch_log.side_stream is not None:
            device, stream = self.launch_log.side_stream
            stream = f"{stream:#x}" if isinstance(stream, int) else stream
            raise Fail(f"custom_kernel launched a Triton kernel on a side stream (device {device}, stream {stream}): "
                       f"launch on the current stream, where the harness times the work")
        if self.launch_log.launches == launches:
            raise Fail("no Triton kernel launched by custom_kernel: the computation must run in @triton.jit kernels")
        if _active_count() > threads:
            raise Fail("custom_kernel left a background thread running")

    def launched_since_return(self, case) -> None:
        """A launch between a call's return and the end of its check came from code the candidate left behind (a
        finalizer, a hook): work done after the call, where neither the timer nor the op log looks."""
        if self.launch_log.launches != self._launches_at_return:
            raise Fail(f"{case.label}: a Triton kernel was launched after custom_kernel returned: all work must be "
                       f"done inside the call")

    def call(self, inputs, log_ops: bool):
        threads = _active_count()
        launches = self.launch_log.launches
        op_log = OpLog() if log_ops else None
        try:
            if op_log is not None:
                with op_log:
                    out = self.candidate.custom_kernel(*inputs)
            else:
                out = self.candidate.custom_kernel(*inputs)
            self._launches_at_return = self.launch_log.launches
            self.synchronize()
        except Fail:
            raise
        except BaseException as exc:  # noqa: BLE001
            text = _short_exception(exc)
            if "CUDA error" in text or "illegal" in text.lower():
                raise Fail(f"crashed: {text}") from exc
            raise Fail(text) from exc
        self.guards(threads, launches)
        _check_inputs_bare(inputs)
        if op_log is not None:
            _check_ops(op_log.ops)
        return out

    def compile_call(self, case) -> None:
        """The compile rung's call of one test case, watched like every other: host code that computes fails here.
        Its inputs have values of their own, so nothing computed here matches a later call's."""
        inputs = self.make_inputs(case, COMPILE_SEED)
        op_log = OpLog()
        with op_log:
            out = self.candidate.custom_kernel(*inputs)
        self.synchronize()
        _check_ops(op_log.ops)
        del out, inputs

    def _poison(self, ref) -> None:
        """Leave NaN in the allocator's free blocks of the output's size: unwritten elements then show."""
        if self.mode == "gpu":
            block = _empty(ref.shape, dtype=torch.float32, device=self.device)
            _fill(block, float("nan"))
            del block

    def validate(self, out, refs, case, inputs) -> tuple:
        # Exact types only: a subclass of tuple or list could run code when iterated, after the op log has closed.
        if type(out) in (tuple, list):
            outs = tuple(out)
        elif isinstance(out, (tuple, list)):
            raise Fail(f"{case.label}: returned a {type(out).__name__}, not a plain tuple, list or torch.Tensor")
        else:
            outs = (out,)
        if len(outs) != len(refs):
            raise Fail(f"{case.label}: returned {len(outs)} output(s), expected {len(refs)}")
        expected_dtype = getattr(torch, case.dtype)
        for o, r in zip(outs, refs):
            if type(o) is not torch.Tensor:
                raise Fail(f"{case.label}: returned a {type(o).__name__}, not a plain torch.Tensor")
            attached = _attachment(o)
            if attached:
                raise Fail(f"{case.label}: the output carries {attached}: return a plain tensor")
            if o.dtype != expected_dtype:
                raise Fail(f"{case.label}: output dtype {str(o.dtype).replace('torch.', '')}, expected {case.dtype}")
            if tuple(o.shape) != tuple(r.shape):
                raise Fail(f"{case.label}: output shape {tuple(o.shape)}, expected {tuple(r.shape)}")
            if o.device != self.device:
                raise Fail(f"{case.label}: output on {o.device}, expected {self.device}")
            if not o.is_contiguous():
                raise Fail(f"{case.label}: output strides {o.stride()} are not contiguous")
            storage = _untyped_storage(o).data_ptr()
            for value in inputs:
                if isinstance(value, torch.Tensor) and _untyped_storage(value).data_ptr() == storage:
                    raise Fail(f"{case.label}: output aliases an input; return a new tensor")
            if not metrics.all_finite(o):
                bad = int(_count_nonzero(_logical_not(_isfinite(o))))
                raise Fail(f"{case.label}: output not finite ({bad} NaN/Inf of {o.numel()})")
        return outs

    def check_case(self, case, seed: int, log_ops: bool) -> dict:
        """One fresh correctness check: inputs, reference on a pristine CPU copy, guarded call, every element."""
        inputs = self.make_inputs(case, seed)
        pristine = tuple(_to(_clone(t), "cpu") if isinstance(t, torch.Tensor) else t for t in inputs)
        refs = _as_tuple(self.reference.ref_kernel(*[_clone(t) if isinstance(t, torch.Tensor) else t
                                                      for t in pristine]))
        self._poison(refs[0])
        with collector_paused():
            out = self.call(inputs, log_ops)
            outs = self.validate(out, refs, case, inputs)
            for before, now in zip(pristine, inputs):
                if isinstance(now, torch.Tensor) and not _equal(before, _to(now, "cpu")):
                    raise Fail(f"{case.label}: custom_kernel modified its input")
            tol = self.problem.tolerance[case.dtype]
            worst = None
            for o, r in zip(outs, refs):
                worst = metrics.worst_of(worst, metrics.error_metrics(_to(o, "cpu"), r, tol.floor, tol.rtol))
            self.launched_since_return(case)
        reason = metrics.judge(worst, tol.rtol, tol.min_cosine)
        worst["reason"] = f"{case.label}: {reason}" if reason else None
        return worst

    # -- rungs ------------------------------------------------------------------------------------------------------
    def run_rung(self) -> bool:
        started = _perf_counter()
        try:
            for case in self.problem.tests:
                self.first_outputs[case] = self.check_case(case, self.problem.seeds[0], log_ops=True)
        except Fail as exc:
            self.ch.rung("run", False, str(exc), _perf_counter() - started)
            return False
        self.ch.rung("run", True, None, _perf_counter() - started, cases=len(self.problem.tests))
        return True

    def correctness_rung(self) -> bool:
        started = _perf_counter()
        per_dtype: dict = {}
        checks = 0
        try:
            for case in self.problem.tests:
                results = [self.first_outputs.pop(case)] if case in self.first_outputs else []
                for seed in self.problem.seeds[len(results):]:
                    results.append(self.check_case(case, seed, log_ops=True))
                for m in results:
                    checks += 1
                    per_dtype[case.dtype] = metrics.worst_of(per_dtype.get(case.dtype), m)
                    if m["reason"]:
                        raise Fail(m["reason"])
        except Fail as exc:
            self.ch.rung("correctness", False, str(exc), _perf_counter() - started, per_dtype=per_dtype)
            return False
        for m in per_dtype.values():
            m.pop("reason", None)
        self.ch.rung("correctness", True, metrics.summarize(per_dtype), _perf_counter() - started,
                     per_dtype=per_dtype, checks=checks)
        return True

    def _timed_feed(self, case):
        """Inputs for every timed repetition and the check run after it, outside the timed region.

        Each repetition gets new values (a seed of its own, mixed with the run's secret), so an output cached by
        content, shape or pointer never matches a later call. Its reference is computed from a pristine copy before
        the call and dropped after the check; the check runs the guards, then compares the output with it."""
        tol = self.problem.tolerance[case.dtype]
        state = {"launches": self.launch_log.launches, "threads": _active_count()}
        held: dict = {}

        def feed(n):
            raw = self.make_inputs(case, BENCH_SEED + n)
            refs = tuple(_to(r, dtype=torch.float32) for r in _as_tuple(self.reference.ref_kernel(
                *[_clone(t) if isinstance(t, torch.Tensor) else t for t in raw])))
            # The last work before the call copies the inputs into new memory (as for fixed input sets), and the
            # generator's own buffers go back to the allocator, where the call's outputs find them.
            inputs = fresh_copy(raw)
            held[n] = (inputs, refs)
            state["launches"] = self.launch_log.launches  # a reference may launch kernels of its own
            return inputs

        def check(out, n):
            inputs, refs = held.pop(n)
            self.guards(state["threads"], state["launches"])
            _check_inputs_bare(inputs)
            _check_ops(self._timed_ops, f"{case.label}: a timed call")
            outs = self.validate(out, refs, case, inputs)
            worst = max(metrics.max_rel(o, r, tol.floor) for o, r in zip(outs, refs))
            if not worst <= tol.rtol:
                raise Fail(f"{case.label}: a timed call returned a wrong output (max_rel={worst:.3g})")
            self.launched_since_return(case)

        return feed, check

    def benchmark_rung(self) -> bool:
        started = _perf_counter()
        shapes = []
        try:
            if self.mode == "gpu":
                for case in self.problem.benchmarks:
                    figures = self.timer.time(self._raw_call, *self._timed_feed(case))
                    shapes.append(self._shape_record(case, figures, self.baselines.get(case.label, {})))
            else:
                for case in self.problem.cpu_benchmarks:
                    baseline = {}
                    if hasattr(self.reference, "baseline"):
                        sets = [self.make_inputs(case, BASELINE_SEED + i) for i in range(2)]
                        baseline = {"torch_ms": cpu_time(self.reference.baseline, sets)["ms"]}
                    figures = cpu_time(self._raw_call, *self._timed_feed(case))
                    shapes.append(self._shape_record(case, figures, baseline))
        except Fail as exc:
            self.ch.rung("benchmark", False, str(exc), _perf_counter() - started, shapes=shapes)
            return False
        self.ch.rung("benchmark", True, None, _perf_counter() - started, shapes=shapes,
                     clock="cuda-events" if self.mode == "gpu" else "cpu-interpreter")
        return True

    def _raw_call(self, *inputs):
        """The timed call: the candidate under the op log (host-side only; the GPU spin before the start event
        covers it), with the log's verdict left for the check after the call."""
        op_log = OpLog()
        try:
            with op_log:
                out = self.candidate.custom_kernel(*inputs)
            self._launches_at_return = self.launch_log.launches
        except Fail:
            raise
        except BaseException as exc:  # noqa: BLE001
            raise Fail(_short_exception(exc)) from exc
        self._timed_ops = op_log.ops
        return out

    def _shape_record(self, case, figures: dict, baseline: dict) -> dict:
        record = {"case": case.label, "shape": dict(case.shape), "dtype": case.dtype, **figures, **baseline,
                  **self.roofline_inputs.get(case.label, {})}
        return {k: (round(v, 6) if isinstance(v, float) and math.isfinite(v) else v) for k, v in record.items()}

