# stops: static check, then window
# expect: load: imports evolve
# expect-dynamic: ok
"""Cheat: switch the runner's own first line off from inside (every torch op allowed on the host) and let the library
do the work. Nothing refuses it any more, and nothing needs to: the measurer checks the answer, and the window times
the library's work like any other, so the trick earns at most the library's honest speed."""
import evolve.harness.runner
import torch
import triton


@triton.jit
def prepare_kernel(out_ptr):
    pass


class Everything(frozenset):
    def __contains__(self, item):
        return True

    def __rsub__(self, other):
        return set()


evolve.harness.runner.ALLOWED_OPS = Everything()


def custom_kernel(x):
    out = torch.empty_like(x)
    prepare_kernel[(1,)](out)
    return torch.softmax(x.float(), dim=-1).to(x.dtype)
