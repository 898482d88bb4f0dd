import torch
from task import input_t, output_t
from utils import match_reference


def ref_kernel(data: input_t) -> output_t:
    a, b = data
    return a + b


def generate_input(size: int, seed: int) -> input_t:
    device = "cuda" if torch.cuda.is_available() else "cpu"
    gen = torch.Generator(device=device)
    gen.manual_seed(seed)
    a = torch.randn(size, size, device=device, dtype=torch.float16, generator=gen)
    b = torch.randn(size, size, device=device, dtype=torch.float16, generator=gen)
    return a, b


check_implementation = match_reference(ref_kernel)
