"""The measurer's view of a problem's own code: make inputs, compute the reference, the format's own check.

Only the measurer (harness/measurer/measurer.py), which never imports candidate code, builds one of these; the candidate
sees nothing of it but the inputs. Inputs travel to the runner as a flat tuple of leaves (tensors and plain values); a
format whose candidates take one structured argument (GPU MODE's `custom_kernel(data)`) sends the structure too, as
a torch pytree spec, and the runner rebuilds it around the shared tensors.
"""
from __future__ import annotations

import ast
import importlib.util
import math
import sys
from pathlib import Path

import torch

from .. import metrics
from ..problem import Case, Problem, ProblemError, foreign_tolerance


class Inputs:
    """One call's inputs: `leaves` (what is placed in shared memory or sent as values) and, where the candidate takes
    the structure itself, `tree` (a serialized pytree spec) and `data` (the structure over these leaves)."""

    def __init__(self, leaves: tuple, tree: str | None = None, data=None, buffers: frozenset = frozenset()):
        self.leaves, self.tree = tuple(leaves), tree
        self.data = data if tree is not None else self.leaves
        self.buffers = buffers  # indices of leaves that are output buffers the task hands out (GPU MODE), never read

    def clone(self, device=None) -> "Inputs":
        leaves = tuple(t.to(device or t.device).clone() if isinstance(t, torch.Tensor) else t for t in self.leaves)
        return Inputs(leaves, self.tree, unflatten(leaves, self.tree) if self.tree is not None else None,
                      self.buffers)


def flatten(data) -> tuple[tuple, str | None]:
    """(leaves, tree): a tuple or list of tensors and plain values stays flat (tree None); anything nested keeps its
    structure as a pytree spec."""
    from torch.utils import _pytree as pytree

    leaves, spec = pytree.tree_flatten(data)
    return tuple(leaves), pytree.treespec_dumps(spec)


def unflatten(leaves, tree: str):
    from torch.utils import _pytree as pytree

    return pytree.tree_unflatten(list(leaves), pytree.treespec_loads(tree))


def as_tuple(value) -> tuple:
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


def parse(path: Path, needs: str) -> ast.Module:
    """A problem's Python file, parsed (never run: loading a problem runs none of its code); needs says what it must
    define, for the message when it is missing."""
    if not path.exists():
        raise ProblemError(f"{path}: missing; it must define {needs}")
    try:
        return ast.parse(path.read_text(), filename=str(path))
    except SyntaxError as exc:
        raise ProblemError(f"{path}:{exc.lineno}: syntax error: {exc.msg}") from exc


def import_file(path: Path, name: str, files: dict | None = None):
    """Import a problem's own file (trusted: it is the problem, not a candidate) with its folder importable, as the
    format's own harness would (GPU MODE references import `task` and `utils` beside them). `files` maps module file
    names to where they are ("utils.py" -> ../utils.py, as a GPU MODE task.yml lists them): each is imported afresh
    under its name first, so two problems in one process never share a `utils`."""
    folder = str(path.parent)
    added = folder not in sys.path
    if added:
        sys.path.insert(0, folder)
    try:
        for file_name, source in (files or {}).items():
            module_name = Path(file_name).stem
            if module_name != name and Path(source).resolve() != path.resolve():
                sys.modules.pop(module_name, None)
                _exec_file(Path(source), module_name)
        return _exec_file(path, name)
    finally:
        if added:
            sys.path.remove(folder)


