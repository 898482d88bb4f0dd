"""Triton seed kernels written for an extracted pattern, and one wrong kernel each for check-problem: a row kernel
(one program per row, the row in registers, every op in float32, rounded once on store) for the rows kind, a tiled
matmul with the bias for the linear kind. The wrong ones drop the last column (rows: of one output, for a chain with
several) or the last partial K block."""
from __future__ import annotations

from .chains import row_step

_HEADER = '''"""Seed written by `evolve model extract`: {what}.
An honest, simple kernel, not tuned (the search does that)."""
import torch
import triton
import triton.language as tl

'''

_POINTWISE = {
    "add": "{0} + {1}", "sub": "{0} - {1}", "mul": "{0} * {1}", "div": "{0} / {1}", "neg": "-{0}",
    "relu": "tl.maximum({0}, 0.0)", "sigmoid": "tl.sigmoid({0})", "tanh": "2.0 * tl.sigmoid(2.0 * {0}) - 1.0",
    "exp": "tl.exp({0})", "silu": "{0} * tl.sigmoid({0})", "identity": "{0}",
}


def _operand(operand, names: dict) -> str:
    return names[operand] if operand in names else repr(float(operand))


def _row_lines(step, value: str, names: dict) -> list[str]:
    """Triton lines computing one step into `value` (float32, a row per program)."""
    args = [_operand(o, names) for o in step.operands]
    if step.op in _POINTWISE:
        return [f"{value} = {_POINTWISE[step.op].format(*args)}"]
    if step.op == "gelu":
        x = args[0]
        if step.params["approximate"] == "tanh":
            inner = f"0.7978845608028654 * ({x} + 0.044715 * {x} * {x} * {x})"
            return [f"{value} = 0.5 * {x} * (2.0 * tl.sigmoid(2.0 * ({inner})))"]
        return [f"{value} = 0.5 * {x} * (1.0 + tl.erf({x} * 0.7071067811865476))"]
    if step.op == "softmax":
        return [f"{value}_max = tl.max(tl.where(mask, {args[0]}, -float('inf')), axis=0)",
                f"{value}_exp = tl.where(mask, tl.exp({args[0]} - {value}_max), 0.0)",
                f"{value} = {value}_exp / tl.sum({value}_exp, axis=0)"]
    scale = "".join(f" * {a}" for a in args[1:2])
    if step.op == "rms_norm":
        return [f"{value}_ms = tl.sum(tl.where(mask, {args[0]} * {args[0]}, 0.0), axis=0) / n_cols",
                f"{value} = {args[0]} / tl.sqrt({value}_ms + {step.params['eps']!r}){scale}"]
    shift = f" + {args[2]}" if step.params["bias"] and step.params["weight"] else (
        f" + {args[1]}" if step.params["bias"] else "")
    scale = scale if step.params["weight"] else ""
    return [f"{value}_mean = tl.sum(tl.where(mask, {args[0]}, 0.0), axis=0) / n_cols",
            f"{value}_dev = tl.where(mask, {args[0]} - {value}_mean, 0.0)",
            f"{value}_var = tl.sum({value}_dev * {value}_dev, axis=0) / n_cols",
            f"{value} = {value}_dev / tl.sqrt({value}_var + {step.params['eps']!r}){scale}{shift}"]


def rows_seed(unit, roles: tuple, label: str, wrong_output: int | None = None) -> str:
    """A row kernel computing the unit's nodes from its inputs (roles "full" [M, N] or "row" [N]) and storing each of
    its outputs (unit.outputs: one, or the intermediates read outside it and the last); with wrong_output, the kernel
    never writes that output's last column."""
    names = {node: f"in{i}" for i, node in enumerate(unit.inputs)}
    body = []
    for j, node in enumerate(unit.nodes):
        names[node] = f"v{j}"
        body += _row_lines(row_step(node), f"v{j}", names)
    outs = ["out"] if len(unit.outputs) == 1 else [f"out{k}" for k in range(len(unit.outputs))]
    params = ", ".join([f"{o}_ptr" for o in outs] + [f"in{i}_ptr" for i in range(len(roles))])
    loads = [f"in{i} = tl.load(in{i}_ptr + {'row * n_cols + ' if role == 'full' else ''}cols, mask=mask, "
             f"other=0.0).to(tl.float32)" for i, role in enumerate(roles)]
    stores = [f"tl.store({o}_ptr + row * n_cols + cols, {names[node]}.to({o}_ptr.dtype.element_ty), "
              f"mask={'mask & (cols < n_cols - 1)' if k == wrong_output else 'mask'})"
              for k, (o, node) in enumerate(zip(outs, unit.outputs))]
    lines = [f"def rows_kernel({params}, n_cols, BLOCK: tl.constexpr):",
             "    row = tl.program_id(0).to(tl.int64)", "    cols = tl.arange(0, BLOCK)", "    mask = cols < n_cols"]
    lines += [f"    {line}" for line in loads + body + stores]
    what = f"{label}, one row per program" + ("" if len(outs) == 1 else f", {len(outs)} outputs") + (
        "" if wrong_output is None else f" (WRONG: the last column of output {wrong_output} is never written)")
    head = ("" if wrong_output is None else "# expect: correctness: max_rel\n") + _HEADER.format(what=what)
    return head + 'KNOBS = {"num_warps": 4}\nKNOB_SPACE = {"num_warps": [1, 2, 4, 8]}\n\n\n@triton.jit\n' + \
        "\n".join(lines) + "\n\n\n" + _rows_launcher(outs, roles, wrong_output is not None)


