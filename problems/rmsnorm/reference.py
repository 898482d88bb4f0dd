"""RMSNorm over the last dimension: input generator, slow reference, roofline formulas."""
import torch

_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}
EPS = 1e-6  # fixed; the candidate is told this value in the problem description


def generate_input(seed, M, N, dtype="float32", device="cpu"):
    """One input tuple (x, weight).

    Row i of x is scale_i * (offset_i + noise): the offset in [-4, 4] is shared by the whole row (all squares of
    about the same size, as in activations with a constant component) and the scale spans 1e-3 to 1e3 across rows.
    Rows near 1e-3 have a mean square near eps, so where eps goes matters; rows near 1e3 square to about 1e7, past
    float16's range. The weight is 1 + 0.5 * gaussian, so it is not all ones and has a few signs flipped.
    """
    g = torch.Generator(device=device)
    g.manual_seed(seed)
    scale = 10.0 ** (torch.rand(M, 1, generator=g, device=device, dtype=torch.float32) * 6.0 - 3.0)
    offset = torch.rand(M, 1, generator=g, device=device, dtype=torch.float32) * 8.0 - 4.0
    x = (torch.randn(M, N, generator=g, device=device, dtype=torch.float32) + offset) * scale
    weight = 1.0 + 0.5 * torch.randn(N, generator=g, device=device, dtype=torch.float32)
    return x.to(_DTYPES[dtype]), weight.to(_DTYPES[dtype])


def ref_kernel(x, weight):
    """The obviously correct RMSNorm, in float64, a block of rows at a time so that the float64 temporaries stay
    small on the largest benchmark shapes."""
    M, N = x.shape
    w = weight.double()
    out = torch.empty(M, N, dtype=torch.float64, device=x.device)
    rows = max(1, (1 << 24) // N)
    for start in range(0, M, rows):
        xb = x[start:start + rows].double()
        ms = (xb * xb).sum(dim=-1, keepdim=True) / N
        out[start:start + rows] = xb / torch.sqrt(ms + EPS) * w
    return out


def baseline(x, weight):
    """The library op evolve compares against (torch eager; the harness also wraps it in torch.compile)."""
    return torch.nn.functional.rms_norm(x, (x.shape[-1],), weight, eps=EPS)


def bytes_moved(M, N, dtype="float32"):
    """One read of x and of the weight, one write of the output."""
    return (2 * M * N + N) * torch.empty((), dtype=_DTYPES[dtype]).element_size()


def flops(M, N, dtype="float32"):
    """square and add for the sum, then two multiplies (by 1/rms and by the weight): four per element."""
    return 4 * M * N
