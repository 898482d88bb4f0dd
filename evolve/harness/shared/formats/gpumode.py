"""GPU MODE task folders, as they are: task.yml (`tests` and `benchmarks`, lists of keyword dicts with a `seed`) and
reference.py (`generate_input(**case, seed)`, `ref_kernel(data)`, `check_implementation(data, output)`).

A candidate is a GPU MODE submission, `custom_kernel(data)`, taking the generated structure itself; the runner
rebuilds it around the shared tensors. The folder's own `check_implementation` judges every checked and every timed
output, besides evolve's finiteness, shape, dtype, cosine and scale checks. There are no dtype axis and no roofline
formulas in the format: a case's bytes are counted from its actual inputs and outputs (memory-bound) unless
reference.py defines `bytes_moved(**case)` and `flops(**case)` of its own.
"""
from __future__ import annotations

import ast
import math
from pathlib import Path

import torch

from ..problem import Case, Problem, ProblemError
from .base import Inputs, Reference, flatten, import_file, parse, poison, scale_check, unflatten

REQUIRED = ("ref_kernel", "generate_input", "check_implementation")
# A submission may import the task's own type names (`from task import input_t, output_t`), nothing else of it.
SUBMISSION_MODULES = ("task",)


def _files(raw: dict, path: Path, task: Path) -> dict:
    """The task's Python modules by the name they are imported as, from task.yml's `files:` (each a name and a source
    relative to the task folder: upstream keeps utils.py and eval.py one folder up), else the folder's own. The
    submission and the format's own harness (`config: main`) are left out: evolve is the harness."""
    main = str((raw.get("config") or {}).get("main", "eval.py")) if isinstance(raw.get("config"), dict) else "eval.py"
    entries = raw.get("files")
    if entries is None:
        return {name: str(path / name) for name in ("task.py", "utils.py") if (path / name).is_file()}
    if not isinstance(entries, list) or not all(isinstance(e, dict) and "name" in e and "source" in e for e in entries):
        raise ProblemError(f"{task}: files must be a list of {{name: ..., source: ...}} entries")
    files = {}
    for entry in entries:
        name, source = str(entry["name"]), str(entry["source"])
        if source == "@SUBMISSION@" or name == main or not name.endswith(".py"):
            continue
        where = (path / source).resolve()
        if not where.is_file():
            raise ProblemError(f"{task}: files names {name} from {source}, and {where} does not exist (upstream keeps "
                               "shared files such as utils.py one folder above the task: copy that folder whole)")
        files[name] = str(where)
    return files


def _task_file(path: Path) -> Path:
    return path / "task.yml" if (path / "task.yml").exists() else path / "task.yaml"


def _cases(entries, key: str, where: Path) -> tuple[Case, ...]:
    if not isinstance(entries, list) or not entries:
        raise ProblemError(f"{where}: {key} must be a non-empty list of keyword dicts, e.g. - {{size: 1024, seed: 1}}")
    cases = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise ProblemError(f"{where}: {key} entry {i + 1} must be a mapping of keyword arguments")
        seed = entry.get("seed")
        if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)):
            raise ProblemError(f"{where}: {key} entry {i + 1}: seed = {seed!r} must be an integer")
        params = []
        for name, value in entry.items():
            if name == "seed":
                continue
            if not isinstance(value, (bool, int, float, str)):
                raise ProblemError(f"{where}: {key} entry {i + 1}: {name} = {value!r} must be a number, boolean or "
                                   f"string")
            params.append((str(name), value))
        cases.append(Case(shape=(), dtype=None, params=tuple(params), seed=seed))
    return tuple(cases)


def _size(case: Case) -> float:
    return math.prod(v for _, v in case.params if isinstance(v, int) and not isinstance(v, bool) and v > 0)


