"""Matrix multiply c = a @ b in bfloat16: input generator, float64 reference, roofline formulas."""
import math

import torch

_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def generate_input(seed, M, K, N, dtype="bfloat16", device="cpu"):
    """One input tuple (a, b): a of shape (M, K), b of shape (K, N), both contiguous.

    a = randn / sqrt(K) and b = randn, so c = a @ b is about N(0, 1) whatever K is. About one row of a in eight is
    8x larger and one column of b in eight 4x larger, so c spans magnitudes up to 32x the typical one, and an operand
    read transposed or a wrong row/column index shows as a wrong scale, not only as noise.
    """
    g = torch.Generator(device=device)
    g.manual_seed(seed)
    a = torch.randn(M, K, generator=g, device=device, dtype=torch.float32) / math.sqrt(K)
    b = torch.randn(K, N, generator=g, device=device, dtype=torch.float32)
    big_rows = torch.rand(M, 1, generator=g, device=device) < 0.125
    big_cols = torch.rand(1, N, generator=g, device=device) < 0.125
    a = torch.where(big_rows, a * 8.0, a)
    b = torch.where(big_cols, b * 4.0, b)
    return a.to(_DTYPES[dtype]), b.to(_DTYPES[dtype])


def ref_kernel(a, b):
    """The obviously correct product, in float64 (exact products of bf16 values, float64 sums)."""
    return a.double() @ b.double()


def baseline(a, b):
    """The library op evolve compares against (torch eager, i.e. cuBLAS; the harness also wraps it in torch.compile)."""
    return torch.matmul(a, b)


def bytes_moved(M, K, N, dtype="bfloat16"):
    """One read of a and b and one write of c: the floor for any kernel, reached only when tiles are reused from
    on-chip memory (a naive kernel re-reads a and b once per output tile)."""
    return (M * K + K * N + M * N) * torch.empty((), dtype=_DTYPES[dtype]).element_size()


def flops(M, K, N, dtype="bfloat16"):
    """One multiply and one add per (i, j, k)."""
    return 2 * M * N * K
