"""The text of an extracted problem's problem.toml, reference.py and notes.md."""
from __future__ import annotations

import textwrap
from pathlib import Path

from .patterns import Pattern
from .roofline import FLOPS_PER_ELEMENT

# Tolerances by the kind of op a pattern ends in, as the shipped problems of that kind set them (their comments say
# why): softmax's (problems/softmax), layernorm's (problems/layernorm, also for pointwise chains: outputs near zero
# are judged absolutely, below floor 1), matmul's (problems/matmul) for linear, float32 widened to 1e-3 for long sums.
TOLERANCES = {
    "softmax": {"float32": (1e-4, 1e-30, 0.999999), "bfloat16": (1e-2, 1e-30, 0.9999),
                "float16": (2e-3, 1e-30, 0.9999)},
    "rows": {"float32": (5e-4, 1.0, 0.999999), "bfloat16": (1e-2, 1.0, 0.9999), "float16": (2e-3, 1.0, 0.9999)},
    "linear": {"float32": (1e-3, 0.1, 0.99999), "bfloat16": (1e-2, 0.1, 0.9999), "float16": (2e-3, 0.1, 0.9999)},
}
FORBID = {
    "layer_norm": ["torch.nn.functional.layer_norm", "torch.layer_norm", "torch.nn.LayerNorm",
                   "torch.native_layer_norm", "torch.var", "torch.var_mean", "Tensor.var", "torch.mean",
                   "Tensor.mean", "torch.rsqrt"],
    "rms_norm": ["torch.nn.functional.rms_norm", "torch.rms_norm", "torch.nn.RMSNorm", "torch.rsqrt"],
    "softmax": ["torch.softmax", "torch.nn.functional.softmax", "Tensor.softmax", "torch._softmax",
                "torch.special.softmax"],
    "gelu": ["torch.nn.functional.gelu", "torch._C._nn.gelu", "torch.nn.GELU"],
    "silu": ["torch.nn.functional.silu", "torch.nn.SiLU"],
    "linear": ["torch.matmul", "torch.mm", "torch.bmm", "torch.addmm", "torch.einsum", "torch.nn.functional.linear",
               "torch._C._nn.linear", "Tensor.matmul", "Tensor.mm", "Tensor.__matmul__", "torch.tensordot"],
}
ROW_TESTS = [(1, 1), (1, 7), (3, 33), (7, 200)]
LINEAR_TESTS = [(1, 1, 1), (3, 17, 5), (33, 65, 17), (20, 300, 36)]


def _seen(pattern: Pattern) -> list[tuple[dict, str, int]]:
    return sorted(((dict(shape), dtype, count) for (shape, dtype), count in pattern.variants().items()),
                  key=lambda s: -s[2])


def _shape_line(shape: dict) -> str:
    return "shape = { " + ", ".join(f"{k} = {v}" for k, v in shape.items()) + " }"


def _cases(pattern: Pattern) -> tuple[list[dict], list[dict], dict]:
    """(test shapes, cpu benchmark shapes, accepted ranges)."""
    seen = [s for s, _, _ in _seen(pattern)]
    top = {k: max(s[k] for s in seen) for k in seen[0]}
    if pattern.kind == "rows":
        tests = [{"M": m, "N": n} for m, n in ROW_TESTS] + [{"M": 2, "N": min(top["N"], 4096)}]
        cpu = [{"M": min(top["M"], 64), "N": min(top["N"], 1024)}]
        accepts = {"M": max(top["M"], 8), "N": max(top["N"], 200)}
    else:
        tests = [{"M": m, "K": k, "N": n} for m, k, n in LINEAR_TESTS]
        cpu = [{"M": min(top["M"], 32), "K": min(top["K"], 128), "N": min(top["N"], 64)}]
        accepts = {"M": max(top["M"], 33), "K": max(top["K"], 300), "N": max(top["N"], 36)}
    return tests, cpu, accepts


def _what(pattern: Pattern) -> str:
    if pattern.kind == "linear":
        return ("out = x @ weight.T + bias (torch.nn.functional.linear) with x of shape (M, K), weight (N, K), bias "
                "(N,); out (M, N) in x's dtype, sums in float32")
    roles = ", ".join(f"in{i} {'(M, N)' if r == 'full' else '(N,)'}" for i, r in enumerate(pattern.roles))
    return (f"{pattern.label.replace('+', ', then ')} over rows: inputs {roles}; {_outputs_text(pattern)}; compute in "
            "float32 and round once; the norms and softmax reduce over the last dimension (N)")


def _outputs_text(pattern: Pattern) -> str:
    ops = pattern.output_ops()
    if len(ops) == 1:
        return "the output is (M, N) in the inputs' dtype"
    return (f"returns the tuple of {len(ops)} outputs, each (M, N) in the inputs' dtype: the results of "
            f"{', '.join(ops)} in that order (the program also reads the intermediate ones elsewhere, so each is "
            "written)")


def _last_line(pattern: Pattern) -> str:
    """The code's last computing line, without torch.fx's `x = None` frees."""
    return pattern.code.splitlines()[-2].split(";  ")[0].strip()


