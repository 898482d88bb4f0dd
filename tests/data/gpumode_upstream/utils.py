# Shared by every task of this group, one folder above them, as GPU MODE's reference-kernels keeps its utils.py.
import torch


def match_reference(data, output, reference, rtol=1e-5, atol=1e-8):
    """(ok, message): output against reference(data), compared in the reference's dtype."""
    expected = reference(data)
    if output.shape != expected.shape:
        return False, f"shape {tuple(output.shape)}, expected {tuple(expected.shape)}"
    close = torch.isclose(output.to(expected.dtype), expected, rtol=rtol, atol=atol)
    if not bool(close.all()):
        return False, f"mismatch found! {int((~close).sum())} element(s) differ"
    return True, ""


def make_generator(seed: int, device: str) -> torch.Generator:
    gen = torch.Generator(device=device)
    gen.manual_seed(seed)
    return gen
