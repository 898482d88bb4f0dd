"""The program as a functional FX graph: torch.fx's trace with torch.nn's leaf modules written as their functional
calls (a parameter is a get_attr node, so it can become an input), dropout in eval dropped, and the shapes and
dtypes every node ran at recorded (node.meta["tensor_meta"])."""
from __future__ import annotations

import operator

from .program import ProgramError

# op names (what op_name says) by what a fusing kernel can do with them
POINTWISE = {"add", "sub", "mul", "truediv", "div", "neg", "relu", "gelu", "silu", "sigmoid", "tanh", "exp"}
ROW_OPS = {"layer_norm", "rms_norm", "softmax"}  # a reduction over the last dimension, then pointwise
VIEWS = {"view", "reshape", "transpose", "permute", "getitem", "size", "split", "chunk", "unsqueeze", "squeeze",
         "expand", "flatten", "getattr"}  # contiguous copies, so it is timed


def trace(model):
    """model as a functional GraphModule, or ProgramError saying what to do."""
    import torch.fx

    try:
        graph_module = torch.fx.symbolic_trace(model)
    except Exception as exc:  # noqa: BLE001 - any tracing failure is the program's, said with what to do
        raise ProgramError(
            f"torch.fx could not trace the module ({type(exc).__name__}: {str(exc)[:300]}). Data-dependent control "
            "flow (an `if` on a tensor's value) and calls torch.fx cannot see through stop it: move them out of "
            "forward, or mark a helper with torch.fx.wrap, then try again") from exc
    _functionalize(graph_module)
    return graph_module


def record_shapes(graph_module, inputs) -> None:
    """Run once, keeping each node's output shape and dtype in node.meta["tensor_meta"]; the plain numbers the
    graph computes from shapes (a head's 1 / sqrt(d)) are folded in as constants, right for these inputs' sizes."""
    from torch.fx.passes.shape_prop import ShapeProp

    numbers: dict = {}

    class Recorder(ShapeProp):
        def run_node(self, node):
            result = super().run_node(node)
            if node.op in ("call_function", "call_method") and type(result) in (int, float):
                numbers[node] = result
            return result

    Recorder(graph_module).propagate(*inputs)
    _fold(graph_module, numbers)


def _fold(graph_module, numbers: dict) -> None:
    import torch.fx

    for node, value in numbers.items():
        for user in list(node.users):
            user.args = torch.fx.node.map_arg(user.args, lambda a, n=node, v=value: v if a is n else a)
            user.kwargs = torch.fx.node.map_arg(user.kwargs, lambda a, n=node, v=value: v if a is n else a)
    graph_module.graph.eliminate_dead_code()
    graph_module.recompile()


def _functionalize(graph_module) -> None:
    """Each call of a torch.nn leaf module evolve knows becomes its torch.nn.functional call on get_attr nodes."""
    graph = graph_module.graph
    for node in list(graph.nodes):
        if node.op != "call_module":
            continue
        module = graph_module.get_submodule(node.target)
        with graph.inserting_before(node):
            made = _functional_call(graph, node, module)
        if made is _DROPPED:
            node.replace_all_uses_with(node.args[0])
        elif made is not None:
            node.replace_all_uses_with(made)
        else:
            continue
        graph.erase_node(node)
    graph.lint()
    graph_module.recompile()


_DROPPED = object()


def _functional_call(graph, node, module):
    import torch
    import torch.nn.functional as F

    x = node.args[0] if node.args else None
    def param(name: str):
        return graph.get_attr(f"{node.target}.{name}") if getattr(module, name, None) is not None else None

    if isinstance(module, torch.nn.Dropout) and not module.training:
        return _DROPPED
    if isinstance(module, torch.nn.Linear):
        return graph.call_function(F.linear, (x, param("weight"), param("bias")))
    if isinstance(module, torch.nn.LayerNorm):
        return graph.call_function(F.layer_norm, (x, tuple(module.normalized_shape), param("weight"),
                                                  param("bias"), module.eps))
    if isinstance(module, getattr(torch.nn, "RMSNorm", ())):
        return graph.call_function(F.rms_norm, (x, tuple(module.normalized_shape), param("weight"), module.eps))
    if isinstance(module, torch.nn.GELU):
        return graph.call_function(F.gelu, (x,), {"approximate": module.approximate})
    if isinstance(module, torch.nn.Softmax):
        return graph.call_function(F.softmax, (x,), {"dim": module.dim})
    if isinstance(module, torch.nn.Embedding) and module.padding_idx is None and module.max_norm is None:
        return graph.call_function(F.embedding, (x, param("weight")))
    simple = {torch.nn.ReLU: F.relu, torch.nn.SiLU: F.silu, torch.nn.Sigmoid: torch.sigmoid, torch.nn.Tanh: torch.tanh}
    for kind, function in simple.items():
        if type(module) is kind:
            return graph.call_function(function, (x,))
    return None


_OPERATORS = {operator.add: "add", operator.sub: "sub", operator.mul: "mul", operator.truediv: "truediv",
              operator.neg: "neg", operator.getitem: "getitem", operator.matmul: "matmul", getattr: "getattr"}


def op_name(node) -> str:
    """What a node computes, in a word: "linear", "add", "layer_norm", a leaf module's class name."""
    if node.op == "call_function":
        return _OPERATORS.get(node.target, getattr(node.target, "__name__", str(node.target)).lstrip("_"))
    if node.op == "call_method":
        return str(node.target).rstrip("_")
    if node.op == "call_module":
        return type(node.graph.owning_module.get_submodule(node.target)).__name__
    return node.op


def tensor_meta(node):
    """(shape tuple, dtype) of a node's output tensor, or None when it is not one tensor."""
    meta = node.meta.get("tensor_meta") if hasattr(node, "meta") else None
    if meta is None or not hasattr(meta, "shape"):
        return None
    return tuple(meta.shape), meta.dtype


def is_compute(node) -> bool:
    """A node that runs an op on tensors (not an input, a parameter, the output, a view or arithmetic on sizes)."""
    return node.op in ("call_function", "call_method", "call_module") and op_name(node) not in VIEWS \
        and tensor_meta(node) is not None
