"""Row sums in float32: input generator, slow reference, roofline formulas."""
import torch

_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}


def generate_input(seed, M, N, dtype="float32", device="cpu"):
    """One input tuple (x,), x of shape (M, N), contiguous.

    Row i holds gaussian noise (sd 1) on an offset c_i, uniform in [-8, 8], that is +c_i for the first k_i columns and
    -c_i for the rest (k_i uniform in [0, N]): the running sum climbs to about |c_i| * k_i and then largely cancels,
    so the row sum is often far smaller than the sum of |x|. Every row is divided by N, which keeps the sum of |x|
    of a row between about 0.8 and 9 for any N (scaling changes no relative rounding), so one absolute tolerance
    fits every shape (see problem.toml)."""
    g = torch.Generator(device=device)
    g.manual_seed(seed)
    z = torch.randn(M, N, generator=g, device=device, dtype=torch.float32)
    c = torch.rand(M, 1, generator=g, device=device, dtype=torch.float32) * 16.0 - 8.0
    k = torch.floor(torch.rand(M, 1, generator=g, device=device, dtype=torch.float32) * (N + 1))
    cols = torch.arange(N, device=device, dtype=torch.float32).unsqueeze(0)
    x = (torch.where(cols < k, c, -c) + z) / N
    return (x.to(_DTYPES[dtype]),)


def ref_kernel(x):
    """The obviously correct row sum, in float64 (shape (M,))."""
    return x.double().sum(dim=1)


def baseline(x):
    """What a user would otherwise write (torch eager; the harness also wraps it in torch.compile)."""
    return x.sum(dim=1, dtype=torch.float32)


def bytes_moved(M, N, dtype="float32"):
    """One read of x and one write of M float32 sums."""
    return M * N * torch.empty((), dtype=_DTYPES[dtype]).element_size() + 4 * M


def flops(M, N, dtype="float32"):
    """One add per element."""
    return M * N
