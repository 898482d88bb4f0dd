"""Seed: persistent matrix multiply in Triton, loading tiles through TMA tensor descriptors, with split-K for small M.

c is cut into BLOCK_M x BLOCK_N tiles numbered in grouped order (GROUP_M tile rows are walked down one tile column
before moving right, so tiles computed at the same time share rows of a and columns of b in L2). One program per SM,
or fewer when there are fewer tiles, loops over the tiles with a stride of the grid size. For each tile it walks K in
steps of BLOCK_K, multiplies a BLOCK_M x BLOCK_K tile of a by a BLOCK_K x BLOCK_N tile of b with tl.dot into a float32
accumulator, rounds the accumulator to bfloat16 once and stores the tile.

Tiles are loaded through tensor descriptors (tl.make_tensor_descriptor; TMA on Hopper), which fill zeros past the
edges of a and b, so the K tail and the M and N edges add nothing. TMA needs 16-byte aligned rows: when K or N is not
a multiple of 8 (bfloat16), the same kernel loads with masked pointer loads instead. Descriptors also run under
Triton's CPU interpreter, which checks the same alignment.

M up to SPLIT_K_MAX_M (decode-like shapes, too few output tiles to fill the SMs) takes a split-K path: narrower tiles,
one program per tile and K slice, each slice's float32 partial tile written to a workspace, and a second kernel that
adds the slices in a fixed order and rounds to bfloat16 once, so the result is the same from run to run. Tile sizes,
warps, stages, the split, persistence, TMA and warp specialization of the tile loop are KNOBS.
"""
import functools

import torch
import triton
import triton.language as tl

# Knobs a tuner may adjust; the wrapper reads them at every call. tl.dot needs every block dimension >= 16.
KNOBS = {
    "BLOCK_M": 128,
    "BLOCK_N": 256,
    "BLOCK_K": 64,
    "GROUP_M": 8,  # tile rows walked together (grouped order, for L2 reuse)
    "num_warps": 8,
    "num_stages": 3,  # K blocks in flight per operand; capped below so the tiles fit in shared memory
    "PERSISTENT": True,  # one program per SM looping over tiles; False: one program per tile
    "TMA": True,  # tensor descriptors where the shape allows them; False: masked pointer loads everywhere
    "WARP_SPECIALIZE": False,  # tile loop's tl.range(warp_specialize=...): a producer warp group issues the loads
    "SPLIT_K_MAX_M": 64,  # M at or below this takes the split-K path (0: never)
    "SPLIT_K": 4,  # K slices per output tile on that path (fewer when K has fewer blocks)
    "SPLIT_BLOCK_N": 64,
    "SPLIT_BLOCK_K": 128,
    "SPLIT_STAGES": 4,
}
KNOB_SPACE = {
    "BLOCK_M": [64, 128, 256],
    "BLOCK_N": [64, 128, 256],
    "BLOCK_K": [32, 64, 128],
    "GROUP_M": [1, 4, 8, 16],
    "num_warps": [4, 8],
    "num_stages": [2, 3, 4, 5],
    "PERSISTENT": [True, False],
    "TMA": [True, False],
    "WARP_SPECIALIZE": [False, True],
    "SPLIT_K_MAX_M": [0, 16, 64, 128],
    "SPLIT_K": [1, 2, 4, 8, 16],
    "SPLIT_BLOCK_N": [32, 64, 128],
    "SPLIT_BLOCK_K": [64, 128, 256],
    "SPLIT_STAGES": [3, 4, 5, 6],
}