def _defined(tree: ast.Module) -> set:
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, (ast.ImportFrom, ast.Import)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def load(path: Path) -> Problem:
    import yaml

    task = _task_file(path)
    try:
        raw = yaml.safe_load(task.read_text())
    except yaml.YAMLError as exc:
        raise ProblemError(f"{task}: not valid YAML: {exc}") from exc
    if not isinstance(raw, dict):
        raise ProblemError(f"{task}: must be a mapping with tests and benchmarks")
    for key in ("tests", "benchmarks"):
        if key not in raw:
            raise ProblemError(f"{task}: missing field {key!r} (a list of keyword dicts with a seed)")
    files = _files(raw, path, task)
    reference = Path(files.pop("reference.py", path / "reference.py"))
    tree = parse(reference, ", ".join(REQUIRED))
    missing = [name for name in REQUIRED if name not in _defined(tree)]
    if missing:
        raise ProblemError(f"{reference}: missing {', '.join(missing)} (a GPU MODE reference defines "
                           f"{', '.join(REQUIRED)})")
    tests = _cases(raw["tests"], "tests", task)
    benchmarks = _cases(raw["benchmarks"], "benchmarks", task)
    description = str(raw.get("description", "") or "").strip()
    return Problem(
        name=path.name,
        description=description or f"The GPU MODE task in {path.name}: match ref_kernel in reference.py.",
        path=path,
        dtypes=(),
        seeds=(0, 1, 2),  # mixed with each case's own seed and the evaluation's secret
        tolerance={},
        tests=tests,
        benchmarks=benchmarks,
        cpu_benchmarks=(min(tests, key=_size),),  # the smallest test: the interpreter runs it
        forbid_calls=(),
        forbid_modules=("reference", "eval", "utils"),
        format="gpumode",
        reference_path=reference,
        contract=("This is a GPU MODE task: define `custom_kernel(data)`, where `data` is exactly what reference.py's "
                  "`generate_input` returns, and return what `ref_kernel(data)` returns (same structure, shapes and "
                  "dtypes, new memory). `from task import input_t, output_t` is allowed."),
        extra={"allow_modules": SUBMISSION_MODULES, "beside": ["task.py"], "files": files,
               "entry": "custom_kernel(data)", "any_float_output": True},
    )


class GpuModeReference(Reference):
    def __init__(self, problem: Problem):
        super().__init__(problem)
        self.module = import_file(problem.reference_path, "reference", problem.extra.get("files"))
        self.out_trees: dict = {}

    def generate(self, case, seed, device):
        data = self.module.generate_input(**dict(case.params), seed=seed)
        leaves, tree = flatten(data)
        leaves = tuple(t.to(device) if isinstance(t, torch.Tensor) else t for t in leaves)
        return Inputs(leaves, tree, unflatten(leaves, tree))

    def buffers(self, case, sample):
        """The tensors generate_input hands out for the output (pmpp_v2's tasks do): the leaves whose contents the
        reference's result does not depend on, found by running it once more with each filled with NaN (an integer
        tensor with its extreme). A candidate may write its result into one and return it; the measurer fills them
        so before every call. "Does not depend" allows the reference's own run-to-run spread (a cumsum on a GPU sums
        in an order that varies), never a NaN or an infinity moved."""
        key = ("buffers", case.label)
        if key not in self._profiles:
            base = [r.clone() for r in self._run(sample)[0]]
            found = set()
            for index, leaf in enumerate(sample.leaves):
                if isinstance(leaf, torch.Tensor) and leaf.numel() and leaf.dtype != torch.bool:
                    changed = sample.clone()
                    poison(changed.leaves[index])  # NaN or an integer's extreme; the structure holds these tensors
                    if _unchanged(base, self._run(changed)[0]):
                        found.add(index)
            self._profiles[key] = frozenset(found)
        return self._profiles[key]

    def _run(self, inputs: Inputs):
        out = self.module.ref_kernel(inputs.clone().data)
        leaves, tree = flatten(out)
        return leaves, tree

    def reference(self, inputs, on_cpu):
        leaves, tree = self._run(inputs)  # on the inputs' own device: a GPU MODE reference is written for it
        self.out_trees[inputs.tree] = tree
        return tuple(leaves)

    def check(self, inputs, outputs, refs):
        wrong_scale = scale_check(outputs, refs)
        if wrong_scale:
            return wrong_scale
        tree = self.out_trees.get(inputs.tree)
        if tree is None:
            tree = self._run(inputs)[1]
            self.out_trees[inputs.tree] = tree
        device = next((t.device for t in inputs.leaves if isinstance(t, torch.Tensor)), None)
        output = unflatten([o.to(device) if device is not None else o for o in outputs], tree)
        reason = _reason(self.module.check_implementation(inputs.clone().data, output))
        return reason and reason + self._against_float64(inputs, outputs, refs)

    def _against_float64(self, inputs, outputs, refs) -> str:
        """For an output the task's check refused: how far it and the task's own reference each are from ref_kernel
        run on float64 copies of the inputs, so a reader tells a wrong kernel from a reference looser than the check
        (a float32 convolution over 16,384 terms, say). Empty where ref_kernel does not run so."""
        leaves = tuple(t.double() if isinstance(t, torch.Tensor) and t.is_floating_point() else t
                       for t in inputs.clone().leaves)
        try:
            exact = flatten(self.module.ref_kernel(unflatten(leaves, inputs.tree)))[0]
        except Exception:  # noqa: BLE001 - a reference written for one dtype, or no room for the copies
            return ""
        pairs = [(o, r, e) for o, r, e in zip(outputs, refs, exact)
                 if all(isinstance(t, torch.Tensor) and t.is_floating_point() for t in (o, r, e))
                 and o.shape == r.shape == e.shape]
        if not pairs:
            return ""
        mine = max(float((o.to(e.device, torch.float64) - e).abs().max()) for o, _, e in pairs)
        theirs = max(float((r.to(e.device, torch.float64) - e).abs().max()) for _, r, e in pairs)
        return (f"; against ref_kernel on float64 inputs, the output's largest error is {mine:.3g} and the task's "
                f"reference's {theirs:.3g}")

    @property
    def has_baseline(self):
        return True

    def baseline_for(self, sample):
        ref_kernel, tree = self.module.ref_kernel, sample.tree

        def baseline(*leaves):
            return ref_kernel(unflatten(leaves, tree))

        return baseline

    def formula(self, name, case):
        function = getattr(self.module, name, None)
        return function(**dict(case.params)) if callable(function) else None