def problem_toml(name: str, program: Path, pattern: Pattern) -> str:
    ends = next((op for op in ("softmax",) if pattern.label.endswith(op)), pattern.kind)
    tolerances = TOLERANCES["linear" if pattern.kind == "linear" else ends if ends in TOLERANCES else "rows"]
    seen = _seen(pattern)
    dtypes = sorted({dtype for _, dtype, _ in seen})
    counts = "; ".join(f"{' '.join(f'{k}={v}' for k, v in s.items())} {d} x{c}" for s, d, c in seen)
    description = textwrap.fill(
        f"{_what(pattern)}. Written by `evolve model extract` from {program.name} ({pattern.id}), which runs it "
        f"{len(pattern.units)} time(s) per forward: {counts} (the benchmark cases are these shapes, each weighted by "
        f"how often it runs). "
        f"The reference is the program's own code: {_last_line(pattern)}", 116)
    tests, cpu, accepts = _cases(pattern)
    forbid = sorted({call for op in pattern.label.split("+") for call in FORBID.get(op, [])})
    out = [f'name = "{name}"', f'description = """\n{description}\n"""', f"dtypes = {dtypes!r}".replace("'", '"'),
           "seeds = [1, 2, 3]", "",
           "# Tolerances as the shipped problems of this kind set them (evolve/model_tools/problem_text.py says "
           "which);", "# an element fails when |out - ref| > rtol * max(|ref|, floor)."]
    for dtype in dtypes:
        rtol, floor, cosine = tolerances.get(dtype, tolerances["float32"])
        out += [f"[tolerance.{dtype}]", f"rtol = {rtol!r}", f"floor = {floor!r}", f"min_cosine = {cosine!r}", ""]
    out += ["# Small, odd shapes for the run and correctness rungs."]
    out += [f"[[test]]\n{_shape_line(s)}" for s in tests]
    out += ["", "# The shapes the program runs it at, each weighted in the fitness by how often it runs."]
    out += [f'[[benchmark]]\n{_shape_line(s)}\ndtypes = ["{dtype}"]\nweight = {count}' for s, dtype, count in seen]
    out += ["", "# Timed under the Triton CPU interpreter (no GPU): small."]
    out += [f"[[cpu_benchmark]]\n{_shape_line(s)}" for s in cpu]
    out += ["", "[forbid]", f"calls = {forbid!r}".replace("'", '"'), 'modules = ["reference"]', "", "[accepts]"]
    out += [f"{k} = {{ min = 1, max = {v} }}" for k, v in accepts.items()]
    return "\n".join(out) + "\n"


def reference_py(program: Path, pattern: Pattern) -> str:
    body = pattern.code.replace("def forward(self, ", "def program_op(", 1)
    body = "\n".join(line.split(";  ")[0] for line in body.splitlines())  # without the fx code's `x = None` frees
    dims = "M, N" if pattern.kind == "rows" else "M, K, N"
    if pattern.kind == "rows":
        full, row = pattern.roles.count("full"), pattern.roles.count("row")
        per_element = sum(FLOPS_PER_ELEMENT.get(op, 1) for op in pattern.label.split("+"))
        moved, work = f"({full + len(pattern.output_ops())} * M * N + {row} * N)", f"{per_element} * M * N"
        shapes = '{"full": (M, N), "row": (N,)}'
        scale = "{}"
    else:
        moved = "(M * K + N * K + M * N" + (" + N)" if "bias" in pattern.roles else ")")
        work = "2 * M * N * K"
        shapes = '{"x": (M, K), "weight": (N, K), "bias": (N,)}'
        scale = '{"weight": K ** -0.5, "bias": 0.1}'  # so that the result is about unit scale whatever K is
    return f'''"""Written by `evolve model extract` from {program.name}: {pattern.id} ({pattern.label}),
the op as the program runs it, its parameters made inputs."""
import torch

_DTYPES = {{"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}}
ROLES = {tuple(pattern.roles)!r}  # each input's part: its shape below


{body.strip()}


def generate_input(seed, {dims}, dtype="float32", device="cpu"):
    """Gaussian inputs of the shapes each role has, drawn from seed alone."""
    g = torch.Generator(device=device)
    g.manual_seed(seed)
    shapes, scale = {shapes}, {scale}
    return tuple((torch.randn(shapes[role], generator=g, device=device) * scale.get(role, 1.0)).to(_DTYPES[dtype])
                 for role in ROLES)


def ref_kernel(*inputs):
    """The program's code in float64."""
    return program_op(*(t.double() for t in inputs))


def baseline(*inputs):
    """The program's code as it runs it (torch eager; the harness also times it under torch.compile)."""
    return program_op(*inputs)


def bytes_moved({dims}, dtype="float32"):
    """Each input read once, each output written once."""
    return {moved} * torch.empty((), dtype=_DTYPES[dtype]).element_size()


def flops({dims}, dtype="float32"):
    return {work}
'''


def notes_md(program: Path, pattern: Pattern) -> str:
    seen = "\n".join(f"- {' '.join(f'{k}={v}' for k, v in s.items())} {d}: {c} call(s) per forward"
                     for s, d, c in _seen(pattern))
    bound = "memory-bound at these sizes: one read of each input and one write of each output is the floor" \
        if pattern.kind == "rows" else "compute-bound for large M, memory-bound (reading the weight) for small M"
    return f"""# {pattern.label} from {program.name}

Written by `evolve model extract` from a user's program: {pattern.id} of its profile. {_what(pattern)}.

The program's own code for it (torch.fx's, its parameters made inputs):

```python
{pattern.code.strip()}
```

Where the program runs it:

{seen}

It is {bound}. A kernel replaces every one of these calls in the program (`evolve model apply`), so a kernel
fast at the shapes above matters more than one fast elsewhere.
"""
