"""SwiGLU on a fused gate/up projection: input generator, slow reference, roofline formulas."""
import torch

_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}


def generate_input(seed, M, N, dtype="float32", device="cpu"):
    """One input tuple (x,), x of shape (M, 2 * N): gate = x[:, :N], up = x[:, N:].

    Most gate values are gaussian with sd 4 (where silu bends); one in eight is uniform in [-100, 100], past the
    float32 range of exp (88.7): 1 / (1 + exp(-g)) overflows harmlessly to 0 there, but exp(g) / (1 + exp(g)) gives
    inf / inf = NaN above 88.7, and float16 arithmetic overflows exp(-g) already below g = -11.1. up is gaussian with
    sd 2 around 0.5, so it differs from gate in distribution and a kernel that swaps the halves is wrong everywhere.
    """
    g = torch.Generator(device=device)
    g.manual_seed(seed)
    gate = torch.randn(M, N, generator=g, device=device, dtype=torch.float32) * 4.0
    wide = torch.rand(M, N, generator=g, device=device, dtype=torch.float32) < 0.125
    far = torch.rand(M, N, generator=g, device=device, dtype=torch.float32) * 200.0 - 100.0
    gate = torch.where(wide, far, gate)
    up = torch.randn(M, N, generator=g, device=device, dtype=torch.float32) * 2.0 + 0.5
    return (torch.cat([gate, up], dim=1).to(_DTYPES[dtype]),)


def ref_kernel(x):
    """The obviously correct SwiGLU, in float64: silu(gate) * up = gate * sigmoid(gate) * up."""
    x = x.double()
    n = x.shape[1] // 2
    gate, up = x[:, :n], x[:, n:]
    return gate * torch.sigmoid(gate) * up


def baseline(x):
    """What a user would otherwise write (torch eager; the harness also wraps it in torch.compile)."""
    n = x.shape[1] // 2
    return torch.nn.functional.silu(x[:, :n]) * x[:, n:]


def bytes_moved(M, N, dtype="float32"):
    """One read of x (M x 2N) and one write of the output (M x N)."""
    return 3 * M * N * torch.empty((), dtype=_DTYPES[dtype]).element_size()


def flops(M, N, dtype="float32"):
    """exp, add, divide and two multiplies: about five operations per output element."""
    return 5 * M * N
