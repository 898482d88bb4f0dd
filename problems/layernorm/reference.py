"""LayerNorm over the last dimension: input generator, slow reference, roofline formulas."""
import torch

_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}
EPS = 1e-5  # fixed; the candidate is told this value in the problem description


def generate_input(seed, M, N, dtype="float32", device="cpu"):
    """One input tuple (x, weight, bias).

    Row i of x is offset_i + spread_i * noise, with |offset_i| between 50 and 100 (either sign) and spread_i between
    0.25 and 1: a large mean and a small variance, the case where the one-pass variance E[x^2] - E[x]^2 cancels
    in float32 (E[x^2] is up to 1e4 and rounds with an error near 1e-3, the variance is 0.06 to 1).
    Each row's noise is standardised (mean 0, spread 1 over the row), so a short row's variance is spread_i^2 too:
    two draws can lie arbitrarily close, and a row whose variance is far below eps leaves no float32 kernel within
    the tolerance (the rounding of its mean, near 4e-6 at 100, is then most of the row's deviation).
    The weight is 1 + 0.5 * gaussian and the bias 0.5 * gaussian, so neither is the identity.
    """
    g = torch.Generator(device=device)
    g.manual_seed(seed)
    sign = torch.where(torch.rand(M, 1, generator=g, device=device) < 0.5, -1.0, 1.0)
    offset = sign * (50.0 + 50.0 * torch.rand(M, 1, generator=g, device=device, dtype=torch.float32))
    spread = 0.25 + 0.75 * torch.rand(M, 1, generator=g, device=device, dtype=torch.float32)
    noise = torch.randn(M, N, generator=g, device=device, dtype=torch.float32)
    if N > 1:
        centred = noise - noise.mean(dim=1, keepdim=True)
        noise = centred / centred.std(dim=1, keepdim=True, unbiased=False).clamp_min(1e-6)
    x = offset + spread * noise
    weight = 1.0 + 0.5 * torch.randn(N, generator=g, device=device, dtype=torch.float32)
    bias = 0.5 * torch.randn(N, generator=g, device=device, dtype=torch.float32)
    return x.to(_DTYPES[dtype]), weight.to(_DTYPES[dtype]), bias.to(_DTYPES[dtype])


def ref_kernel(x, weight, bias):
    """The obviously correct LayerNorm (two passes: mean, then the mean of squared deviations, biased), in float64,
    a block of rows at a time so that the float64 temporaries stay small on the largest benchmark shapes."""
    M, N = x.shape
    w, b = weight.double(), bias.double()
    out = torch.empty(M, N, dtype=torch.float64, device=x.device)
    rows = max(1, (1 << 24) // N)
    for start in range(0, M, rows):
        xb = x[start:start + rows].double()
        d = xb - xb.sum(dim=-1, keepdim=True) / N
        var = (d * d).sum(dim=-1, keepdim=True) / N
        out[start:start + rows] = d / torch.sqrt(var + EPS) * w + b
    return out


def baseline(x, weight, bias):
    """The library op evolve compares against (torch eager; the harness also wraps it in torch.compile)."""
    return torch.nn.functional.layer_norm(x, (x.shape[-1],), weight, bias, eps=EPS)


def bytes_moved(M, N, dtype="float32"):
    """One read of x, the weight and the bias, one write of the output."""
    return (2 * M * N + 2 * N) * torch.empty((), dtype=_DTYPES[dtype]).element_size()


def flops(M, N, dtype="float32"):
    """add for the mean; subtract, square and add for the variance; subtract, multiply by 1/std, multiply by the
    weight and add the bias: eight per element."""
    return 8 * M * N
