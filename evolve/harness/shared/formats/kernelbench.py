"""KernelBench problem files, as they are: `class Model(nn.Module)` with `forward`, `get_inputs()` and
`get_init_inputs()` (module-level sizes inside the file).

Candidates keep evolve's one contract, `custom_kernel(*inputs)`. The inputs are, in this order: the forward's
arguments as `get_inputs()` returns them, then the model's parameters in `Model.named_parameters()` order, then its
buffers in `Model.named_buffers()` order. Each check builds the model from a fresh seed (so its weights change as its
inputs do) and the reference is the same module run in float64 on the same tensors. KernelBench's own check,
`torch.allclose(out, ref, atol=1e-2, rtol=1e-2)`, applies besides evolve's finiteness, shape, dtype, cosine and
scale checks (its atol alone passes an all-zero softmax over 16,384 columns). The file has one size: it is the only
test and benchmark case, and also what the CPU interpreter runs.
"""
from __future__ import annotations

import ast
import copy
from pathlib import Path

import torch

from ..problem import Case, Problem, ProblemError
from .base import Inputs, Reference, as_tuple, device_of, dtype_name, import_file, parse, scale_check

REQUIRED = ("Model", "get_inputs", "get_init_inputs")
ATOL = RTOL = 1e-2  # KernelBench's eval: torch.allclose(output, output_new, atol=1e-02, rtol=1e-02)
CHECK_CHUNK = 1 << 25  # elements of an output checked at a time
CONTRACT = ("This is a KernelBench problem: `custom_kernel(*inputs)` receives the forward's arguments in order (as "
            "get_inputs() returns them), then the model's parameters in `Model.named_parameters()` order, then its "
            "buffers in `Model.named_buffers()` order, and returns what `Model.forward` returns.")


def load(path: Path) -> Problem:
    tree = parse(path, "class Model, get_inputs() and get_init_inputs()")
    defined = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    missing = [name for name in REQUIRED if name not in defined]
    if missing:
        raise ProblemError(f"{path}: missing {', '.join(missing)} (a KernelBench file defines class Model, "
                           f"get_inputs() and get_init_inputs())")
    case = Case(shape=(), dtype=None)
    return Problem(
        name=path.stem,
        description=f"KernelBench problem {path.stem}: write kernels computing Model.forward below.\n\n```python\n"
                    f"{path.read_text().strip()}\n```",
        path=path,
        dtypes=(),
        seeds=(1, 2, 3),
        tolerance={},
        tests=(case,),
        benchmarks=(case,),
        cpu_benchmarks=(case,),
        forbid_calls=(),
        forbid_modules=("reference", path.stem),
        format="kernelbench",
        reference_path=path,
        contract=CONTRACT,
    )


def _to(value, device=None, dtype=None):
    if not isinstance(value, torch.Tensor):
        return value
    if dtype is not None and value.is_floating_point():
        return value.to(device=device or value.device, dtype=dtype)
    return value.to(device or value.device)


