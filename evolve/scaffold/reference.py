"""{{name}}: input generator, slow reference and roofline formulas (docs/problems.md).

The harness calls these in a process that never imports candidate code: generate_input and ref_kernel for every
check, bytes_moved and flops for the roofline, baseline (optional) for the library timings.
"""
import torch

_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def generate_input(seed, M, N, dtype="float32", device="cpu"):
    """The tuple custom_kernel(*inputs) receives, built from `seed` alone (two seeds must give different inputs).
    Draw values that exercise the op's pitfalls: large offsets, extreme values, whatever a naive kernel gets wrong."""
    g = torch.Generator(device=device)
    g.manual_seed(seed)
    x = torch.randn(M, N, generator=g, device=device, dtype=torch.float32)  # TODO: inputs that find the op's pitfalls
    return (x.to(_DTYPES[dtype]),)


def ref_kernel(x):
    """The obviously correct op, computed in float64."""
    x = x.double()
    raise NotImplementedError("TODO: compute the op in float64 and return the output(s)")


# Optional: the library op a user would otherwise call, timed as torch eager and under torch.compile.
# def baseline(x):
#     return torch.nn.functional.gelu(x)


def bytes_moved(M, N, dtype="float32"):
    """The least DRAM traffic any kernel needs: here one read of x and one write of the output."""
    size = torch.empty((), dtype=_DTYPES[dtype]).element_size()
    return 2 * M * N * size  # TODO: check against the op's inputs and outputs


def flops(M, N, dtype="float32"):
    """Arithmetic per call; the roofline takes whichever of bytes and flops bounds the case."""
    return M * N  # TODO: count the op's operations per element