def _unchanged(a: list, b: list, spread: float = 1e-4) -> bool:
    """Bit for bit where a and b are integers or bools; floats with NaN and infinities where they were and every other
    value within `spread` of the largest magnitude: room for a float32 reduction summed in a varying order (atomics),
    while a float reference that reads a NaN-filled leaf shows NaN, and an integer leaf at its extreme moves far
    more."""
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if not (isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor) and x.shape == y.shape
                and x.dtype == y.dtype):
            return False
        if not x.is_floating_point():
            if not torch.equal(x, y):
                return False
            continue
        x, y = x.double(), y.double()
        finite = torch.isfinite(x)
        if not torch.equal(finite, torch.isfinite(y)) or \
                not torch.equal(x[~finite].nan_to_num(), y[~finite].nan_to_num()):  # NaN and infinities where they were
            return False
        if finite.any():
            scale = x[finite].abs().max()
            if not (x[finite] - y[finite]).abs().max() <= spread * scale:
                return False
    return True


def _reason(verdict) -> str | None:
    """check_implementation's answer in any of the shapes GPU MODE references use: (ok, message), a bool, or a
    message that is empty on success."""
    if isinstance(verdict, tuple) and len(verdict) == 2:
        ok, message = verdict
        return None if ok else f"check_implementation: {str(message).strip()[:300] or 'mismatch'}"
    if isinstance(verdict, torch.Tensor) and verdict.numel() == 1:
        verdict = bool(verdict)
    if isinstance(verdict, bool):
        return None if verdict else "check_implementation: mismatch"
    if isinstance(verdict, str):
        return f"check_implementation: {verdict.strip()[:300]}" if verdict.strip() else None
    if verdict is None:
        return None
    return f"check_implementation returned {type(verdict).__name__}, not (ok, message)"


def export(source: str, problem: Problem) -> str:
    """A GPU MODE submission: custom_kernel(data). A kernel evolved on a GPU MODE task is one already; an evolve
    kernel (custom_kernel(*inputs)) gets a wrapper that unpacks a tuple `data`."""
    if problem.format == "gpumode":
        return source
    return (source.rstrip() + "\n\n\n_evolve_custom_kernel = custom_kernel\n\n\n"
            "def custom_kernel(data):\n"
            "    \"\"\"GPU MODE's entry point: data is the tuple generate_input returns.\"\"\"\n"
            "    return _evolve_custom_kernel(*(data if isinstance(data, (tuple, list)) else (data,)))\n")
