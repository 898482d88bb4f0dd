# Solves GPU MODE pmpp_v2 conv2d_py: float32 NCHW convolution, weight (C, C, k, k), stride 1, no padding.
"""Implicit GEMM with tl.dot. Output pixels (b, oh, ow) are the GEMM's rows, output channels its columns, and
(input channel, kh, kw) its reduction, in the weight's own memory order, so a column of the weight matrix is
contiguous. With no padding every tap is in bounds, and an input address splits into a row part
(b*C*H*W + oh*W + ow) plus a reduction part (c*H*W + kh*W + kw): the A tile is gathered with one broadcast add and
masked only at the ends. The output channels are written to (b, n, oh, ow) of the output the task hands out.
Precision: operands go through tl.dot as "tf32x3" (three TF32 products, about float32's accuracy); the reduction
(up to C*k*k = 131072 terms) is summed in float32 in two levels, GROUP steps into a partial that is then added to
the tile's total: by estimate about 1e-4 of rounding error at that length, where one running sum would come near the
task's absolute tolerance of 1e-3. Measured on an H100 (benchmarks/foreign.py, 2026-12-05) at size=256 kernelsize=16
channels=128 (32,768 terms): 3.9e-4 from ref_kernel run in float64, while the task's own reference (cuDNN, float32)
was 8.7e-3 from it, so the task's check, which compares against that reference at 1e-3, refuses this output."""
import triton
import triton.language as tl

from task import input_t, output_t

KNOBS = {"BLOCK_M": 128, "BLOCK_K": 32, "GROUP": 32, "WARPS": 8, "STAGES": 3, "PRECISION": "tf32x3"}
KNOB_SPACE = {"BLOCK_M": [64, 128, 256], "BLOCK_K": [16, 32, 64], "GROUP": [8, 32, 128], "WARPS": [4, 8],
              "STAGES": [2, 3, 4], "PRECISION": ["tf32x3", "ieee"]}


@triton.jit
def conv_kernel(x_ptr, w_ptr, out_ptr, M, N, K, C, H, W, OH, OW,
                KSIZE: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                GROUP: tl.constexpr, PRECISION: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    m_ok = rm < M
    n_ok = rn < N
    # Row part of the input address: pixel (b, oh, ow) at b*C*H*W + oh*W + ow.
    b = rm // (OH * OW)
    pix = rm % (OH * OW)
    oh = pix // OW
    ow = pix % OW
    row_off = b.to(tl.int64) * C * H * W + oh * W + ow
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for g0 in range(0, K, BLOCK_K * GROUP):
        part = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k0 in range(g0, tl.minimum(g0 + BLOCK_K * GROUP, K), BLOCK_K):
            kk = k0 + rk
            k_ok = kk < K
            c = kk // (KSIZE * KSIZE)
            tap = kk % (KSIZE * KSIZE)
            col_off = c * (H * W) + (tap // KSIZE) * W + tap % KSIZE
            a = tl.load(x_ptr + row_off[:, None] + col_off[None, :], mask=m_ok[:, None] & k_ok[None, :], other=0.0)
            w = tl.load(w_ptr + rn[None, :] * K + kk[:, None], mask=k_ok[:, None] & n_ok[None, :], other=0.0)
            part = tl.dot(a, w, part, input_precision=PRECISION)
        acc += part
    out_off = b.to(tl.int64) * N * OH * OW + pix
    tl.store(out_ptr + out_off[:, None] + rn[None, :] * (OH * OW), acc, mask=m_ok[:, None] & n_ok[None, :])


def custom_kernel(data: input_t) -> output_t:
    x, w, out = data
    batch, c, h, width = x.shape
    n, _, ksize, _ = w.shape
    oh, ow = h - ksize + 1, width - ksize + 1
    m = batch * oh * ow
    k = c * ksize * ksize
    bm = KNOBS["BLOCK_M"]
    bn = min(128, max(16, triton.next_power_of_2(n)))
    grid = (triton.cdiv(m, bm), triton.cdiv(n, bn))
    conv_kernel[grid](x, w, out, m, n, k, c, h, width, oh, ow, KSIZE=ksize, BLOCK_M=bm, BLOCK_N=bn,
                      BLOCK_K=KNOBS["BLOCK_K"], GROUP=KNOBS["GROUP"], PRECISION=KNOBS["PRECISION"],
                      num_warps=KNOBS["WARPS"], num_stages=KNOBS["STAGES"])
    return out
