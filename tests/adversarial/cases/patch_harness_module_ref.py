# stops: static check, then window
# expect: load: imports evolve|imports __main__
# expect-dynamic: ok
"""Cheat: switch the runner's own first line off from inside (every torch op allowed on the host) and let the library
do the work. Nothing refuses it any more, and nothing needs to: the measurer checks the answer, and the window times
the library's work like any other, so the trick earns at most the library's honest speed."""
import __main__
import evolve.harness.runner.runner
import torch
import triton


@triton.jit
def prepare_kernel(out_ptr):
    pass


# The running runner is the process's __main__ (python -m evolve.harness.runner.runner); patch wherever it lives.
for module in (__main__, evolve.harness.runner.runner):
    if hasattr(module, "ALLOWED_OPS"):
        module.ALLOWED_OPS = module.ALLOWED_OPS | {"_softmax", "softmax", "_to_copy"}


def custom_kernel(x):
    out = torch.empty_like(x)
    prepare_kernel[(1,)](out)
    return torch.softmax(x.float(), dim=-1).to(x.dtype)
