"""Softmax over the last dimension: input generator, slow reference, roofline formulas."""
import torch

_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}


def generate_input(seed, M, N, dtype="float32", device="cpu"):
    """One input tuple (x,): gaussian values around a per-row offset in [-120, 120], so max-subtraction matters."""
    g = torch.Generator(device=device)
    g.manual_seed(seed)
    x = torch.randn(M, N, generator=g, device=device, dtype=torch.float32) * 3.0
    x += torch.rand(M, 1, generator=g, device=device, dtype=torch.float32) * 240.0 - 120.0
    return (x.to(_DTYPES[dtype]),)


def ref_kernel(x):
    """The obviously correct softmax, in float64."""
    x = x.double()
    e = torch.exp(x - x.amax(dim=-1, keepdim=True))
    return e / e.sum(dim=-1, keepdim=True)


def baseline(x):
    """The library op evolve compares against (torch eager; the harness also wraps it in torch.compile)."""
    return torch.softmax(x, dim=-1)


def bytes_moved(M, N, dtype="float32"):
    """One read and one write of x."""
    return 2 * M * N * torch.empty((), dtype=_DTYPES[dtype]).element_size()


def flops(M, N, dtype="float32"):
    """max, subtract, exp, sum, divide: about five operations per element."""
    return 5 * M * N
