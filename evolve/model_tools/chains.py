"""Which nodes one row-wise kernel can compute (pointwise ops, and layer_norm, rms_norm and softmax over the last
dimension, on tensors of the output's shape or a vector along its last dimension), and the chains of them: maximal
runs where each node's only user is the next, so that fusing the run saves every intermediate tensor's write and read;
then, among the nodes left, runs of pointwise ops ending in at most one norm or softmax whose intermediate results are
also used outside (a pre-LayerNorm block's residual add, read by the next LayerNorm and the next add): one kernel
computes them too, writing each such intermediate as an output beside the final result (chain_outputs).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .graph import POINTWISE, ROW_OPS, op_name, tensor_meta

FLOAT_DTYPES = ("float32", "bfloat16", "float16")


@dataclass
class Step:
    """One node as a row kernel computes it: its op, its operands (nodes or numbers) and its settings."""
    node: object
    op: str
    operands: list
    params: dict = field(default_factory=dict)


def _arg(node, index: int, name: str, default=None):
    if len(node.args) > index:
        return node.args[index]
    return node.kwargs.get(name, default)


def _step(node) -> Step | None:
    """The node as a Step, before its operands' shapes are looked at; None where its arguments are outside what a
    row kernel does (an `alpha`, a rounding mode, a softmax not over the last dimension)."""
    name = op_name(node)
    meta = tensor_meta(node)
    if meta is None:
        return None
    rank = len(meta[0])
    if name in ("add", "sub", "mul", "truediv", "div"):
        if node.kwargs.get("alpha", 1) != 1 or node.kwargs.get("rounding_mode") is not None or len(node.args) != 2:
            return None
        return Step(node, "div" if name == "truediv" else name, list(node.args[:2]))
    if name in ("neg", "relu", "sigmoid", "tanh", "exp", "silu"):
        return Step(node, name, [node.args[0]])
    if name == "gelu":
        return Step(node, name, [node.args[0]], {"approximate": _arg(node, 1, "approximate", "none")})
    if name == "dropout" and _arg(node, 2, "training", True) is False:
        return Step(node, "identity", [node.args[0]])
    if name == "softmax" and _arg(node, 1, "dim") in (-1, rank - 1) and _arg(node, 3, "dtype") is None:
        return Step(node, name, [node.args[0]])
    if name == "layer_norm" and len(_arg(node, 1, "normalized_shape", ())) == 1:
        weight, bias = _arg(node, 2, "weight"), _arg(node, 3, "bias")
        return Step(node, name, [node.args[0]] + [t for t in (weight, bias) if t is not None],
                    {"eps": float(_arg(node, 4, "eps", 1e-5)), "weight": weight is not None, "bias": bias is not None})
    if name == "rms_norm" and len(_arg(node, 1, "normalized_shape", ())) == 1:
        weight, eps = _arg(node, 2, "weight"), _arg(node, 3, "eps")
        if eps is None:  # torch's default: the input dtype's machine epsilon, fixed here at the dtype it ran in
            import torch

            eps = torch.finfo(meta[1]).eps
        return Step(node, name, [node.args[0]] + ([weight] if weight is not None else []),
                    {"eps": float(eps), "weight": weight is not None})
    return None


def operand_role(operand, out_shape) -> str | None:
    """"full" (the output's shape), "row" (a vector along the last dimension), "number", or None (neither)."""
    if isinstance(operand, (int, float)) and not isinstance(operand, bool):
        return "number"
    meta = tensor_meta(operand) if hasattr(operand, "meta") else None
    if meta is None:
        return None
    shape = meta[0]
    if shape == out_shape:
        return "full"
    if shape and out_shape and shape[-1] == out_shape[-1] and all(d == 1 for d in shape[:-1]) \
            and len(shape) <= len(out_shape):
        return "row"
    return None


def row_step(node) -> Step | None:
    """The node as a row kernel's Step, or None where one row kernel cannot compute it."""
    if node.op not in ("call_function", "call_method") or op_name(node) not in POINTWISE | ROW_OPS | {"dropout"}:
        return None
    step = _step(node)
    if step is None:
        return None
    out_shape, out_dtype = tensor_meta(node)
    if str(out_dtype).removeprefix("torch.") not in FLOAT_DTYPES or not out_shape:
        return None
    for operand in step.operands:
        role = operand_role(operand, out_shape)
        if role is None or (role != "number" and tensor_meta(operand)[1] != out_dtype):
            return None
    if step.op in ROW_OPS and operand_role(step.operands[0], out_shape) != "full":
        return None
    return step


def find_chains(graph) -> list[list]:
    """The chains of two or more row-kernel nodes, each a list of nodes in order; a node is in one chain at most.
    Chains whose only output is their last node come first, then those with several outputs (chain_outputs)."""
    claimed: set = set()
    chains = []
    for node in graph.nodes:
        if node in claimed or row_step(node) is None:
            continue
        chain, tail = [node], node
        while len(tail.users) == 1:
            user = next(iter(tail.users))
            if user in claimed or row_step(user) is None or tensor_meta(user)[0] != tensor_meta(node)[0]:
                break
            chain.append(user)
            tail = user
        if len(chain) > 1:
            chains.append(chain)
            claimed.update(chain)
    return chains + _chains_with_several_outputs(graph, claimed)


def chain_outputs(nodes: list) -> list:
    """The nodes whose results leave the chain, in its order: those with a user outside it, and the last."""
    inside = set(nodes)
    return [n for n in nodes[:-1] if any(user not in inside for user in n.users)] + [nodes[-1]]


def _chains_with_several_outputs(graph, claimed: set) -> list[list]:
    """Among the nodes no chain holds: pointwise ops, each read by the next, ending in at most one norm or softmax,
    where an intermediate result is also read outside the chain."""
    position = {node: i for i, node in enumerate(graph.nodes)}
    chains = []
    for node in graph.nodes:
        step = row_step(node)
        if node in claimed or step is None or step.op in ROW_OPS:
            continue
        chain = [node]
        while (user := _next_in_chain(chain, claimed, position)) is not None:
            chain.append(user)
            if op_name(user) in ROW_OPS:
                break
        if len(chain) > 1 and len(chain_outputs(chain)) > 1:
            chains.append(chain)
            claimed.update(chain)
    return chains


def _next_in_chain(chain: list, claimed: set, position: dict):
    """The first user of the chain's last node, where it extends the chain, else None: a row-kernel node of the same
    shape that runs before every outside user of the chain's results, so that one kernel called in its place feeds
    them all. That also keeps out a user whose other operand is computed from the chain's results (h + f(h)): that
    computation starts at an outside user, which runs before it."""
    inside = set(chain)
    outside_users = [u for n in chain for u in n.users if u not in inside]
    user = min(chain[-1].users, key=position.__getitem__, default=None)
    if user is None or user in claimed or row_step(user) is None or tensor_meta(user)[0] != tensor_meta(chain[0])[0]:
        return None
    return user if all(position[user] < position[other] for other in outside_users if other is not user) else None
