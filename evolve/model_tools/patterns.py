"""Nodes and chains grouped by the code they run: each unit (one op, or one chain) is written as a small FX graph of
its own, its outside inputs made placeholders in0, in1, ... (a parameter too), and units whose code is the same are
one pattern, with the shapes and dtypes each ran at. A pattern is what a problem is written from and what a kernel
replaces; its kind says how a problem states its shapes: "rows" (M rows of N), "linear" (M x K by N x K) or None
(profiled only)."""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field

from .chains import chain_outputs, find_chains, operand_role, row_step
from .graph import is_compute, op_name, tensor_meta

DTYPE_NAMES = {"torch.float32": "float32", "torch.bfloat16": "bfloat16", "torch.float16": "float16"}


@dataclass
class Unit:
    """One op or one chain in the graph: its nodes, the outside nodes it reads (in placeholder order), and the nodes
    whose results leave it (the last, and in a chain with several outputs each intermediate also read outside)."""
    nodes: list
    inputs: list
    dims: dict | None  # M, N (rows) or M, K, N (linear); None where the kind is None
    dtype: str
    outputs: list = field(default_factory=list)


@dataclass
class Pattern:
    """Units that run the same code: the code (a function of in0, in1, ...), its kind, and where it ran."""
    id: str
    label: str
    kind: str | None
    code: str
    roles: tuple  # per input: "full", "row" (rows), "x", "weight", "bias" (linear), "tensor" (other)
    units: list = field(default_factory=list)
    outputs: tuple = ()  # the positions in the chain of the nodes whose results it returns, in order

    def output_ops(self) -> list[str]:
        """The op of each result the code returns, in order: ["add", "layer_norm"] for a residual add+layer_norm."""
        ops = self.label.split("+")
        return [ops[i] for i in self.outputs] if self.outputs else ops[-1:]

    def variants(self) -> Counter:
        """(dims as sorted items, dtype) -> how many of the units ran at it."""
        return Counter((tuple(u.dims.items()) if u.dims else _shapes_of(u), u.dtype) for u in self.units)


def _shapes_of(unit: Unit) -> tuple:
    shapes = [tensor_meta(n)[0] for n in unit.inputs if tensor_meta(n) is not None]
    out = tensor_meta(unit.nodes[-1])
    return (("in", tuple(shapes)), ("out", out[0] if out else None))


def subgraph(nodes: list, inputs: list, kind: str | None, outputs: list | None = None):
    """A GraphModule computing `nodes` from placeholders in0.. for `inputs`, names v0.., and for the rows kind a
    norm's width read from its input and a softmax over dim -1, so that one code serves every shape; it returns the
    last node's result, or the tuple of `outputs`' where there are several."""
    import torch
    import torch.fx

    graph = torch.fx.Graph()
    env = {node: graph.placeholder(f"in{i}") for i, node in enumerate(inputs)}
    for i, node in enumerate(nodes):
        args = torch.fx.node.map_arg(node.args, env.__getitem__)
        kwargs = dict(torch.fx.node.map_arg(node.kwargs, env.__getitem__))
        if kind == "rows":
            args, kwargs = _shape_free(graph, node, list(args), kwargs)
        env[node] = graph.create_node(node.op, node.target, tuple(args), kwargs, name=f"v{i}")
    outputs = outputs or nodes[-1:]
    graph.output(tuple(env[n] for n in outputs) if len(outputs) > 1 else env[outputs[0]])
    return torch.fx.GraphModule(torch.nn.Module(), graph)


def _shape_free(graph, node, args: list, kwargs: dict):
    name = op_name(node)
    if name in ("layer_norm", "rms_norm"):
        width = graph.call_method("size", (args[0], -1))
        if len(args) > 1:
            args[1] = (width,)
        else:
            kwargs["normalized_shape"] = (width,)
        step = row_step(node)
        if name == "rms_norm" and step is not None:  # torch's default eps is the dtype's: fixed at the one it ran
            args, kwargs = args[:3], {**{k: v for k, v in kwargs.items() if k != "eps"}, "eps": step.params["eps"]}
    if name == "softmax":
        if len(args) > 1:
            args[1] = -1
        else:
            kwargs["dim"] = -1
    return args, kwargs


def _outside_inputs(nodes: list) -> list:
    import torch.fx

    inside, found = set(nodes), []
    for node in nodes:
        def note(arg):
            if arg not in inside and arg not in found:
                found.append(arg)
            return arg
        torch.fx.node.map_arg((node.args, node.kwargs), note)
    return found


def _linear_dims(node) -> dict | None:
    x, weight = node.args[0], node.args[1] if len(node.args) > 1 else node.kwargs.get("weight")
    bias = node.args[2] if len(node.args) > 2 else node.kwargs.get("bias")
    metas = [tensor_meta(t) if hasattr(t, "meta") else None for t in (x, weight)]
    if None in metas or len(metas[1][0]) != 2 or metas[0][1] != metas[1][1]:
        return None
    if bias is not None and (not hasattr(bias, "meta") or tensor_meta(bias) is None):
        return None
    (x_shape, _), ((n, k), _) = metas
    return {"M": math.prod(x_shape[:-1]), "K": k, "N": n}


def describe(nodes: list) -> tuple[Unit, str | None, tuple]:
    """The unit of these nodes, its kind and its inputs' roles."""
    inputs = _outside_inputs(nodes)
    out = tensor_meta(nodes[-1])
    dtype = DTYPE_NAMES.get(str(out[1]), str(out[1]).removeprefix("torch.")) if out else "?"
    kind, dims, roles = None, None, tuple("tensor" for _ in inputs)
    if out and all(row_step(n) is not None for n in nodes) and all(hasattr(t, "meta") for t in inputs):
        roles = tuple(operand_role(t, out[0]) for t in inputs)
        if "full" in roles:  # the result's shape is an input's: a vector op alone is left to the profile
            kind, dims = "rows", {"M": math.prod(out[0][:-1]), "N": out[0][-1]}
        else:
            roles = tuple("tensor" for _ in inputs)
    elif len(nodes) == 1 and op_name(nodes[0]) == "linear" and nodes[0].op == "call_function" and dtype in \
            ("float32", "bfloat16", "float16") and (dims := _linear_dims(nodes[0])) is not None:
        kind, roles = "linear", ("x", "weight", "bias")[:len(inputs)]
    return Unit(nodes, inputs, dims, dtype, chain_outputs(nodes)), kind, roles


def find_patterns(graph_module) -> list[Pattern]:
    """Every op's and every chain's pattern, ops numbered o1.. and chains c1.. in the order they first run."""
    by_key: dict = {}
    patterns: list[Pattern] = []
    units = [[node] for node in graph_module.graph.nodes if is_compute(node)] + find_chains(graph_module.graph)
    counters = {"o": 0, "c": 0}
    for nodes in units:
        unit, kind, roles = describe(nodes)
        code = subgraph(nodes, unit.inputs, kind, unit.outputs).code.strip()
        key = (len(nodes) > 1, kind, code, roles)
        if key not in by_key:
            prefix = "c" if len(nodes) > 1 else "o"
            counters[prefix] += 1
            label = "+".join(op_name(n) for n in nodes)
            by_key[key] = Pattern(f"{prefix}{counters[prefix]}", label, kind, code, roles,
                                  outputs=tuple(nodes.index(n) for n in unit.outputs))
            patterns.append(by_key[key])
        by_key[key].units.append(unit)
    return patterns
