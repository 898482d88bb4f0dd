"""Seed: TODO: one line on what this kernel does. An honest, simple kernel: correct on every test shape in every
dtype, not tuned to win (the search does that). It reads the knobs below at every call."""
import torch
import triton
import triton.language as tl

KNOBS = {"BLOCK_SIZE": 1024, "num_warps": 4}


@triton.jit
def op_kernel(out_ptr, x_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    y = x  # TODO: compute the op in float32
    tl.store(out_ptr + offs, y.to(out_ptr.dtype.element_ty), mask=mask)


def custom_kernel(x):
    x = x.contiguous()
    out = torch.empty_like(x)
    n = x.numel()
    op_kernel[(triton.cdiv(n, KNOBS["BLOCK_SIZE"]),)](out, x, n, BLOCK_SIZE=KNOBS["BLOCK_SIZE"],
                                                      num_warps=KNOBS["num_warps"])
    return out
