"""What a kernel that holds each row whole in one block can reach, against a plain copy of the same bytes (GPU).

    python benchmarks/row_ceiling.py [--shape fp32:1024x32768 ...] [--warps 8 16 32] [--affine] [--runtime-cols]

Each row is loaded into one program's registers, reduced twice (a mean, then the variance about it: a layer norm's
work, no weights) and written back normalised: the structure of the row-wise seeds and solutions of softmax, rmsnorm
and layernorm (`--affine` adds a layer norm's weight and bias, every row reading them). One table: per shape and
num_warps, the time, the achieved rate (bytes read and written over the time) and its fraction of a device copy's
rate on the same bytes (torch's `copy_`, fresh buffers each call so the L2 cache holds none of them). Where a
problem's kernel of this structure stays well under this figure, what holds it back is in the kernel (its extra
loads, its registers, a row length the compiler does not know: `--runtime-cols`), not in the structure; where this
figure itself is well under 1.0, the structure is what a faster kernel must leave (rows split across blocks, or
overlapped).

On an H100 (2026-12-06, no `--affine`): fp32 1024x32768 0.960-0.965 of a copy at 8, 16 and 32 warps, bf16 1024x32768
0.852 at 8 and 0.94 at 16 and 32, bf16 4096x16384 0.99; bf16 4096x2048 0.78 at best (16 warps). With `--affine
--runtime-cols` (a layer norm as its seed writes it), at 16 and 32 warps: fp32 1024x32768 0.777 and 0.903, bf16
1024x32768 0.851 and 0.880, bf16 4096x16384 0.970 and 0.740 (docs/measuring.md has every variant).
"""
import argparse

import torch
import triton
import triton.language as tl
from search_gain import timed_ms  # the copy ceiling's timing: the same calls, the same events

SPAN = 1 << 30  # bytes the calls rotate through: far beyond any L2 cache
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}
DEFAULT_SHAPES = ["fp32:1024x32768", "bf16:1024x32768", "bf16:4096x16384", "fp32:4096x2048", "bf16:4096x2048"]


@triton.jit
def row_whole_kernel(x_ptr, y_ptr, w_ptr, b_ptr, n_cols, N: tl.constexpr, BLOCK: tl.constexpr,
                     AFFINE: tl.constexpr, RUNTIME_COLS: tl.constexpr):
    cols = n_cols if RUNTIME_COLS else N  # a runtime row length, as the problems' kernels take it, or a constant
    row = tl.program_id(0).to(tl.int64)
    offsets = tl.arange(0, BLOCK)
    mask = offsets < cols
    values = tl.load(x_ptr + row * cols + offsets, mask=mask, other=0.0).to(tl.float32)
    centred = tl.where(mask, values - tl.sum(values, axis=0) / cols, 0.0)
    out = centred * tl.rsqrt(tl.sum(centred * centred, axis=0) / cols + 1e-5)
    if AFFINE:  # a layer norm's weight and bias, read by every row (from L2 after the first)
        out = out * tl.load(w_ptr + offsets, mask=mask, other=0.0).to(tl.float32) \
            + tl.load(b_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + row * cols + offsets, out.to(y_ptr.dtype.element_ty), mask=mask)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shape", action="append", help="DTYPE:ROWSxCOLS, repeatable [default: five of the "
                        "row-wise problems' cases]")
    parser.add_argument("--warps", type=int, nargs="+", default=[8, 16, 32])
    parser.add_argument("--affine", action="store_true", help="also the same with a layer norm's weight and bias")
    parser.add_argument("--runtime-cols", action="store_true", help="also the same with the row length an argument "
                        "(as the problems' kernels take it) instead of a compile-time constant")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("row_ceiling.py measures a GPU: none is visible here")
    print(f"{torch.cuda.get_device_name()}")
    print(f"{'shape':<18} {'warps':>10} {'us':>9} {'TB/s':>6} {'of copy':>8}")
    for spec in args.shape or DEFAULT_SHAPES:
        name, dims = spec.split(":")
        rows, cols = (int(n) for n in dims.split("x"))
        one = rows * cols * DTYPES[name].itemsize
        buffers = [(torch.randn(rows, cols, device="cuda").to(DTYPES[name]),
                    torch.empty(rows, cols, device="cuda", dtype=DTYPES[name]))
                   for _ in range(max(2, SPAN // (2 * one)))]
        copy = timed_ms(buffers, lambda x, y: y.copy_(x))
        print(f"{spec:<18} {'copy':>10} {copy * 1e3:9.1f} {2 * one / copy * 1e-9:6.2f} {1.0:8.3f}")
        block = triton.next_power_of_2(cols)
        weight, bias = (torch.randn(cols, device="cuda").to(DTYPES[name]) for _ in range(2))
        variants = [(a, r) for a in (False, True)[:1 + args.affine] for r in (False, True)[:1 + args.runtime_cols]]
        for affine, runtime in variants:
            for warps in args.warps:
                ms = timed_ms(buffers, lambda x, y, w=warps, a=affine, r=runtime: row_whole_kernel[(rows,)](
                    x, y, weight, bias, cols, cols, block, a, r, num_warps=w))
                label = f"{warps}{' +wb' if affine else ''}{' rt' if runtime else ''}"
                print(f"{spec:<18} {label:>10} {ms * 1e3:9.1f} {2 * one / ms * 1e-9:6.2f} {copy / ms:8.3f}", flush=True)
        del buffers


if __name__ == "__main__":
    main()
