import torch
import torch.nn as nn


class Model(nn.Module):
    """Softmax over rows of 16,384 columns (the shape of KernelBench's level-1 softmax): every value is near 1e-4,
    so KernelBench's allclose (atol 1e-2) alone passes an all-zero output."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=1)


batch_size = 16
dim = 16384


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
