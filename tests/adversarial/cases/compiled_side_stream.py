# stops: window
# expect: ok or run|correctness|benchmark: not finite|> rtol|wrong output
# gpu
"""Trick: hide part of the work on a side stream without `with torch.cuda.stream(...)`: make the stream in a function
annotation (host code that runs at import), get the compiled kernel from `warmup` (no launch), and launch it with a
`stream=` argument of its own, which bypasses JITFunction.run. A quarter of the rows then run where events on the
current stream do not look. The measurer's window times the whole GPU from outside the runner, side streams included,
and reads the rows back itself: the trick is either timed like any work or its rows are not there yet."""
import torch
import triton
import triton.language as tl

SIDE = {}


def _setup(a: SIDE.update(s=torch.cuda.Stream(), wait=lambda: SIDE["s"].wait_stream(torch.cuda.current_stream()))):
    return a


@triton.jit
def softmax_kernel(out_ptr, x_ptr, n_cols, row_start, BLOCK: tl.constexpr):
    row = row_start + tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=-float("inf")).to(tl.float32)
    num = tl.exp(x - tl.max(x, axis=0))
    y = num / tl.sum(num, axis=0)
    tl.store(out_ptr + row * n_cols + offs, y.to(out_ptr.dtype.element_ty), mask=mask)


def custom_kernel(x):
    x = x.contiguous()
    out = torch.empty_like(x)
    m, n = x.shape
    block = triton.next_power_of_2(n)
    warps = 16 if block > 8192 else (8 if block > 2048 else 4)
    k = (m * 3) // 4
    compiled = softmax_kernel.warmup(out, x, n, 0, BLOCK=block, num_warps=warps, grid=(1,))
    if k:
        softmax_kernel[(k,)](out, x, n, 0, BLOCK=block, num_warps=warps)
    SIDE["wait"]()
    compiled[(m - k, 1, 1)](out, x, n, k, block, stream=SIDE["s"].cuda_stream)
    return out
