# Solves KernelBench level1/36_RMSNorm_.py: x / sqrt(mean(x**2 over dim 1) + 1e-5) for x of shape (B, F, *rest).
"""The features are dim 1 of a (B, F, S) view (S the product of the trailing dims), F*S apart from one another's
neighbours along S. One program normalises BLOCK_S consecutive positions of one batch entry: it loads the
(F, BLOCK_S) tile, each row contiguous so the loads coalesce, sums squares over F in float32, and writes the tile
times 1/sqrt(mean + eps). When F (padded to a power of two) fits in registers the tile is read once; otherwise the
features are walked in chunks twice, once for the sum and once to write."""
import torch
import triton
import triton.language as tl

EPS = 1e-5  # the Model's default eps; get_init_inputs() passes only num_features
KNOBS = {"BLOCK_S": 128, "WARPS": 8, "MAX_RESIDENT_F": 256, "F_CHUNK": 32}
KNOB_SPACE = {"BLOCK_S": [32, 64, 128, 256], "WARPS": [4, 8, 16], "MAX_RESIDENT_F": [64, 128, 256],
              "F_CHUNK": [8, 16, 32, 64]}


@triton.jit
def rmsnorm_kernel(x_ptr, y_ptr, F, S, eps, F_BLOCK: tl.constexpr, BLOCK_S: tl.constexpr, RESIDENT: tl.constexpr):
    s_offs = tl.program_id(0) * BLOCK_S + tl.arange(0, BLOCK_S)
    base = tl.program_id(1).to(tl.int64) * F * S
    s_ok = s_offs < S
    f_offs = tl.arange(0, F_BLOCK)
    if RESIDENT:
        offs = base + f_offs[:, None].to(tl.int64) * S + s_offs[None, :]
        mask = (f_offs[:, None] < F) & s_ok[None, :]
        x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        inv = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / F + eps)
        tl.store(y_ptr + offs, (x * inv[None, :]).to(y_ptr.dtype.element_ty), mask=mask)
    else:
        acc = tl.zeros([F_BLOCK, BLOCK_S], dtype=tl.float32)
        for f0 in range(0, F, F_BLOCK):
            f = f0 + f_offs
            offs = base + f[:, None].to(tl.int64) * S + s_offs[None, :]
            x = tl.load(x_ptr + offs, mask=(f[:, None] < F) & s_ok[None, :], other=0.0).to(tl.float32)
            acc += x * x
        inv = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / F + eps)
        for f0 in range(0, F, F_BLOCK):
            f = f0 + f_offs
            offs = base + f[:, None].to(tl.int64) * S + s_offs[None, :]
            mask = (f[:, None] < F) & s_ok[None, :]
            x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
            tl.store(y_ptr + offs, (x * inv[None, :]).to(y_ptr.dtype.element_ty), mask=mask)


def custom_kernel(x):
    batch, features = x.shape[0], x.shape[1]
    spatial = x.numel() // max(1, batch * features)
    y = torch.empty_like(x)
    f_pad = triton.next_power_of_2(features)
    resident = f_pad <= KNOBS["MAX_RESIDENT_F"]
    f_block = f_pad if resident else KNOBS["F_CHUNK"]
    block_s = min(KNOBS["BLOCK_S"], triton.next_power_of_2(spatial))
    grid = (triton.cdiv(spatial, block_s), batch)
    rmsnorm_kernel[grid](x, y, features, spatial, EPS, F_BLOCK=f_block, BLOCK_S=block_s, RESIDENT=resident,
                         num_warps=KNOBS["WARPS"])
    return y
