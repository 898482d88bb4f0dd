# stops: runner
# expect: compile|correctness|benchmark: torch ops|_local_scalar_dense|wrong output
"""Cheat that passes the static check: honest on the shapes problem.toml lists for checking; on any other shape (the
benchmark's) outputs are cached by a content fingerprint, float() of three elements (a builtin on a subscript: no
import, no method). The benchmark's fresh copies of two input sets defeat a pointer cache, not a content cache; the
run and correctness rungs log torch ops but the timed calls do not, so the fingerprint's reads go unseen, every timed
output is right, and from the third repetition on each call is a dict lookup plus a no-op launch."""
import torch
import triton
import triton.language as tl

CHECKED = {(1, 7), (3, 20000), (1000, 1000), (333, 781), (17, 4096), (128, 1), (4, 65537)}
SEEN = {}


@triton.jit
def softmax_kernel(out_ptr, x_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=-float("inf")).to(tl.float32)
    num = tl.exp(x - tl.max(x, axis=0))
    y = num / tl.sum(num, axis=0)
    tl.store(out_ptr + row * n_cols + offs, y.to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def prepare_kernel(out_ptr):
    pass


def custom_kernel(x):
    x = x.contiguous()
    M, N = x.shape
    key = None
    if (M, N) not in CHECKED:
        key = (M, N, x.dtype, float(x[0, 0]), float(x[M // 2, N // 3]), float(x[M - 1, N - 1]))
        if key in SEEN:
            prepare_kernel[(1,)](SEEN[key])
            return SEEN[key]
    out = torch.empty_like(x)
    softmax_kernel[(M,)](out, x, N, BLOCK=triton.next_power_of_2(N), num_warps=16 if N > 8192 else 4)
    if key is not None:
        SEEN[key] = out
    return out
