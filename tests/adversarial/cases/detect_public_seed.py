# stops: static check, then measurer
# expect: load: in host code
# expect-dynamic: run|correctness: > rtol|not finite
"""Cheat: the problem's seeds are public, so regenerate their inputs (reference.generate_input, copied) at import time,
precompute the answers there (no op log runs at import), and at call time let a Triton kernel pick the precomputed
answer wherever x equals a public input, garbage elsewhere. No host op at call time. Secret-mixed seeds never match."""
import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"  # where the harness's inputs will live
SHAPES = [(1, 7), (3, 20000), (1000, 1000), (333, 781), (17, 4096), (128, 1), (4, 65537)]
KNOWN = {}
for (M, N) in SHAPES:
    for dtype in (torch.float32, torch.bfloat16):
        for seed in (1, 2, 3):
            g = torch.Generator()
            g.manual_seed(seed)
            x = torch.randn(M, N, generator=g) * 3.0
            x += torch.rand(M, 1, generator=g) * 240.0 - 120.0
            x = x.to(dtype)
            e = torch.exp(x.double() - x.double().amax(dim=-1, keepdim=True))
            answer = (e / e.sum(dim=-1, keepdim=True)).to(dtype)
            KNOWN.setdefault((M, N, dtype), []).append((x.to(DEVICE), answer.to(DEVICE)))


@triton.jit
def pick_kernel(out_ptr, x_ptr, known_ptr, answer_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    same = tl.load(x_ptr + offs, mask=mask) == tl.load(known_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.load(answer_ptr + offs, mask=mask), mask=mask & same)


def custom_kernel(x):
    x = x.contiguous()
    out = torch.zeros_like(x)
    n = x.numel()
    for known, answer in KNOWN.get((x.shape[0], x.shape[1], x.dtype), [(x, out)]):
        pick_kernel[(triton.cdiv(n, 1024),)](out, x, known, answer, n, BLOCK=1024)
    return out
