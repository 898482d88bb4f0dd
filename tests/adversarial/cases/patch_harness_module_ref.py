# expect: load: imports evolve
# expect-dynamic: load: replaced
"""Cheat: leave evolve.harness.metrics alone (its functions are watched) and instead point evolve.harness.rungs'
reference to it, the module attribute rungs.metrics, at a stand-in that reports every output finite and exact."""
import evolve.harness.metrics
import evolve.harness.rungs
import torch
import triton
import triton.language as tl

PERFECT = {"max_abs": 0.0, "max_rel": 0.0, "mse": 0.0, "rmse": 0.0, "psnr": float("inf"), "cosine": 1.0,
           "frac_off": 0.0, "n_off": 0, "worst_index": []}


class Metrics:
    worst_of = staticmethod(evolve.harness.metrics.worst_of)
    summarize = staticmethod(evolve.harness.metrics.summarize)
    error_metrics = staticmethod(lambda *args, **kwargs: dict(PERFECT))
    judge = staticmethod(lambda *args, **kwargs: None)
    all_finite = staticmethod(lambda *args, **kwargs: True)
    max_rel = staticmethod(lambda *args, **kwargs: 0.0)


evolve.harness.rungs.metrics = Metrics


@triton.jit
def prepare_kernel(out_ptr):
    pass


def custom_kernel(x):
    out = torch.empty_like(x)
    prepare_kernel[(1,)](out)
    return out
