import torch


def match_reference(reference, rtol=1e-3, atol=1e-3):
    """check_implementation in the GPU MODE style: (ok, message) from comparing with the reference's output."""

    def check(data, output):
        expected = reference(data)
        if output.shape != expected.shape:
            return False, f"shape {tuple(output.shape)}, expected {tuple(expected.shape)}"
        close = torch.isclose(output.float(), expected.float(), rtol=rtol, atol=atol)
        if not bool(close.all()):
            bad = int((~close).sum())
            return False, f"mismatch found! {bad} element(s) differ"
        return True, ""

    return check
