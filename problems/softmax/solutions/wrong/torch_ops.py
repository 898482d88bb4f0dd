# expect: load: torch.exp
"""Wrong: plain PyTorch softmax on the host, no Triton at all."""
import torch


def custom_kernel(x):
    e = torch.exp(
        x - torch.amax(x, dim=-1, keepdim=True)
    )
    return e / torch.sum(e, dim=-1, keepdim=True)
