import torch
from task import input_t, output_t
from utils import make_generator, match_reference


def ref_kernel(data: input_t) -> output_t:
    x, output = data
    return torch.cumsum(x.to(torch.float64), dim=0)


def generate_input(size: int, seed: int) -> input_t:
    # TODO: draw from a wider distribution once the benchmarks settle (upstream leaves notes like this one)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    x = torch.randn(size, device=device, dtype=torch.float32, generator=make_generator(seed, device))
    return x, torch.empty(size, device=device, dtype=torch.float32)


def check_implementation(data: input_t, output: output_t):
    tolerance = 1e-5 * data[0].numel() ** 0.5
    return match_reference(data, output, ref_kernel, rtol=tolerance, atol=tolerance)
