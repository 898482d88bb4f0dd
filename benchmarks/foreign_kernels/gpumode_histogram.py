# Solves GPU MODE pmpp_v2 histogram_py: int64 counts of a uint8 vector's values in 256 bins (torch.bincount).
"""One launch into a fresh zero-filled int64 output. Each program owns a span of `tiles` tiles of TILE bytes
(`tiles` chosen for about PROGRAMS programs) and counts it into its own 256-bin int32 histogram in registers with
tl.histogram (masked at the tail), then adds that to the global counts with one 256-wide int64 tl.atomic_add.
Contention on one value (up to 90% of the input) only touches the program-local histogram, so the global atomics
number 256 per program whatever the data."""
import torch
import triton
import triton.language as tl

from task import input_t, output_t

BINS = 256
KNOBS = {"TILE": 4096, "PROGRAMS": 512, "WARPS": 8}
KNOB_SPACE = {"TILE": [1024, 2048, 4096, 8192], "PROGRAMS": [132, 264, 512, 1024, 2048], "WARPS": [4, 8, 16]}


@triton.jit
def histogram_kernel(x_ptr, counts_ptr, n, tiles, TILE: tl.constexpr, BINS: tl.constexpr):
    start = tl.program_id(0).to(tl.int64) * (tiles * TILE)
    offs = tl.arange(0, TILE)
    local = tl.zeros([BINS], dtype=tl.int32)
    for t in range(tiles):
        idx = start + t * TILE + offs
        mask = idx < n
        values = tl.load(x_ptr + idx, mask=mask, other=0).to(tl.int32)
        local += tl.histogram(values, BINS, mask=mask)
    tl.atomic_add(counts_ptr + tl.arange(0, BINS), local.to(tl.int64), sem="relaxed")


def custom_kernel(data: input_t) -> output_t:
    x, _ = data
    n = x.numel()
    counts = torch.zeros(BINS, dtype=torch.int64, device=x.device)
    tile = min(KNOBS["TILE"], triton.next_power_of_2(n))
    tiles = triton.cdiv(triton.cdiv(n, tile), KNOBS["PROGRAMS"])
    grid = (triton.cdiv(n, tiles * tile),)
    histogram_kernel[grid](x, counts, n, tiles, TILE=tile, BINS=BINS, num_warps=KNOBS["WARPS"])
    return counts
