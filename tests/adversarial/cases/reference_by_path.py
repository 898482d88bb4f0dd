# stops: static check, then runner
# expect: load: imports importlib|imports sys|imports pathlib
# expect-dynamic: compile: torch ops
"""Cheat: find the problem's reference.py next to the evolve package (on sys.path) and call its ref_kernel."""
import importlib.util
import sys
from pathlib import Path

import torch
import triton
import triton.language as tl

ref = None
for entry in sys.path:
    path = Path(entry or ".") / "problems" / "softmax" / "reference.py"
    if path.exists():
        spec = importlib.util.spec_from_file_location("softmax_ref", path)
        ref = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(ref)
        break


@triton.jit
def prepare_kernel(out_ptr):
    pass


def custom_kernel(x):
    out = torch.empty_like(x)
    prepare_kernel[(1,)](out)
    return ref.ref_kernel(x).to(x.dtype)
