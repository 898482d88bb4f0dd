# stops: static check, then measurer
# expect: load: typing.sys|module
# expect-dynamic: run|correctness: not finite|> rtol
"""Cheat that passes the static check: `typing` is an allowed import and typing.sys is the sys module. Take the
harness's modules from typing.sys.modules into a local name (assignments are judged by the name they go through,
and a local name is no module alias) and replace its checks so every check reports a perfect output. The checks run
in the measurer, another process, so the patch changes nothing there. The output is garbage."""
import typing

import torch
import triton
import triton.language as tl

PERFECT = {"max_abs": 0.0, "max_rel": 0.0, "mse": 0.0, "rmse": 0.0, "psnr": 999.0, "cosine": 1.0,
           "frac_off": 0.0, "n_off": 0, "worst_index": [], "reason": None}


def correctness(self, caller, case, seeds, device):
    return [dict(PERFECT, dtype="float32") for _ in seeds]


checks = typing.sys.modules.get("evolve.harness.measurer.checks")
if checks is not None:
    checks.Checks.correctness = correctness
    checks.Checks.timed = lambda self, case, outs, sets_inputs: None


@triton.jit
def prepare_kernel(out_ptr):
    pass


def custom_kernel(x):
    out = torch.empty_like(x)
    prepare_kernel[(1,)](out)
    return out
