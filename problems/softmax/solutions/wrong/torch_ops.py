# expect: load: torch.exp
"""Wrong: plain PyTorch softmax on the host, no Triton at all."""
import torch


def custom_kernel(x):
    e = torch.exp(x.float() - torch.amax(x.float(), dim=-1, keepdim=True))
    return (e / e.sum(dim=-1, keepdim=True)).to(x.dtype)
