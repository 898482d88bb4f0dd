# stops: static check, then measurer
# expect: load: typing.sys|module
# expect-dynamic: run|correctness: not finite|> rtol
"""Cheat that passes the static check: reach torch through typing.sys.modules into a local name (no module alias, so
the assignment is not seen as one into a module) and replace time.perf_counter and torch.testing.assert_close. They
are replaced in the runner only; the measurer, which times and compares, is another process."""
import typing

import torch
import triton
import triton.language as tl

library = typing.sys.modules["torch"]
library.testing.assert_close = lambda *args, **kwargs: None
clock = typing.sys.modules["time"]
clock.perf_counter = lambda: 0.0


@triton.jit
def prepare_kernel(out_ptr):
    pass


def custom_kernel(x):
    out = torch.empty_like(x)
    prepare_kernel[(1,)](out)
    return out
