"""C = A @ B (A: (M, K), B: (K, N), bf16) on Hopper's tensor cores in CuTeDSL: warpgroup MMA (wgmma) fed by TMA
loads through a multi-stage mbarrier pipeline, float32 accumulators, rounded to bf16 once, on the store.

A CTA of WARPGROUPS x 128 threads owns a BLOCK_M x BLOCK_N tile of C; each warpgroup holds its BLOCK_M / WARPGROUPS
rows in float32 registers. Shared memory holds STAGES buffers, each a BLOCK_M x BLOCK_K tile of A and a
BLOCK_K x BLOCK_N tile of B in the swizzled layouts wgmma reads (A K-major and B N-major, as they lie in memory).
Warp 0 loads the tiles with TMA (a few instructions per tile); the TMA unit counts the bytes that land against the
buffer's "full" mbarrier. The warpgroups wait on that barrier, issue BLOCK_K / 16 wgmma instructions that read A and
B straight from shared memory, and free the buffer (its "empty" mbarrier) one k-tile later, once those wgmmas have
finished (wait_group(1)); warp 0 then refills it with the k-tile STAGES ahead. cutlass.pipeline.PipelineTmaAsync
keeps the two barriers per stage and their phases. After the K loop the tile is rounded to bf16, written to shared
memory over the A buffers and stored with TMA.

Edges: TMA fills zeros for rows, columns and K positions past the ends of A and B, so the K tail and the partial M
and N tiles add nothing, and the TMA store writes only the part of the tile inside C. TMA needs 16-byte aligned base
addresses and row strides: K and N multiples of 8 in bf16. Other shapes go, chosen on the host, to the plain tiled
FMA kernel of seeds/cutedsl/matmul_simple.py (no tensor cores), copied below.

M up to SMALL_M (decode-like shapes) takes 64-row tiles, one warpgroup and SMALL_BLOCK_N-wide tiles, so that more
CTAs stream B at once (M = 16, N = 8192 in 128 x 256 tiles is 32 CTAs for 132 SMs).

With CLUSTER_M x CLUSTER_N > 1, the CTAs of a thread-block cluster share their loads: the CLUSTER_M CTAs of a column
of tiles need the same B tile, and each loads 1/CLUSTER_M of it and multicasts it into all their shared memories (A
likewise across CLUSTER_N), which divides the L2 reads of that operand by the cluster's size along it.

Shapes are dynamic: one compile per knob setting serves every M, N and K.
"""
import torch
import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
from cutlass import BFloat16, Float32
from cutlass.cute.nvgpu import OperandMajorMode, cpasync, warpgroup
from cutlass.cute.runtime import from_dlpack
from cutlass.memory import SmemAllocator

# Knobs a tuner may adjust; the wrapper reads them at every call and fixes combinations that cannot work (_config).
KNOBS = {
    "BLOCK_M": 128,  # a multiple of 64 (one wgmma covers 64 rows) per warpgroup
    "BLOCK_N": 256,  # the wgmma N: a multiple of 16 up to 256
    "BLOCK_K": 64,  # 64 bf16 = 128 bytes: one row of the 128-byte swizzle
    "STAGES": 4,  # k-tiles in flight; one stage is (BLOCK_M + BLOCK_N) * BLOCK_K * 2 bytes of shared memory
    "WARPGROUPS": 2,  # MMA warpgroups splitting BLOCK_M; each thread holds BLOCK_M * BLOCK_N / (128 * WARPGROUPS) fp32
    "CLUSTER_M": 1,  # CTAs along M in a cluster: they share (multicast) the B tile
    "CLUSTER_N": 1,  # CTAs along N in a cluster: they share the A tile
    "SMALL_M": 64,  # M at or below this takes 64-row tiles with one warpgroup (0: never)
    "SMALL_BLOCK_N": 64,  # BLOCK_N for those
}
KNOB_SPACE = {
    "BLOCK_M": [64, 128, 256],
    "BLOCK_N": [64, 128, 192, 256],
    "BLOCK_K": [32, 64, 128],
    "STAGES": [2, 3, 4, 5, 6, 7],
    "WARPGROUPS": [1, 2],
    "CLUSTER_M": [1, 2],
    "CLUSTER_N": [1, 2],
    "SMALL_M": [0, 16, 64, 128],
    "SMALL_BLOCK_N": [32, 64, 128],
}