def _exec_file(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def on_host(values) -> list:
    """Tensors moved to the host (plain values as they are): what crosses a pipe between processes."""
    return [v.detach().cpu() if isinstance(v, torch.Tensor) else v for v in values]


def device_of(leaves):
    """The device of the first tensor among leaves (the host where there is none)."""
    return next((t.device for t in leaves if isinstance(t, torch.Tensor)), torch.device("cpu"))


def nbytes(values) -> int:
    return sum(t.numel() * t.element_size() for t in values if isinstance(t, torch.Tensor))


def describe(leaves) -> list[dict]:
    """What one call's inputs look like, for the record beside a benchmark case's figures (a shape-dispatch composite
    learns its thresholds from these): per leaf, a tensor's shape and dtype, or a plain value."""
    out = []
    for leaf in leaves:
        if isinstance(leaf, torch.Tensor):
            out.append({"shape": [int(s) for s in leaf.shape], "dtype": dtype_name(leaf)})
        elif isinstance(leaf, (bool, int, float, str)) or leaf is None:
            out.append({"value": leaf})
        else:
            out.append({"type": type(leaf).__name__})
    return out


def dtype_name(t) -> str:
    return str(t.dtype).replace("torch.", "")


def itemsize(dtype: str) -> int:
    return torch.empty((), dtype=getattr(torch, dtype)).element_size()


def poison(t) -> None:
    """Fill an output's memory with a value no honest kernel leaves there: NaN, or an integer type's minimum."""
    if t.is_floating_point():
        t.fill_(float("nan"))
    elif t.dtype == torch.bool:
        t.fill_(True)  # no value of a bool is unlikely: a kernel that skips elements shows only where False is due
    elif torch.iinfo(t.dtype).min < 0:
        t.fill_(torch.iinfo(t.dtype).min)
    else:
        t.fill_(torch.iinfo(t.dtype).max)


def scale_check(outputs, refs) -> str | None:
    """evolve's guard beside a foreign format's own check, on every checked and timed output: each float output's
    relative L2 error against the reference within what its dtype allows (problem.foreign_tolerance), so an output of
    the wrong scale (all zeros, 2x) fails whatever the format's check says."""
    for index, (o, r) in enumerate(zip(outputs, refs)):
        if isinstance(o, torch.Tensor) and isinstance(r, torch.Tensor) and o.is_floating_point():
            tol = foreign_tolerance(dtype_name(o))
            reason = metrics.scale_reason(o, r, tol.floor, tol.min_cosine)
            if reason:
                return f"output {index}: {reason}"
    return None


class Reference:
    """The problem's functions, as the measurer calls them. Subclasses: one per format."""

    times_own_baselines = False  # True: time_baselines() times the library op where the problem's code runs

    def __init__(self, problem: Problem):
        self.problem = problem
        self._profiles: dict = {}

    # -- what every format provides ----------------------------------------------------------------------------------
    def generate(self, case: Case, seed: int, device) -> Inputs:
        raise NotImplementedError

    def reference(self, inputs: Inputs, on_cpu: bool) -> tuple:
        """The reference outputs (a flat tuple of tensors) for inputs the measurer keeps private; on_cpu computes on
        a CPU copy where the format allows it (evolve's float64 references)."""
        raise NotImplementedError

    def check(self, inputs: Inputs, outputs: tuple, refs: tuple) -> str | None:
        """The format's own verdict on outputs read back (a reason, or None when it passes), given the reference's
        outputs for the same inputs; evolve's own metrics apply besides."""
        return None

    @property
    def has_baseline(self) -> bool:
        return False

    def baseline(self, *leaves):
        raise NotImplementedError

    def baseline_for(self, sample: Inputs):
        """The library op as a function of the leaves of inputs shaped like sample (timed eager and compiled)."""
        return self.baseline

    # -- the roofline -------------------------------------------------------------------------------------------------
    def formula(self, name: str, case: Case):
        """The problem's own bytes_moved/flops for the case, or None where the format has none."""
        return None

    def profile(self, case: Case, sample: Inputs | None = None) -> dict:
        """bytes, flops and the dtype whose matmul rate bounds the case, from the formulas where the problem has
        them, else counted from a sample's actual inputs and reference outputs (flops then 0: memory-bound)."""
        if case.label in self._profiles:
            return self._profiles[case.label]
        moved, work = self.formula("bytes_moved", case), self.formula("flops", case)
        dtype = case.dtype
        if moved is None or dtype is None:
            sample = sample or self.generate(case, 0, "cpu")
            if moved is None:
                moved = self._moved(case, sample)
            if dtype is None:
                floats = [t for t in sample.leaves if isinstance(t, torch.Tensor) and t.is_floating_point()]
                dtype = dtype_name(max(floats, key=lambda t: t.numel())) if floats else "float32"  # the bulk
        if work is None and self.problem.format != "evolve":  # a foreign format has no formula: count the work
            work = self._counted_flops(sample or self.generate(case, 0, "cpu"))
        profile = {"bytes": int(moved), "flops": int(work or 0), "dtype": dtype}
        self._profiles[case.label] = profile
        return profile

    def _moved(self, case: Case, sample: Inputs) -> int:
        """The bytes a case must move at least: its inputs read once and its outputs written once. An output buffer
        the task hands out is written, not read: it counts once, in its own dtype, as the output of its shape."""
        handed = self.buffers(case, sample)
        read = [t for i, t in enumerate(sample.leaves) if i not in handed]
        free = [sample.leaves[i] for i in sorted(handed)]
        written = 0
        for shape, d in self.expects(case, sample):
            at = next((j for j, t in enumerate(free) if list(t.shape) == list(shape)), None)
            if at is not None:
                buffer = free.pop(at)
                written += buffer.numel() * buffer.element_size()
            else:
                written += math.prod(shape) * torch.empty((), dtype=getattr(torch, d)).element_size()
        return nbytes(read) + written

    def _counted_flops(self, sample: Inputs) -> int:
        """The floating point work of the reference on this sample, as torch's FlopCounterMode counts it (matmuls,
        convolutions, attention; element-wise work counts nothing, so such a case stays memory-bound): on meta
        tensors, which cost nothing, else on a copy of the sample itself; 0 when neither runs."""
        from torch.utils.flop_counter import FlopCounterMode

        for device in ("meta", None):
            try:
                inputs = sample.clone(device)
                with FlopCounterMode(display=False) as counter:
                    self.reference(inputs, on_cpu=device is None)
                return int(counter.get_total_flops())
            except Exception:  # noqa: BLE001 - the problem's code on tensors it was not written for
                continue
        return 0

    # -- expected outputs ---------------------------------------------------------------------------------------------
    def buffers(self, case: Case, sample: Inputs) -> frozenset:
        """Indices of the input leaves that are output buffers handed out with the inputs: none in most formats."""
        return frozenset()

    def expects(self, case: Case, sample: Inputs) -> list:
        """[(shape, dtype)] of each output, from the reference run once on a sample of the case (cached): on meta
        tensors, which hold no memory (a KernelBench case of today's sizes is 6 GB an input), else on a copy."""
        key = ("expects", case.label)
        if key not in self._profiles:
            try:
                refs = self.reference(sample.clone("meta"), on_cpu=False)
            except Exception:  # noqa: BLE001 - the problem's code on tensors it was not written for
                refs = self.reference(sample.clone(), on_cpu=False)
            self._profiles[key] = [(list(r.shape), self.problem.output_dtype(i, case, dtype_name(r)))
                                   for i, r in enumerate(refs)]
        return self._profiles[key]