SMEM_BUDGET = 220 * 1024  # Hopper gives a program up to 227 KB of shared memory


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, w_ptr, M, N, K, n_splits, k_per_split,
                  stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                  USE_TMA: tl.constexpr, PARTIAL: tl.constexpr, WARP_SPECIALIZE: tl.constexpr):
    # Work units: every output tile once per K slice (n_splits = 1 without split-K), numbered slice by slice.
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    num_tiles = tiles_m * tiles_n
    per_group = GROUP_M * tiles_n
    if USE_TMA:
        # Descriptors (TMA on Hopper): out-of-bounds rows, columns and K positions load as zeros, and a store
        # writes only the part of the tile inside c.
        a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[stride_am, 1],
                                           block_shape=[BLOCK_M, BLOCK_K])
        b_desc = tl.make_tensor_descriptor(b_ptr, shape=[K, N], strides=[stride_bk, 1],
                                           block_shape=[BLOCK_K, BLOCK_N])
        if not PARTIAL:
            c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[stride_cm, 1],
                                               block_shape=[BLOCK_M, BLOCK_N])
    # Persistent when the grid is smaller than the number of units: program p takes units p, p + P, p + 2P, ...
    for unit in tl.range(tl.program_id(0), num_tiles * n_splits, tl.num_programs(0),
                         warp_specialize=WARP_SPECIALIZE):
        tile = unit % num_tiles
        split = unit // num_tiles
        # Grouped order: GROUP_M tile rows (fewer in the last group) are walked down each tile column in turn.
        first_m = (tile // per_group) * GROUP_M
        group_rows = min(tiles_m - first_m, GROUP_M)
        pid_m = first_m + (tile % per_group) % group_rows
        pid_n = (tile % per_group) // group_rows
        off_m = pid_m * BLOCK_M
        off_n = pid_n * BLOCK_N
        rows = off_m + tl.arange(0, BLOCK_M)
        cols = off_n + tl.arange(0, BLOCK_N)
        ks = tl.arange(0, BLOCK_K)
        # This unit's K slice; k_per_split is a multiple of BLOCK_K, so no block reaches into the next slice.
        k_start = split * k_per_split
        k_end = min(k_start + k_per_split, K)

        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k0 in range(k_start, k_end, BLOCK_K):
            if USE_TMA:
                a = a_desc.load([off_m, k0])
                b = b_desc.load([k0, off_n])
            else:
                # Out-of-range rows, columns and K positions load 0, so the last (partial) K block adds only real
                # terms.
                k_ok = ks < K - k0
                a = tl.load(a_ptr + rows[:, None] * stride_am + (k0 + ks)[None, :] * stride_ak,
                            mask=(rows[:, None] < M) & k_ok[None, :], other=0.0)
                b = tl.load(b_ptr + (k0 + ks)[:, None] * stride_bk + cols[None, :] * stride_bn,
                            mask=k_ok[:, None] & (cols[None, :] < N), other=0.0)
            acc = tl.dot(a, b, acc)  # bf16 x bf16 products, float32 sums

        if PARTIAL:
            # The slice's float32 partial tile, into its own (M, N) plane of the workspace (summed by sum_kernel).
            w_ptrs = w_ptr + split * M * N + rows[:, None] * N + cols[None, :]
            tl.store(w_ptrs, acc, mask=(rows[:, None] < M) & (cols[None, :] < N))
        elif USE_TMA:
            c_desc.store([off_m, off_n], acc.to(c_ptr.dtype.element_ty))
        else:
            c_ptrs = c_ptr + rows[:, None] * stride_cm + cols[None, :] * stride_cn
            tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(rows[:, None] < M) & (cols[None, :] < N))


@triton.jit
def sum_kernel(w_ptr, c_ptr, n_elements, n_splits, BLOCK: tl.constexpr):
    # Adds the K slices' partials of each element in slice order (deterministic), then rounds to bf16 once.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    acc = tl.load(w_ptr + offs, mask=mask, other=0.0)
    for split in range(1, n_splits):
        acc += tl.load(w_ptr + split * n_elements + offs, mask=mask, other=0.0)
    tl.store(c_ptr + offs, acc.to(c_ptr.dtype.element_ty), mask=mask)


@functools.lru_cache(maxsize=None)
def sm_count():
    """SMs of the current device: Triton's driver answers on a GPU (and, in evolve's CPU mode, for a stand-in
    Hopper); 132, an H100's or H200's count, where no driver answers (the bare interpreter)."""
    try:
        from triton.runtime import driver

        props = driver.active.utils.get_device_properties(driver.active.get_current_device())
        return props["multiprocessor_count"]
    except RuntimeError:
        return 132


@functools.lru_cache(maxsize=None)
def allocator(device):
    """What Triton calls at launch for global scratch: room for the descriptors tl.make_tensor_descriptor builds on
    the device."""
    def allocate(size, alignment, stream):
        return torch.empty(size, dtype=torch.int8, device=device)
    return allocate


