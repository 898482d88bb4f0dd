"""Mean cross-entropy over rows of logits with an ignore index: input generator, slow reference, roofline formulas."""
import torch

_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}
IGNORE_INDEX = -100


def n_ignored(M):
    """How many targets generate_input sets to IGNORE_INDEX: 15% of the rows, at least one when M >= 2, never all.
    A fixed count (the rows are chosen at random) lets bytes_moved state the exact minimum traffic."""
    if M < 2:
        return 0
    return min(max(round(0.15 * M), 1), M - 1)


def generate_input(seed, M, V, dtype="float32", device="cpu"):
    """One input tuple (logits, targets): logits (M, V) in dtype, targets (M,) int64 in [0, V) or IGNORE_INDEX.

    Logits are gaussian (sd 2) around a per-row offset in [-50, 50]; about a quarter of the rows have one dominant
    logit 20 to 45 above their offset, and in half of those the target is that logit (a confident, right prediction:
    a loss near 0, computed as the difference of two numbers near the offset). n_ignored(M) targets, at random rows,
    are IGNORE_INDEX. One further row, chosen at random, is always kept (its target is never ignored, so the mean is
    never 0/0 = NaN) and always sits at offset 48 to 50 with a dominant logit 42 to 45 above that (90 to 95 in all):
    exp overflows float32 above 88.7, so a kernel without max subtraction returns inf on every input.
    """
    g = torch.Generator(device=device)
    g.manual_seed(seed)
    f32 = torch.float32
    rows = torch.arange(M, device=device)
    logits = torch.randn(M, V, generator=g, device=device, dtype=f32) * 2.0
    offset = torch.rand(M, generator=g, device=device, dtype=f32) * 100.0 - 50.0
    lift = torch.rand(M, generator=g, device=device, dtype=f32) * 25.0 + 20.0
    dominant = torch.rand(M, generator=g, device=device, dtype=f32) < 0.25
    dominant_col = torch.randint(0, V, (M,), generator=g, device=device)
    targets = torch.randint(0, V, (M,), generator=g, device=device, dtype=torch.int64)
    confident = dominant & (torch.rand(M, generator=g, device=device, dtype=f32) < 0.5)
    targets = torch.where(confident, dominant_col, targets)

    perm = torch.randperm(M, generator=g, device=device)
    ignored = n_ignored(M)
    targets[perm[:ignored]] = IGNORE_INDEX
    keep = perm[ignored:ignored + 1]  # a one-element index tensor: the row that is always kept
    offset[keep] = 48.0 + 2.0 * torch.rand(1, generator=g, device=device, dtype=f32)
    lift[keep] = 42.0 + 3.0 * torch.rand(1, generator=g, device=device, dtype=f32)
    dominant[keep] = True
    # The kept row's target is never its dominant logit, so its loss is about 40 nats and the mean stays well away
    # from 0 even for M = 1.
    if V > 1:
        step = torch.randint(1, V, (1,), generator=g, device=device)
        targets[keep] = (dominant_col[keep] + step) % V
    else:
        targets[keep] = 0

    logits += offset[:, None]
    peak = torch.where(dominant, offset + lift, logits[rows, dominant_col])
    logits[rows, dominant_col] = peak
    return logits.to(_DTYPES[dtype]), targets


def ref_kernel(logits, targets):
    """The obviously correct mean cross-entropy, in float64, over blocks of rows so that memory stays bounded."""
    M, V = logits.shape
    valid = targets != IGNORE_INDEX
    total = torch.zeros((), dtype=torch.float64, device=logits.device)
    rows_per_block = max(1, (1 << 24) // V)  # at most 128 MiB of float64 at a time
    for start in range(0, M, rows_per_block):
        x = logits[start:start + rows_per_block].double()
        t = targets[start:start + rows_per_block]
        v = valid[start:start + rows_per_block]
        m = x.amax(dim=1, keepdim=True)
        lse = m[:, 0] + torch.log(torch.exp(x - m).sum(dim=1))
        picked = x.gather(1, torch.where(v, t, 0)[:, None])[:, 0]
        total += torch.where(v, lse - picked, 0.0).sum()
    return total / valid.sum()


def baseline(logits, targets):
    """The library op evolve compares against (torch eager; the harness also wraps it in torch.compile). Upcast
    first, as Hugging Face's causal-LM loss does: torch's bfloat16 path returns a bfloat16 loss."""
    return torch.nn.functional.cross_entropy(logits.float(), targets, ignore_index=IGNORE_INDEX)


def bytes_moved(M, V, dtype="float32"):
    """The minimum DRAM traffic: one read of every row whose target is kept (an ignored row's logits need not be read
    at all), one read of the int64 targets, one 4-byte write of the result."""
    element = torch.empty((), dtype=_DTYPES[dtype]).element_size()
    return (M - n_ignored(M)) * V * element + 8 * M + 4


def flops(M, V, dtype="float32"):
    """max, subtract, exp, add: about four operations per logit (exp counted as one)."""
    return 4 * M * V
