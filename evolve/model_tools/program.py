"""A user's program: a Python file whose `program()` returns (module, example_inputs), loaded onto a device."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

CONTRACT = ("a program file defines `def program():` returning `(module, inputs)`: an nn.Module (or a plain "
            "function: the region of a script worth profiling, moved into one) and the tuple of example inputs it "
            "takes, at the sizes the program really runs")


class ProgramError(ValueError):
    """The program file cannot be loaded, traced or run as asked; the message says what to do."""


def pick_device(device: str = "auto") -> str:
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise ProgramError("--device cuda: no CUDA GPU is visible here")
    return device


def load_program(path, device: str = "cpu"):
    """(module in eval mode, inputs tuple), both moved to `device`."""
    import torch

    path = Path(path).resolve()
    if not path.is_file():
        raise ProgramError(f"{path}: no such file; {CONTRACT}")
    name = f"evolve_user_program_{abs(hash(str(path)))}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ProgramError(f"{path}: not a Python file; {CONTRACT}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look their module up by name
    sys.path.insert(0, str(path.parent))  # the program's own imports beside it
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(path.parent))
    if not callable(getattr(module, "program", None)):
        raise ProgramError(f"{path}: no program() function; {CONTRACT}")
    made = module.program()
    if not (isinstance(made, tuple) and len(made) == 2 and callable(made[0])):
        raise ProgramError(f"{path}: program() returned {type(made).__name__}; {CONTRACT}")
    model, inputs = made
    inputs = tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,)
    if isinstance(model, torch.nn.Module):  # a plain function (a script's region) is traced as it is
        model = model.to(device).eval()
    inputs = tuple(x.to(device) if isinstance(x, torch.Tensor) else x for x in inputs)
    return model, inputs
