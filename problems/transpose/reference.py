"""Out-of-place 2-D transpose: input generator, reference, roofline formulas."""
import torch

_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}


def generate_input(seed, M, N, dtype="float32", device="cpu"):
    """One input tuple (x,), x of shape (M, N), contiguous.

    Gaussian values times 2^k with k uniform in [-20, 20], so that nearly every element has a bit pattern of its own
    in either dtype (plain gaussians rounded to bfloat16 repeat often) and a misplaced element shows. All finite."""
    g = torch.Generator(device=device)
    g.manual_seed(seed)
    x = torch.randn(M, N, generator=g, device=device, dtype=torch.float32)
    k = torch.randint(-20, 21, (M, N), generator=g, device=device).to(torch.float32)
    return ((x * torch.exp2(k)).to(_DTYPES[dtype]),)


def ref_kernel(x):
    """The obviously correct transpose: out[j, i] = x[i, j], as a new contiguous tensor (values are copied exactly;
    float64 holds every float32 and bfloat16 value)."""
    return x.double().t().contiguous()


def baseline(x):
    """What a user would otherwise write (torch eager; the harness also wraps it in torch.compile)."""
    return x.t().contiguous()


def bytes_moved(M, N, dtype="float32"):
    """One read of x and one write of the output."""
    return 2 * M * N * torch.empty((), dtype=_DTYPES[dtype]).element_size()


def flops(M, N, dtype="float32"):
    """A copy: no arithmetic."""
    return 0