@functools.lru_cache(maxsize=None)
def triton_has_descriptors():
    """Whether the installed Triton builds tensor descriptors in kernels (3.4 and later)."""
    try:
        return callable(tl.make_tensor_descriptor) and callable(triton.set_allocator)
    except AttributeError:
        return False


def _descriptors_fit(a, b, c):
    """TMA needs 16-byte aligned base addresses and row strides, and rows contiguous: K and N multiples of 8 in bf16.
    A Triton without tensor descriptors takes the pointer path too."""
    if not triton_has_descriptors():
        return False
    for t in (a, b, c):
        if t.stride(1) != 1 or (t.stride(0) * t.element_size()) % 16 or t.data_ptr() % 16:
            return False
    return True


def _stages(wanted, bm, bn, bk, element_size, epilogue_bytes):
    """num_stages capped so that the pipelined a and b tiles and the epilogue's staging fit in shared memory."""
    per_stage = (bm * bk + bk * bn) * element_size
    return max(1, min(wanted, (SMEM_BUDGET - epilogue_bytes) // per_stage))


def custom_kernel(a, b):
    M, K = a.shape
    _, N = b.shape
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)
    use_tma = KNOBS["TMA"] and _descriptors_fit(a, b, c)
    if use_tma:
        triton.set_allocator(allocator(a.device))  # a context variable: set on every call, from whichever thread

    if M <= KNOBS["SPLIT_K_MAX_M"]:
        # Decode-like: a few rows. The smallest M block tl.dot allows (16) that covers M, narrow N tiles, and K cut
        # into slices so that many programs stream b at once.
        bm = min(64, max(16, triton.next_power_of_2(M)))
        bn, bk = KNOBS["SPLIT_BLOCK_N"], KNOBS["SPLIT_BLOCK_K"]
        warps = 4
        k_blocks = triton.cdiv(K, bk)
        split = max(1, min(KNOBS["SPLIT_K"], k_blocks))
        k_per_split = triton.cdiv(k_blocks, split) * bk
        split = triton.cdiv(K, k_per_split)  # no slice left without work
        stages = _stages(KNOBS["SPLIT_STAGES"], bm, bn, bk, a.element_size(), 0)
        units = triton.cdiv(M, bm) * triton.cdiv(N, bn) * split
        grid = units  # a streaming path: many programs per SM keep more loads in flight than a persistent loop
        warp_specialize = False
    else:
        bm, bn, bk = KNOBS["BLOCK_M"], KNOBS["BLOCK_N"], KNOBS["BLOCK_K"]
        warps = KNOBS["num_warps"]
        bn = min(bn, 32768 // bm)  # at most 128x256 accumulators: 256x256 would spill whatever the warps
        split, k_per_split = 1, triton.cdiv(K, bk) * bk
        stages = _stages(KNOBS["num_stages"], bm, bn, bk, a.element_size(), bm * bn * c.element_size())
        units = triton.cdiv(M, bm) * triton.cdiv(N, bn)
        grid = min(units, sm_count()) if KNOBS["PERSISTENT"] else units
        # Triton 3.9 warp-specializes this loop on Hopper only with descriptor loads, BLOCK_M >= 128 and
        # num_warps = 4 (it then runs 12 warps: the MMAs split between two warp groups); it fails to compile with
        # pointer loads or BLOCK_M = 64, and ignores the request at 8 warps.
        warp_specialize = KNOBS["WARP_SPECIALIZE"] and use_tma and bm >= 128

    partial = split > 1
    w = torch.empty((split, M, N), dtype=torch.float32, device=a.device) if partial else c
    matmul_kernel[(grid,)](
        a, b, c, w, M, N, K, split, k_per_split,
        a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
        BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=KNOBS["GROUP_M"],
        USE_TMA=use_tma, PARTIAL=partial, WARP_SPECIALIZE=warp_specialize,
        num_warps=warps, num_stages=stages,
    )
    if partial:
        block = 1024
        sum_kernel[(triton.cdiv(M * N, block),)](w, c, M * N, split, BLOCK=block, num_warps=4)
    return c
