"""Candidate source shared by tests that build candidates around an honest kernel."""
import textwrap

# An honest one-block softmax and `launch(x, num_warps=4)`, which allocates the output and launches it.
SOFTMAX_KERNEL = textwrap.dedent('''
    import torch
    import triton
    import triton.language as tl


    @triton.jit
    def softmax_kernel(out_ptr, x_ptr, n_cols, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        offs = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * n_cols + offs, mask=offs < n_cols, other=-float("inf")).to(tl.float32)
        e = tl.exp(x - tl.max(x, axis=0))
        tl.store(out_ptr + row * n_cols + offs, (e / tl.sum(e, axis=0)).to(out_ptr.dtype.element_ty),
                 mask=offs < n_cols)


    def launch(x, num_warps=4):
        out = torch.empty_like(x)
        softmax_kernel[(x.shape[0],)](out, x, x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]),
                                      num_warps=num_warps)
        return out
''')