SMEM_BYTES = 227 * 1024  # what one CTA may use on an H100 or H200 (228 KB per SM, of which CUDA keeps 1 KB per CTA)
_cache = {}


# ---------------------------------------------------------------------------------------------------------------------
# The tensor-core kernel
# ---------------------------------------------------------------------------------------------------------------------
@cute.kernel
def _gemm_kernel(tma_a: cute.CopyAtom, mA: cute.Tensor, tma_b: cute.CopyAtom, mB: cute.Tensor,
                 tma_c: cute.CopyAtom, mC: cute.Tensor, tiled_mma: cute.TiledMma,
                 a_layout: cute.ComposedLayout, b_layout: cute.ComposedLayout, c_layout: cute.ComposedLayout,
                 bm: cutlass.Constexpr[int], bn: cutlass.Constexpr[int], bk: cutlass.Constexpr[int],
                 stages: cutlass.Constexpr[int], cluster_m: cutlass.Constexpr[int],
                 cluster_n: cutlass.Constexpr[int]):
    warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())  # before any branch (basics.md, "Kernels that hung")
    tidx, _, _ = cute.arch.thread_idx()
    tile_m, tile_n, _ = cute.arch.block_idx()
    cta_m, cta_n, _ = cute.arch.block_in_cluster_idx()  # this CTA's place in its cluster (0, 0 without one)
    if warp == 0:
        cpasync.prefetch_descriptor(tma_a)
        cpasync.prefetch_descriptor(tma_b)

    # Shared memory: two mbarriers per stage, then the A and B stage buffers, 1024-byte aligned (the 128-byte swizzle
    # repeats every 8 rows of 128 bytes). The C tile is staged over the A buffers after the K loop.
    smem = SmemAllocator()
    barriers = smem.allocate_array(cutlass.Int64, stages * 2)
    sA = smem.allocate_tensor(BFloat16, a_layout.outer, byte_alignment=1024, swizzle=a_layout.inner)
    sB = smem.allocate_tensor(BFloat16, b_layout.outer, byte_alignment=1024, swizzle=b_layout.inner)
    sC = cute.make_tensor(cute.recast_ptr(sA.iterator, c_layout.inner, dtype=BFloat16), c_layout.outer)

    # The pipeline. A stage's "full" barrier expects one arrival (warp 0's, announcing the stage's byte count) and
    # completes when that many bytes have landed; its "empty" barrier expects one arrival per MMA warp of every CTA
    # that reads the stage's data (this one and those it shares loads with). create() initializes the barriers and
    # syncs the CTA (the cluster) so that no TMA signals a barrier before it exists.
    num_warps = cute.size(tiled_mma) // 32
    mainloop = pipeline.PipelineTmaAsync.create(
        barrier_storage=barriers, num_stages=stages,
        producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
        consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, num_warps * (cluster_m + cluster_n - 1)),
        tx_count=(bm + bn) * bk * 2, cta_layout_vmnk=cute.make_layout((1, cluster_m, cluster_n, 1)))

    # This CTA's tiles, as TMA coordinates: gA (bm, bk, k_tiles), gB (bn, bk, k_tiles), gC (bm, bn).
    gA = cute.local_tile(mA, (bm, bk), (tile_m, None))
    gB = cute.local_tile(mB, (bn, bk), (tile_n, None))
    gC = cute.local_tile(mC, (bm, bn), (tile_m, tile_n))
    # What this CTA's TMA copies: the A tile is shared by the cluster_n CTAs of its row of the cluster (each loads a
    # slice and multicasts it to all of them), the B tile by the cluster_m CTAs of its column.
    tAsA, tAgA = cpasync.tma_partition(tma_a, cta_n, cute.make_layout(cluster_n),
                                       cute.group_modes(sA, 0, 2), cute.group_modes(gA, 0, 2))
    tBsB, tBgB = cpasync.tma_partition(tma_b, cta_m, cute.make_layout(cluster_m),
                                       cute.group_modes(sB, 0, 2), cute.group_modes(gB, 0, 2))
    cta_layout = cute.make_layout((cluster_m, cluster_n))  # rank in the cluster = cta_m + cluster_m * cta_n
    a_mask = 0
    b_mask = 0
    if cutlass.const_expr(cluster_n > 1):
        a_mask = cute.make_layout_image_mask(cta_layout, (cta_m, cta_n), mode=1)  # the CTAs with this cta_m
    if cutlass.const_expr(cluster_m > 1):
        b_mask = cute.make_layout_image_mask(cta_layout, (cta_m, cta_n), mode=0)  # the CTAs with this cta_n

    # The MMA's view: its warpgroup's slice of every stage as wgmma operands (shared-memory descriptors), and its
    # accumulators in registers.
    thr_mma = tiled_mma.get_slice((tidx // 128) * 128)
    tCrA = tiled_mma.make_fragment_A(thr_mma.partition_A(sA))  # (MMA, MMA_M, MMA_K, stages)
    tCrB = tiled_mma.make_fragment_B(thr_mma.partition_B(sB))  # (MMA, MMA_N, MMA_K, stages)
    acc = cute.make_rmem_tensor(thr_mma.partition_C(gC).shape, Float32)

    # Where each side is in the ring of stages: (k-tile count, stage index, barrier phase). The producer starts at
    # phase 1, which a fresh "empty" barrier passes at once; the consumers at phase 0.
    load = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, stages)
    read = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, stages)
    free = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, stages)
    k_tiles = cute.size(gA, mode=[2])

    # Fill the pipeline: up to `stages` k-tiles in flight before the first MMA.
    if warp == 0:
        for _ in cutlass.range(cutlass.min(stages, k_tiles), unroll=1):
            _load_stage(mainloop, load, tma_a, tAgA, tAsA, a_mask, tma_b, tBgB, tBsB, b_mask)
            load.advance()

    # The first k-tile, peeled: its first wgmma overwrites the accumulators (ACCUMULATE off), so they need no zeroing.
    # A version that zeroed them with acc.fill(0.0) and ran every k-tile in one loop compiled to serialized wgmmas: on
    # the path where that loop runs no iteration the accumulators are constant zeros, the compiler moved the
    # epilogue's bf16 conversion of them ahead of the final wait_group(0), and ptxas (C7514: "non wgmma instructions
    # reading accumulator registers of a wgmma between start and end of the pipeline stage") then waited after every
    # wgmma.
    mainloop.consumer_wait(read)  # the stage's bytes have landed
    warpgroup.fence()  # order earlier register accesses before the wgmmas
    tiled_mma.set(warpgroup.Field.ACCUMULATE, False)
    for kb in cutlass.range_constexpr(bk // 16):  # one wgmma (64 x bn x 16 per warpgroup and M-repeat) per 16 of K
        cute.gemm(tiled_mma, acc, tCrA[None, None, kb, read.index], tCrB[None, None, kb, read.index], acc)
        tiled_mma.set(warpgroup.Field.ACCUMULATE, True)
    warpgroup.commit_group()
    read.advance()

    for _ in cutlass.range(1, k_tiles, unroll=1):
        mainloop.consumer_wait(read)
        warpgroup.fence()
        for kb in cutlass.range_constexpr(bk // 16):
            cute.gemm(tiled_mma, acc, tCrA[None, None, kb, read.index], tCrB[None, None, kb, read.index], acc)
        warpgroup.commit_group()
        # These wgmmas run on while the previous k-tile's are done (at most one group in flight), so that k-tile's
        # stage is free: release it, and warp 0 refills it with the k-tile `stages` ahead.
        warpgroup.wait_group(1)
        mainloop.consumer_release(free)
        free.advance()
        read.advance()
        if warp == 0 and load.count < k_tiles:
            _load_stage(mainloop, load, tma_a, tAgA, tAsA, a_mask, tma_b, tBgB, tBsB, b_mask)
            load.advance()
    warpgroup.wait_group(0)

    # Epilogue. Every warpgroup is done reading sA before the C tile overwrites it; in a cluster, every peer is also
    # done signalling this CTA's barriers before any CTA goes on (and exits).
    if cutlass.const_expr(cluster_m * cluster_n > 1):
        cute.arch.cluster_arrive()
        cute.arch.cluster_wait()
    else:
        cute.arch.sync_threads()
    tCsC = tiled_mma.get_slice(tidx).partition_C(sC)  # this thread's accumulator elements, placed in the C tile
    tCsC.store(acc.load().to(BFloat16))
    cute.arch.fence_proxy("async.shared", space="cta")  # make the writes above visible to the TMA unit
    cute.arch.sync_threads()
    bsC, bgC = cpasync.tma_partition(tma_c, 0, cute.make_layout(1), cute.group_modes(sC, 0, 2),
                                     cute.group_modes(gC, 0, 2))
    if warp == 0:
        with cute.arch.elect_one():  # one thread stores (cute.copy elects one for a TMA load, not for a store)
            cute.copy(tma_c, bsC, bgC)  # writes only the part of the tile inside C
            cute.arch.cp_async_bulk_commit_group()
            cute.arch.cp_async_bulk_wait_group(0, read=True)  # shared memory must outlive the TMA unit's reads


@cute.jit
def _load_stage(mainloop: pipeline.PipelineTmaAsync, state: pipeline.PipelineState,
                tma_a: cute.CopyAtom, tAgA: cute.Tensor, tAsA: cute.Tensor, a_mask: cutlass.Int16,
                tma_b: cute.CopyAtom, tBgB: cute.Tensor, tBsB: cute.Tensor, b_mask: cutlass.Int16):
    """Warp 0: wait until stage state.index is free, announce its byte count on its full barrier, and issue the TMA
    loads of k-tile state.count into it (the DSL elects one thread to issue each)."""
    mainloop.producer_acquire(state)
    full = mainloop.producer_get_barrier(state)
    cute.copy(tma_a, tAgA[None, state.count], tAsA[None, state.index], tma_bar_ptr=full, mcast_mask=a_mask)
    cute.copy(tma_b, tBgB[None, state.count], tBsB[None, state.index], tma_bar_ptr=full, mcast_mask=b_mask)


@cute.jit
def _smem_atom(contiguous: cutlass.Constexpr[int], k_major: cutlass.Constexpr[int]):
    """The swizzled shared-memory atom wgmma and TMA agree on, for 16-bit elements: 8 rows of `contiguous` elements
    (64, 32 or 16: 128, 64 or 32 bytes), K-major ((8, n):(n, 1)) or M/N-major ((n, 8):(1, n)). The swizzle acts on
    byte addresses: Swizzle(3, 4, 3) XORs the 16-byte chunk index (address bits 4-6) with the row index mod 8 (bits
    7-9), so the 8 rows of a column of chunks fall in different banks. It is what
    warpgroup.make_smem_layout_atom(SmemLayoutAtomKind.K_SW128, BFloat16) builds."""
    bits = 3 if contiguous == 64 else (2 if contiguous == 32 else 1)
    if cutlass.const_expr(k_major):
        layout = cute.make_layout((8, contiguous), stride=(contiguous, 1))
    else:
        layout = cute.make_layout((contiguous, 8), stride=(1, contiguous))
    return cute.make_composed_layout(cute.make_swizzle(bits, 4, 3), 0, layout)


@cute.jit
def _gemm_tma(mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor, bm: cutlass.Constexpr[int],
              bn: cutlass.Constexpr[int], bk: cutlass.Constexpr[int], stages: cutlass.Constexpr[int],
              warpgroups: cutlass.Constexpr[int], cluster_m: cutlass.Constexpr[int],
              cluster_n: cutlass.Constexpr[int]):
    # wgmma names its operands A (M, K) and B (N, K). b is (K, N) with N contiguous: the same memory viewed as (N, K)
    # is N-major ("MN-major"), which wgmma reads as it lies for 16-bit types (a transpose bit in the instruction).
    mBt = cute.make_tensor(mB.iterator, cute.select(mB.layout, mode=[1, 0]))

    # One wgmma is 64 x bn x 16 for bf16 (bn from 8 to 256 in steps of 8), issued by a warpgroup (128 threads) with A
    # and B read from shared memory; the warpgroups tile BLOCK_M, each repeating the instruction over its rows.
    op = warpgroup.MmaF16BF16Op(BFloat16, Float32, (64, bn, 16), warpgroup.OperandSource.SMEM,
                                OperandMajorMode.K, OperandMajorMode.MN)
    tiled_mma = cute.make_tiled_mma(cute.make_mma_atom(op), (warpgroups, 1, 1))

    # Stage layouts: the widest swizzle atom whose rows divide the contiguous extent (K for A, N for B and C), tiled
    # over the tile (along the non-contiguous mode first, as make_smem_layout_a/b in cutlass.utils.hopper_helpers do),
    # then over the stages.
    a_layout = cute.tile_to_shape(_smem_atom(_widest(bk), True), (bm, bk, stages), order=(0, 1, 2))
    b_layout = cute.tile_to_shape(_smem_atom(_widest(bn), False), (bn, bk, stages), order=(1, 0, 2))
    c_layout = cute.tile_to_shape(_smem_atom(_widest(bn), True), (bm, bn), order=(0, 1))

    # TMA atoms: a descriptor of the whole tensor in global memory (made here, on the host, and passed to the kernel
    # as a parameter) and the box one instruction moves (one stage's tile in its swizzled layout; a box row is at
    # most 128 bytes with this swizzle, so a wider tile takes several instructions). With multicast, each CTA sharing
    # a tile loads 1/n of it.
    if cutlass.const_expr(cluster_n > 1):
        op_a = cpasync.CopyBulkTensorTileG2SMulticastOp()
    else:
        op_a = cpasync.CopyBulkTensorTileG2SOp()
    if cutlass.const_expr(cluster_m > 1):
        op_b = cpasync.CopyBulkTensorTileG2SMulticastOp()
    else:
        op_b = cpasync.CopyBulkTensorTileG2SOp()
    tma_a, tA = cpasync.make_tiled_tma_atom(op_a, mA, cute.slice_(a_layout, (None, None, 0)), (bm, bk),
                                            num_multicast=cluster_n)
    tma_b, tB = cpasync.make_tiled_tma_atom(op_b, mBt, cute.slice_(b_layout, (None, None, 0)), (bn, bk),
                                            num_multicast=cluster_m)
    tma_c, tC = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileS2GOp(), mC, c_layout, (bm, bn))

    # One CTA per output tile; the grid is rounded up to whole clusters (the extra CTAs load zeros, store nothing).
    grid_m = (cute.ceil_div(mC.shape[0], bm) + cluster_m - 1) // cluster_m * cluster_m
    grid_n = (cute.ceil_div(mC.shape[1], bn) + cluster_n - 1) // cluster_n * cluster_n
    _gemm_kernel(tma_a, tA, tma_b, tB, tma_c, tC, tiled_mma, a_layout, b_layout, c_layout,
                 bm, bn, bk, stages, cluster_m, cluster_n).launch(
        grid=(grid_m, grid_n, 1), block=(warpgroups * 128, 1, 1), cluster=(cluster_m, cluster_n, 1))


def _widest(extent):
    """Elements per swizzle row: 64 (128 bytes), 32 or 16, the most that divides the contiguous extent (bf16)."""
    return 64 if extent % 64 == 0 else (32 if extent % 32 == 0 else 16)


def _config(M):
    """The knobs for this M, fixed where a combination cannot work: BLOCK_M a multiple of 64 per warpgroup, at most
    128 fp32 accumulators per thread (more spill), BLOCK_N a multiple of 16, the stages within shared memory, and
    enough stages that the C tile fits over the A buffers (STAGES * BLOCK_K >= BLOCK_N)."""
    bm, bn, bk, wg = KNOBS["BLOCK_M"], KNOBS["BLOCK_N"], KNOBS["BLOCK_K"], KNOBS["WARPGROUPS"]
    if M <= KNOBS["SMALL_M"]:
        bm, bn, wg = 64, KNOBS["SMALL_BLOCK_N"], 1
    wg = max(1, min(wg, bm // 64))
    while bm % (64 * wg):
        wg -= 1
    bn = max(16, min(bn, 256, 128 * 128 * wg // bm) // 16 * 16)
    per_stage = (bm + bn) * bk * 2
    most = (SMEM_BYTES - 1024) // per_stage
    if -(-bn // bk) > most:  # the C tile would not fit over the A buffers: narrower N
        bn = most * bk // 16 * 16
    stages = max(2, -(-bn // bk), min(KNOBS["STAGES"], most))
    return bm, bn, bk, stages, wg, KNOBS["CLUSTER_M"], KNOBS["CLUSTER_N"]


# ---------------------------------------------------------------------------------------------------------------------
# The fallback for shapes TMA cannot describe (K or N not a multiple of 8): seeds/cutedsl/matmul_simple.py's kernel.
# A CTA of 256 threads owns a 128 x 128 tile of C, each thread an 8 x 8 block of it, staged through shared memory as
# float32 16 values of K at a time; every access is bounds-checked.
# ---------------------------------------------------------------------------------------------------------------------
SBM, SBN, SBK, STM, STN = 128, 128, 16, 8, 8
SNT = (SBM // STM) * (SBN // STN)


@cute.kernel
def _simple_kernel(gA: cute.Tensor, gB: cute.Tensor, gC: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    bx, by, _ = cute.arch.block_idx()
    M = gA.shape[0]
    K = gA.shape[1]
    N = gB.shape[1]
    m0 = by * SBM
    n0 = bx * SBN
    tx = tidx % (SBN // STN)
    ty = tidx // (SBN // STN)
    smem = SmemAllocator()
    sA = smem.allocate_tensor(Float32, cute.make_layout((SBK, SBM), stride=(SBM, 1)), byte_alignment=16)
    sB = smem.allocate_tensor(Float32, cute.make_layout((SBK, SBN), stride=(SBN, 1)), byte_alignment=16)
    acc = cute.make_rmem_tensor((STM, STN), Float32)
    acc.fill(0.0)
    a_frag = cute.make_rmem_tensor((STM,), Float32)
    b_frag = cute.make_rmem_tensor((STN,), Float32)
    for k0 in cutlass.range(0, K, SBK):
        for l in cutlass.range_constexpr(SBM * SBK // SNT):
            idx = tidx + l * SNT
            r = idx // SBK
            c = idx % SBK
            va = Float32(0.0)
            if m0 + r < M and k0 + c < K:
                va = gA[m0 + r, k0 + c].to(Float32)
            sA[c, r] = va
        for l in cutlass.range_constexpr(SBK * SBN // SNT):
            idx = tidx + l * SNT
            r = idx // SBN
            c = idx % SBN
            vb = Float32(0.0)
            if k0 + r < K and n0 + c < N:
                vb = gB[k0 + r, n0 + c].to(Float32)
            sB[r, c] = vb
        cute.arch.barrier()
        for kk in cutlass.range_constexpr(SBK):
            for i in cutlass.range_constexpr(STM):
                a_frag[i] = sA[kk, ty * STM + i]
            for j in cutlass.range_constexpr(STN):
                b_frag[j] = sB[kk, tx * STN + j]
            for i in cutlass.range_constexpr(STM):
                for j in cutlass.range_constexpr(STN):
                    acc[i, j] = acc[i, j] + a_frag[i] * b_frag[j]
        cute.arch.barrier()
    for i in cutlass.range_constexpr(STM):
        for j in cutlass.range_constexpr(STN):
            if m0 + ty * STM + i < M and n0 + tx * STN + j < N:
                gC[m0 + ty * STM + i, n0 + tx * STN + j] = acc[i, j].to(gC.element_type)


@cute.jit
def _gemm_simple(mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor):
    grid_n = (mB.shape[1] + SBN - 1) // SBN
    grid_m = (mA.shape[0] + SBM - 1) // SBM
    _simple_kernel(mA, mB, mC).launch(grid=(grid_n, grid_m, 1), block=(SNT, 1, 1))


# ---------------------------------------------------------------------------------------------------------------------
# Host side
# ---------------------------------------------------------------------------------------------------------------------
def _tma_fits(*tensors):
    """TMA describes a tensor whose rows are contiguous, with 16-byte aligned base address and row stride."""
    for t in tensors:
        if t.stride(1) != 1 or (t.stride(0) * t.element_size()) % 16 or t.data_ptr() % 16:
            return False
    return True


def _wrap(t, tma):
    """A CuTe tensor with dynamic shape and strides, so that one compile serves every shape; for TMA, the row length
    (and so the row stride) declared a multiple of 8 elements, 16 bytes."""
    if tma:
        return (from_dlpack(t, assumed_align=16).mark_compact_shape_dynamic(mode=1, stride_order=(0, 1), divisibility=8)
                .mark_compact_shape_dynamic(mode=0, stride_order=(0, 1)))
    return from_dlpack(t).mark_layout_dynamic(leading_dim=1)


def custom_kernel(*inputs):
    if len(inputs) == 1 and isinstance(inputs[0], (tuple, list)):
        inputs = tuple(inputs[0])
    a, b = inputs[0].contiguous(), inputs[1].contiguous()
    assert a.dim() == 2 and b.dim() == 2 and a.shape[1] == b.shape[0]
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)
    if M == 0 or N == 0:
        return c
    if K == 0:
        return torch.zeros((M, N), dtype=a.dtype, device=a.device)
    tma = a.dtype == torch.bfloat16 and b.dtype == torch.bfloat16 and _tma_fits(a, b, c)
    ta, tb, tc = _wrap(a, tma), _wrap(b, tma), _wrap(c, tma)
    if tma:
        config = _config(M)
        key = ("tma", config)
        if key not in _cache:
            _cache[key] = cute.compile(_gemm_tma, ta, tb, tc, *config)
    else:
        key = ("simple", a.dtype, b.dtype)
        if key not in _cache:
            _cache[key] = cute.compile(_gemm_simple, ta, tb, tc)
    _cache[key](ta, tb, tc)
    return c


if __name__ == "__main__":
    # On a card, `python wgmma_tma.py` checks every path against torch and prints "ok": TMA with a K tail and partial M
    # and N tiles, clusters, other tile shapes, the small-M tiles and the fallback. (Never run on import.)
    torch.manual_seed(0)
    default = dict(KNOBS)
    settings = [{}, {"CLUSTER_M": 2}, {"CLUSTER_N": 2}, {"CLUSTER_M": 2, "CLUSTER_N": 2, "BLOCK_N": 128},
                {"BLOCK_M": 256, "BLOCK_N": 128}, {"BLOCK_N": 128, "WARPGROUPS": 1, "BLOCK_K": 32, "STAGES": 6},
                {"BLOCK_N": 192, "BLOCK_K": 128}, {"SMALL_M": 0}]
    shapes = [(1, 8, 8), (64, 128, 96), (200, 1000, 264), (300, 72, 520), (16, 8200, 128), (1000, 4104, 1032),
              (3, 17, 5), (130, 70, 33), (20, 3000, 36)]
    for setting in settings:
        KNOBS.clear()
        KNOBS.update(default, **setting)
        for M, K, N in shapes:
            a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
            b = torch.randn(K, N, device="cuda", dtype=torch.bfloat16)
            torch.testing.assert_close(custom_kernel(a, b).float(), a.float() @ b.float(), rtol=1e-2,
                                       atol=1e-2 * K ** 0.5, msg=lambda m: f"{setting} {M}x{K}x{N}: {m}")
    print("ok")
