# expect: run: not contiguous
"""Wrong: returns a transposed view instead of a transposed copy. The kernel copies x as it is into a buffer
allocated with strides (1, M), which read as an (N, M) tensor holds the right values, but in column-major order:
out.stride() is (1, M), not (M, 1). The contract asks for a contiguous output, and the run rung checks strides
(a 1 x N or N x 1 input passes, since size-1 dimensions have no stride to get wrong; 33 x 65 does not)."""
import torch
import triton
import triton.language as tl


@triton.jit
def copy_kernel(out_ptr, x_ptr, n_elements, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


def custom_kernel(x):
    x = x.contiguous()
    n_rows, n_cols = x.shape
    out = torch.empty_strided((n_cols, n_rows), (1, n_cols), dtype=x.dtype, device=x.device)
    copy_kernel[(triton.cdiv(x.numel(), 1024),)](out, x, x.numel(), BLOCK=1024)
    return out
