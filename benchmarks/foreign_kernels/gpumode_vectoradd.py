# Solves GPU MODE pmpp_v2 vectoradd_py: C = A + B for two (N, N) float16 tensors.
"""One flat launch over the N*N elements: each program adds a contiguous block of BLOCK halves and writes it into
the output tensor the task hands out, which is returned. Loads and stores are unmasked except in the last block."""
import triton
import triton.language as tl

from task import input_t, output_t

KNOBS = {"BLOCK": 4096, "WARPS": 8}
KNOB_SPACE = {"BLOCK": [1024, 2048, 4096, 8192], "WARPS": [4, 8]}


@triton.jit
def add_kernel(a_ptr, b_ptr, c_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask)
    b = tl.load(b_ptr + offs, mask=mask)
    tl.store(c_ptr + offs, a + b, mask=mask)


def custom_kernel(data: input_t) -> output_t:
    a, b, c = data
    n = a.numel()
    block = KNOBS["BLOCK"]
    add_kernel[(triton.cdiv(n, block),)](a, b, c, n, BLOCK=block, num_warps=KNOBS["WARPS"])
    return c
