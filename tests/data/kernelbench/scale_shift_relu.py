import torch
import torch.nn as nn


class Model(nn.Module):
    """relu(x * weight + shift): a learned per-feature scale (a parameter) and a fixed shift (a buffer)."""

    def __init__(self, features):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(features))
        self.register_buffer("shift", torch.randn(features))

    def forward(self, x):
        return torch.relu(x * self.weight + self.shift)


batch_size = 8
features = 300


def get_inputs():
    return [torch.randn(batch_size, features)]


def get_init_inputs():
    return [features]
