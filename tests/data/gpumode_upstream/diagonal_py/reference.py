import torch
from task import input_t, output_t
from utils import make_generator, match_reference


def ref_kernel(data: input_t) -> output_t:
    return data * torch.diagonal(data)[:, None]


def generate_input(size: int, kind: str, seed: int) -> input_t:
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if kind == "diagonal":  # fixed by design: the seed plays no part
        return torch.diag(torch.arange(1, size + 1, device=device, dtype=torch.float32))
    return torch.randn(size, size, device=device, generator=make_generator(seed, device))


def check_implementation(data: input_t, output: output_t):
    return match_reference(data, output, ref_kernel, rtol=1e-5, atol=1e-6)