class KernelBenchReference(Reference):
    def __init__(self, problem: Problem):
        super().__init__(problem)
        self.module = import_file(problem.reference_path, "kernelbench_problem")
        self.names: list[str] = []
        self.n_inputs = 0
        self.skeleton = None  # the module, whose weights each call replaces (torch.func.functional_call)
        self._models: dict = {}  # its copies by (dtype, device), made once: the timed checks call the reference often

    def generate(self, case, seed, device):
        torch.manual_seed(seed)
        init = as_tuple(self.module.get_init_inputs())
        model = self.module.Model(*init)
        inputs = as_tuple(self.module.get_inputs())
        if self.skeleton is None:
            self.skeleton = model
            self.names = [n for n, _ in model.named_parameters()] + [n for n, _ in model.named_buffers()]
            self.n_inputs = len(inputs)
        weights = [p.detach() for p in model.parameters()] + [b.detach() for b in model.buffers()]
        return Inputs(tuple(_to(v, device) for v in (*inputs, *weights)))

    def _call(self, leaves, dtype=None, device=None):
        key = (dtype, str(device))
        if key not in self._models:  # a copy: Module.to moves a module in place
            model = copy.deepcopy(self.skeleton)
            if dtype is not None:
                model.to(dtype)
            if device is not None:
                model.to(device)
            self._models[key] = model
        model = self._models[key]
        args = [_to(v, device, dtype) for v in leaves[: self.n_inputs]]
        weights = {n: _to(v, device, dtype) for n, v in zip(self.names, leaves[self.n_inputs:])}
        with torch.no_grad():
            return as_tuple(torch.func.functional_call(model, weights, tuple(args)))

    def reference(self, inputs, on_cpu):
        device = "cpu" if on_cpu else None
        try:
            return self._call(inputs.leaves, torch.float64, device or device_of(inputs.leaves))
        except (RuntimeError, TypeError, NotImplementedError):  # an op without float64: the file's own precision
            return self._call(inputs.leaves, None, device or device_of(inputs.leaves))

    def expects(self, case, sample):
        key = ("expects", case.label)
        if key not in self._profiles:
            try:  # on meta tensors, which hold no memory (today's KernelBench inputs are up to 9 GB)
                outs = self._call(sample.clone("meta").leaves, None, torch.device("meta"))
            except Exception:  # noqa: BLE001 - the problem's code on tensors it was not written for
                outs = self._call(sample.clone().leaves, None, device_of(sample.leaves))
            self._profiles[key] = [(list(o.shape), dtype_name(o)) for o in outs]
        return self._profiles[key]

    def check(self, inputs, outputs, refs):
        return check_outputs(outputs, refs)

    @property
    def has_baseline(self):
        return True

    def baseline_for(self, sample):
        model = copy.deepcopy(self.skeleton).to(device_of(sample.leaves))
        names, n = self.names, self.n_inputs

        def baseline(*leaves):
            return torch.func.functional_call(model, dict(zip(names, leaves[n:])), tuple(leaves[:n]))

        return baseline


def check_outputs(outputs, refs) -> str | None:
    """KernelBench's own check beside evolve's scale check (evolve's code only: the measurer runs it itself)."""
    wrong_scale = scale_check(outputs, refs)
    if wrong_scale:
        return wrong_scale
    for index, (o, r) in enumerate(zip(outputs, refs)):
        o, r = o.reshape(-1), r.reshape(-1)
        close, worst = True, []  # a chunk at a time on the host: today's outputs are up to 12.9 GB in float64
        for start in range(0, o.numel(), CHECK_CHUNK):
            oc = o[start:start + CHECK_CHUNK].to("cpu", torch.float64)
            rc = r[start:start + CHECK_CHUNK].to("cpu", torch.float64)
            close = close and torch.allclose(oc, rc, atol=ATOL, rtol=RTOL)
            worst.append((oc - rc).abs().max())
        if not close:
            return (f"KernelBench's check: output {index} max |out - ref| = {float(torch.stack(worst).max()):.3g} "
                    f"exceeds atol {ATOL} + rtol {RTOL} * |ref|")
    return None


def export(source: str, problem: Problem) -> str:
    """A KernelBench submission: the kernel's source and `class ModelNew`, which builds the problem's own Model to
    hold the same parameters (drawn from the same seed, as KernelBench builds both) and calls custom_kernel with
    them in the documented order."""
    if problem.format != "kernelbench":
        raise ProblemError(f"{problem.name} is not a KernelBench problem: its kernel takes no nn.Module's weights")
    model_source = problem.reference_path.read_text()
    return (
        f"{source.rstrip()}\n\n\n"
        f"# -- the KernelBench problem {problem.name}, as given (ModelNew builds it for its parameters) --\n"
        f"{model_source.strip()}\n\n\n"
        "class ModelNew(torch.nn.Module):\n"
        "    def __init__(self, *init_inputs):\n"
        "        super().__init__()\n"
        "        self.model = Model(*init_inputs)\n\n"
        "    def forward(self, *inputs):\n"
        "        weights = [p for _, p in self.model.named_parameters()] + [b for _, b in self.model.named_buffers()]\n"
        "        return custom_kernel(*inputs, *weights)\n"
    )
