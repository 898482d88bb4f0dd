"""The child process of `evolve model apply`: the program with each problem's kernel put in place of every unit of its
pattern (an FX graph patch whose code is written out for the user to read; a kernel of a chain with several outputs
feeds every user of each), its outputs checked against the original's, and both timed. Run as
`python -m evolve.model_tools.substitute SPEC.json`; on the CPU the parent sets TRITON_INTERPRET=1 first, since Triton
reads it when it is imported."""
from __future__ import annotations

import importlib.util
import json
import operator
import sys
from pathlib import Path

# How close the patched program's outputs must be to the original's, by dtype (rtol, atol): a kernel that computes in
# float32 and rounds once differs from torch's op-by-op roundings by a few of the dtype's ulps.
OUTPUT_TOLERANCE = {"torch.float32": (1e-3, 1e-3), "torch.bfloat16": (3e-2, 3e-2), "torch.float16": (1e-2, 1e-2)}


def _load_kernel(path: Path):
    spec = importlib.util.spec_from_file_location(f"evolve_kernel_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.custom_kernel


def _wrapper(name: str, kind: str, roles: tuple, kernel):
    """A function taking the unit's inputs as the program has them, reshaping to the problem's 2-D form."""
    if kind == "rows":
        def call(*inputs):
            shape = inputs[roles.index("full")].shape
            flat = [t.reshape(-1, shape[-1]) if role == "full" else t.reshape(shape[-1])
                    for t, role in zip(inputs, roles)]
            out = kernel(*flat)
            return tuple(t.reshape(shape) for t in out) if isinstance(out, (tuple, list)) else out.reshape(shape)
    else:
        def call(x, *rest):
            return kernel(x.reshape(-1, x.shape[-1]), *rest).reshape(*x.shape[:-1], rest[0].shape[0])
    call.__name__ = call.__qualname__ = f"evolve_{name}"
    call.__module__ = "kernels"  # so the patched code names it kernels_evolve_<problem>
    return call


def patch(graph_module, patterns, kernels: list[dict]) -> dict:
    """Each kernel put in place of its pattern's units in graph_module; {problem: units replaced}."""
    graph, replaced, gone = graph_module.graph, {}, set()
    renamed: dict = {}  # a replaced unit's result -> the node that now holds it (another unit may read it)
    for entry in kernels:
        match = next((p for p in patterns if (p.kind, p.code, list(p.roles)) ==
                      (entry["kind"], entry["code"], entry["roles"])), None)
        replaced[entry["problem"]] = 0
        if match is None:
            continue
        function = _wrapper(entry["problem"], entry["kind"], tuple(entry["roles"]), _load_kernel(Path(entry["file"])))
        for unit in match.units:
            if gone & set(unit.nodes):
                continue  # an earlier kernel took part of it
            renamed.update(_replace(graph, unit, [renamed.get(n, n) for n in unit.inputs], function))
            gone.update(unit.nodes)
            replaced[entry["problem"]] += 1
    graph.lint()
    graph_module.recompile()
    return replaced


def _replace(graph, unit, inputs: list, function) -> dict:
    """The unit's nodes replaced by one call of function, placed before its last node (every input is there, and a
    chain with several outputs has every outside user of its results after it): each user of a result, inside the
    program, now reads the call's result, or the call's output of the same position where there are several; the
    result nodes replaced -> the nodes now holding them."""
    with graph.inserting_before(unit.nodes[-1]):
        new = graph.call_function(function, tuple(inputs))
        if len(unit.outputs) == 1:
            results = [new]
        else:
            results = [graph.call_function(operator.getitem, (new, k)) for k in range(len(unit.outputs))]
    for node, result in zip(unit.outputs, results):
        result.meta = dict(node.meta)
        node.replace_all_uses_with(result)
    for node in reversed(unit.nodes):
        graph.erase_node(node)
    return dict(zip(unit.outputs, results))


def _outputs(value) -> list:
    import torch

    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [t for item in value for t in _outputs(item)]
    if isinstance(value, dict):
        return [t for item in value.values() for t in _outputs(item)]
    return []


def compare(original, patched) -> dict:
    """Whether every output of the patched program is close to the original's, and the largest difference."""
    import torch

    worst, ok = 0.0, True
    for a, b in zip(_outputs(original), _outputs(patched)):
        rtol, atol = OUTPUT_TOLERANCE.get(str(a.dtype), (1e-3, 1e-3))
        ok = ok and a.shape == b.shape and bool(torch.allclose(a.float(), b.float(), rtol=rtol, atol=atol))
        worst = max(worst, float((a.float() - b.float()).abs().max()) if a.numel() else 0.0)
    return {"match": ok, "max_abs_diff": worst}


def run(spec: dict) -> dict:
    import torch

    from .profile import traced_program
    from .timing import time_forward, time_nodes

    device, repeats = spec["device"], spec["repeats"]
    graph_module, patterns, inputs, model = traced_program(spec["program"], device)
    node_ms = time_nodes(graph_module, inputs, device, repeats=repeats)
    parts = {e["problem"]: sum(node_ms.get(n, 0.0) for p in patterns if (p.kind, p.code, list(p.roles)) ==
                               (e["kind"], e["code"], e["roles"]) for u in p.units for n in u.nodes)
             for e in spec["kernels"]}
    with torch.no_grad():
        original = model(*inputs)
    replaced = patch(graph_module, patterns, spec["kernels"])
    out = Path(spec["out"])
    (out / "patched_forward.py").write_text(
        "# The program's forward as torch.fx traced it, with evolve's kernels in place (written by evolve model "
        "apply).\n# Each evolve_<problem>(...) call reshapes its inputs and calls kernels/<problem>.py's "
        "custom_kernel.\n" + graph_module.code)
    with torch.no_grad():
        checked = compare(original, graph_module(*inputs))
    before = time_forward(model, inputs, device, repeats=repeats)
    after = time_forward(graph_module, inputs, device, repeats=max(1, repeats // 3) if device == "cpu" else repeats)
    return {"device": device, "before_ms": before, "after_ms": after, "replaced": replaced, "parts_ms": parts,
            "node_total_ms": sum(node_ms.values()), **checked}


if __name__ == "__main__":
    spec_path = Path(sys.argv[1])
    result = run(json.loads(spec_path.read_text()))
    spec_path.with_name("result.json").write_text(json.dumps(result, indent=1))
