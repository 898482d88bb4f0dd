# stops: static check, then measurer
# expect: load: imports evolve
# expect-dynamic: run|correctness: not finite|> rtol
"""Cheat: the harness's own metrics module, imported and told that every output has zero error and is finite."""
import evolve.harness.shared.metrics
import torch
import triton
import triton.language as tl

PERFECT = {"max_abs": 0.0, "max_rel": 0.0, "mse": 0.0, "rmse": 0.0, "psnr": float("inf"), "cosine": 1.0,
           "frac_off": 0.0, "n_off": 0, "worst_index": []}
evolve.harness.shared.metrics.error_metrics = lambda *args, **kwargs: dict(PERFECT)
evolve.harness.shared.metrics.max_rel = lambda *args, **kwargs: 0.0
evolve.harness.shared.metrics.all_finite = lambda *args, **kwargs: True
evolve.harness.shared.metrics.judge = lambda *args, **kwargs: None


@triton.jit
def prepare_kernel(out_ptr):
    pass


def custom_kernel(x):
    out = torch.empty_like(x)
    prepare_kernel[(1,)](out)
    return out
