# stops: static check, then runner
# expect: load: .numpy inside a @triton.jit
# expect-dynamic: run|correctness: not finite|> rtol|called directly
"""Trick: call a @triton.jit function directly from host code. Under the CPU interpreter its body would run as plain
Python on the real tensors, where .numpy() hands the data to numpy (no torch op, so nothing for the op log); a no-op
launch satisfies the launch count. The interpreter child refuses a direct call outside a launch, as a GPU build does."""
import math
import torch
import triton
import triton.language as tl


@triton.jit
def host_side(x, out, bits):
    # Called directly from host code: under TRITON_INTERPRET the body is plain Python on real torch tensors,
    # and the static checker skips Tensor-method rules inside @triton.jit bodies.
    if x.dtype == out.dtype and x.element_size() == 4:
        a = x.numpy().astype("float64")
        o = out.numpy()
    else:
        a = (x.view(bits).numpy().astype("int32") << 16).view("float32").astype("float64")
        o = None
    m = a.max(axis=-1, keepdims=True)
    e = math.e ** (a - m)
    r = (e / e.sum(axis=-1, keepdims=True)).astype("float32")
    if o is not None:
        o[...] = r
    else:
        u = r.view("uint32").astype("int64")
        u = (u + 32767 + ((u >> 16) & 1)) >> 16
        out.view(bits).numpy()[...] = u.astype("int16")
    return 0


@triton.jit
def noop(p, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    v = tl.load(p + offs, mask=offs < 1)


def custom_kernel(x):
    out = torch.empty_like(x)
    try:
        host_side(x, out, torch.int16)
    except RuntimeError:
        pass  # compile-only child (no interpreter): nothing is checked there
    noop[(1,)](out, BLOCK=16)
    return out
