"""Forward attention: input generator, float64 reference, roofline formulas."""
import torch

_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}

# Rows of float64 scores the reference holds at once, across all (batch, head) pairs: 2**25 values = 256 MB.
# At S = 8192 with B*H = 32 that is 128 query rows per step (64 at S = 16384), so no (B, H, S, S) tensor is ever
# built.
_SCORE_BUDGET = 1 << 25


def generate_input(seed, B, H, S, D, causal, dtype="bfloat16", device="cpu"):
    """One input tuple (q, k, v, causal): q, k, v of shape (B, H, S, D) in `dtype`, causal a plain bool.

    Each (batch, head) gets a sharpness t in [1, 3]: the scores of a row spread with standard deviation about t
    (after the D**-0.5 scale), from rows that average hundreds of keys to rows dominated by a few. Keys share a
    per-head mean vector mu, as real keys do; q_i . mu adds the same constant to every score of row i, which softmax
    ignores but which has a per-head standard deviation of 50 to 100 (rows reach +-400). A kernel that exponentiates
    scores without subtracting the running row maximum overflows (exp(x) = inf in float32 above 88.7) or
    underflows to 0/0 on many rows; a kernel that rounds scores to 16 bits before the softmax loses their small
    differences (one bfloat16 ulp at 256 is 2.0).
    """
    g = torch.Generator(device=device)
    g.manual_seed(seed)
    f32 = torch.float32
    t = 1.0 + 2.0 * torch.rand(B, H, 1, 1, generator=g, device=device, dtype=f32)
    sigma = 50.0 + 50.0 * torch.rand(B, H, 1, 1, generator=g, device=device, dtype=f32)
    q = torch.randn(B, H, S, D, generator=g, device=device, dtype=f32) * t
    # scale * (q_i . mu) has standard deviation t * |mu| / sqrt(D) = sigma when mu's entries have sd sigma / t.
    mu = torch.randn(B, H, 1, D, generator=g, device=device, dtype=f32) * (sigma / t)
    k = torch.randn(B, H, S, D, generator=g, device=device, dtype=f32) + mu
    v = torch.randn(B, H, S, D, generator=g, device=device, dtype=f32)
    dt = _DTYPES[dtype]
    return q.to(dt), k.to(dt), v.to(dt), bool(causal)


def ref_kernel(q, k, v, causal):
    """softmax(q k^T * D**-0.5, masked to keys j <= i when causal) v, in float64, a block of query rows at a time."""
    B, H, S, D = q.shape
    scale = D ** -0.5
    kd = k.double()
    vd = v.double()
    out = torch.empty(B, H, S, D, dtype=torch.float64, device=q.device)
    rows = max(1, _SCORE_BUDGET // (B * H * S))
    for start in range(0, S, rows):
        stop = min(S, start + rows)
        keys = stop if causal else S  # rows start..stop-1 see no key past stop-1 when causal
        s = torch.matmul(q[:, :, start:stop].double(), kd[:, :, :keys].transpose(-1, -2)) * scale
        if causal:
            i = torch.arange(start, stop, device=q.device).unsqueeze(1)
            j = torch.arange(keys, device=q.device).unsqueeze(0)
            s.masked_fill_(j > i, float("-inf"))
        s -= s.amax(dim=-1, keepdim=True)
        p = s.exp_()
        p /= p.sum(dim=-1, keepdim=True)
        out[:, :, start:stop] = torch.matmul(p, vd[:, :, :keys])
        del s, p
    return out


def baseline(q, k, v, causal):
    """The library op evolve compares against (torch eager; the harness also wraps it in torch.compile)."""
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)


def bytes_moved(B, H, S, D, causal, dtype="bfloat16"):
    """Read q, k and v once and write o once: four (B, H, S, D) tensors."""
    return 4 * B * H * S * D * torch.empty((), dtype=_DTYPES[dtype]).element_size()


def flops(B, H, S, D, causal, dtype="bfloat16"):
    """Two matmuls (q k^T and p v) of 2 * S * S * D flops each per (batch, head); causal does half of them."""
    total = 4 * B * H * S * S * D
    return total // 2 if causal else total
