# stops: runner
# expect: run|compile: systemexit
"""Cheat: launch, then raise SystemExit(0), hoping the harness treats a clean interpreter exit as success.
No import needed, so the static check has nothing to see."""
import torch
import triton
import triton.language as tl


@triton.jit
def prepare_kernel(out_ptr):
    pass


def custom_kernel(x):
    out = torch.empty_like(x)
    prepare_kernel[(1,)](out)
    raise SystemExit(0)
