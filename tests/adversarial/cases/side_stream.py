# stops: window
# expect: ok or run|correctness|benchmark: not finite|> rtol|wrong output
# gpu
"""Trick: the kernel runs on a side stream and the call returns without making the default stream wait, so CUDA
events recorded on the default stream around the call time nothing. The measurer's window times the whole GPU from
outside the runner, side streams included, and reads the output back itself: the work is either timed like any other
or not done when the output is read."""
import torch
import triton
import triton.language as tl

SIDE = {}


@triton.jit
def softmax_kernel(out_ptr, x_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=-float("inf")).to(tl.float32)
    num = tl.exp(x - tl.max(x, axis=0))
    y = num / tl.sum(num, axis=0)
    tl.store(out_ptr + row * n_cols + offs, y.to(out_ptr.dtype.element_ty), mask=mask)


def custom_kernel(x):
    x = x.contiguous()
    out = torch.empty_like(x)
    if "s" not in SIDE:
        SIDE["s"] = torch.cuda.Stream()
    side = SIDE["s"]
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        softmax_kernel[(x.shape[0],)](out, x, x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]),
                                      num_warps=16 if x.shape[1] > 8192 else 4)
    return out
