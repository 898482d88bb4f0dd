import torch
from task import input_t, output_t
from utils import make_generator


def ref_kernel(data: input_t) -> output_t:
    values, output = data
    output[...] = torch.bincount(values.to(torch.int64), minlength=256)
    return output


def generate_input(size: int, contention: float, seed: int) -> input_t:
    device = "cuda" if torch.cuda.is_available() else "cpu"
    gen = make_generator(seed, device)
    values = torch.randint(0, 256, (size,), device=device, dtype=torch.uint8, generator=gen)
    crowded = torch.rand(size, device=device, generator=gen) < contention / 100  # one value takes this share
    values[crowded] = 7
    return values, torch.empty(256, device=device, dtype=torch.int64)


def check_implementation(data: input_t, output: output_t):
    expected = ref_kernel((data[0], torch.empty_like(data[1])))
    if not torch.equal(output, expected):
        return False, f"mismatch found! {int((output != expected).sum())} bin(s) differ"
    return True, ""
