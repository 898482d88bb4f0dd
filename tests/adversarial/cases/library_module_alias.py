# stops: static check, then window
# expect: load: torch.nn.functional in host code
# expect-dynamic: ok
"""Cheat: the library wall one assignment thick. torch.nn (a module no rule refuses) is kept in a local name, and every
chain through that name goes unread by a check that follows imports only: it reaches the switch of the runner's op
log (torch.utils._python_dispatch, a private path) and the library's softmax under a name no rule forbids
(softmin(-x) is softmax(x)). The static check follows the name; with it off the runner's op log is blind, and nothing
more needs to stop it: the answer is right and the window times the library's work like any other, so it earns the
library's speed."""
import torch
import triton
import triton.language as tl


@triton.jit
def prepare_kernel(out_ptr):
    pass


def custom_kernel(x):
    out = torch.empty_like(x)
    prepare_kernel[(1,)](out)
    nn = torch.nn
    dispatch = nn.functional.torch.utils._python_dispatch
    with dispatch._disable_current_modes():
        return nn.functional.softmin(-x, dim=-1)