def _rows_launcher(outs: list[str], roles: tuple, wrong: bool) -> str:
    """custom_kernel: the outputs allocated (zeroed for a wrong kernel, so its unwritten column is wrong, not
    garbage), one program per row, the result or the tuple of results."""
    full = roles.index("full")
    args = ", ".join(f"in{i}" for i in range(len(roles)))
    allocations = "\n".join(
        f"    {o} = torch.{'zeros' if wrong else 'empty'}((n_rows, n_cols), dtype=inputs[{full}].dtype, "
        f"device=inputs[{full}].device)" for o in outs)
    returned = outs[0] if len(outs) == 1 else "(" + ", ".join(outs) + ")"
    return f'''def custom_kernel({args}):
    inputs = [t.contiguous() for t in ({args},)]
    n_rows, n_cols = inputs[{full}].shape
{allocations}
    rows_kernel[(n_rows,)]({", ".join(outs)}, *inputs, n_cols, BLOCK=triton.next_power_of_2(n_cols),
                           num_warps=KNOBS["num_warps"])
    return {returned}
'''


def linear_seed(has_bias: bool, wrong: bool = False) -> str:
    """out = x @ weight.T (+ bias): x [M, K], weight [N, K], bias [N]; float32 sums, float32 inputs multiplied in
    full precision (no TF32), as torch does by default."""
    k_stop = "K - BLOCK_K + 1" if wrong else "K"
    what = "x @ weight.T + bias, tiled" + (" (WRONG: the last partial K block is skipped)" if wrong else "")
    head = ("# expect: correctness: max_rel\n" if wrong else "") + _HEADER.format(what=what)
    args = "x, weight, bias" if has_bias else "x, weight"
    return head + f'''KNOBS = {{"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32, "num_warps": 4}}
KNOB_SPACE = {{"BLOCK_M": [32, 64, 128], "BLOCK_N": [32, 64, 128], "BLOCK_K": [32, 64], "num_warps": [4, 8]}}


@triton.jit
def linear_kernel(x_ptr, w_ptr, b_ptr, out_ptr, M, N, K, HAS_BIAS: tl.constexpr, BLOCK_M: tl.constexpr,
                  BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    ks = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, {k_stop}, BLOCK_K):
        k = k0 + ks
        a = tl.load(x_ptr + rows[:, None] * K + k[None, :], mask=(rows[:, None] < M) & (k[None, :] < K), other=0.0)
        b = tl.load(w_ptr + cols[None, :] * K + k[:, None], mask=(cols[None, :] < N) & (k[:, None] < K), other=0.0)
        acc += tl.dot(a, b, input_precision="ieee")
    if HAS_BIAS:
        acc += tl.load(b_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)[None, :]
    tl.store(out_ptr + rows[:, None] * N + cols[None, :], acc.to(out_ptr.dtype.element_ty),
             mask=(rows[:, None] < M) & (cols[None, :] < N))


def custom_kernel({args}):
    x, weight = x.contiguous(), weight.contiguous()
    M, K = x.shape
    N = weight.shape[0]
    out = torch.{"zeros" if wrong else "empty"}((M, N), dtype=x.dtype, device=x.device)
    grid = (triton.cdiv(M, KNOBS["BLOCK_M"]), triton.cdiv(N, KNOBS["BLOCK_N"]))
    linear_kernel[grid](x, weight, {"bias.contiguous()" if has_bias else "x"}, out, M, N, K, HAS_BIAS={has_bias},
                        BLOCK_M=KNOBS["BLOCK_M"], BLOCK_N=KNOBS["BLOCK_N"], BLOCK_K=KNOBS["BLOCK_K"],
                        num_warps=KNOBS["num_warps"])
    return out
'''
