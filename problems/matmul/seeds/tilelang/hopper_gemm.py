"""C = A @ B in TileLang, set up the way Hopper GEMMs run: 128 x 256 tiles on two consumer warp groups, a TMA
pipeline fed by a producer warp group, rasterized tile order, a TMA-stored epilogue, and split-K for decode shapes.

Large M (the compute-bound shapes): a CTA owns a BLOCK_M x BLOCK_N tile of C in float32 registers. A T.Pipelined loop
over K copies a BLOCK_M x BLOCK_K tile of A and a BLOCK_K x BLOCK_N tile of B into shared memory for each of STAGES
stages and multiplies them with T.gemm. On Hopper TileLang lowers this to:
- TMA loads (cp.async.bulk.tensor) into 128-byte-swizzled shared memory, issued by a producer warp group of 128
  threads that TileLang adds to THREADS (warp specialization), with an mbarrier per stage between the producer and
  the consumer warp groups; setmaxnreg gives the registers to the consumers;
- wgmma from shared memory: THREADS = 256 is two consumer warp groups; POLICY "full_row" gives each one whole rows
  (64 x 256 each, m64n256k16 instructions), "square" splits the tile both ways;
- an epilogue that rounds to bf16 into shared memory (stmatrix) and stores the tile with TMA.
T.use_swizzle(PANEL, RASTER) renumbers the CTAs so that consecutive ones walk a panel of PANEL tile rows (or columns)
before moving on: tiles in flight together share rows of A and columns of B while those are in L2. PERSISTENT
launches one CTA per SM that loops over the tiles (T.Persistent, in groups of PANEL tile columns), so the producer
loads the next tile while the consumers store the last.
TMA needs 16-byte aligned rows (K and N multiples of 8 in bf16); otherwise TileLang copies with guarded loads
(cp.async) instead, and the kernel is compiled without warp specialization (TileLang's pass config): with one operand
on TMA and the other not, its producer would take as many threads as the consumers and leave the accumulator too few
registers. Tiles past the edges of A and B read zeros (the K tail adds nothing) and store nothing.

M up to SMALL_M (decode: a few rows times a weight matrix; reading B is the whole cost) takes a split-K path:
64-row tiles on one consumer warp group, narrow N tiles (SMALL_BLOCK_N), deeper K blocks, SMALL_CTAS_PER_SM CTAs an
SM (T.annotate_min_blocks_per_sm caps the registers, T.no_set_max_nreg keeps them even), and when the output tiles
are fewer than SPLIT_CTAS, K cut into up to SPLIT_K slices of whole K blocks so that more CTAs stream B at once. Each
slice's float32 partial tile goes to its own plane of a workspace and a second kernel adds the planes in a fixed
order and rounds to bf16 once: the same bits every run. KNOBS: tiles, stages, threads, warp policy, rasterization,
persistence and the split.
"""
import torch
import tilelang
import tilelang.language as T

KNOBS = {
    "BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64,
    "STAGES": 3,  # K tiles in flight (shared memory per stage: (BLOCK_M + BLOCK_N) * BLOCK_K * 2 bytes)
    "THREADS": 256,  # consumer threads: 128 per warp group; TileLang adds a producer warp group for TMA
    "POLICY": "full_row",  # how the consumer warp groups split the tile: full_row, square, full_col
    "RASTER": "row",  # T.use_swizzle order: "row" walks a panel of tile rows, "column" of tile columns, "none"
    "PANEL": 8,  # tile rows (or columns) per rasterization panel; the group size of the persistent order
    "PERSISTENT": False,  # one CTA per SM looping over the tiles
    "SMALL_M": 64,  # M at or below this takes the split-K path (0: never)
    "SMALL_BLOCK_N": 64, "SMALL_BLOCK_K": 128, "SMALL_STAGES": 3,
    "SMALL_CTAS_PER_SM": 2,  # CTAs an SM holds on that path (registers capped to fit; shared memory must fit too)
    "SPLIT_K": 4,  # most K slices per output tile on that path
    "SPLIT_CTAS": 264,  # split only while tiles * slices stay within this many CTAs (2 per SM on 132 SMs)
}
KNOB_SPACE = {
    "BLOCK_M": [64, 128, 256], "BLOCK_N": [64, 128, 256], "BLOCK_K": [32, 64, 128],
    "STAGES": [2, 3, 4, 5], "THREADS": [128, 256],
    "POLICY": ["full_row", "square", "full_col"], "RASTER": ["row", "column", "none"], "PANEL": [4, 8, 10, 16],
    "PERSISTENT": [False, True],
    "SMALL_M": [0, 16, 64, 128], "SMALL_BLOCK_N": [32, 64, 128], "SMALL_BLOCK_K": [64, 128, 256],
    "SMALL_STAGES": [2, 3, 4, 6], "SMALL_CTAS_PER_SM": [1, 2], "SPLIT_K": [1, 2, 4, 8], "SPLIT_CTAS": [132, 264, 528],
}

SMEM_BUDGET = 220 * 1024  # of Hopper's 228 KB an SM (227 KB at most a CTA), for the pipelined A and B tiles
POLICIES = {"full_row": T.GemmWarpPolicy.FullRow, "square": T.GemmWarpPolicy.Square,
            "full_col": T.GemmWarpPolicy.FullCol}
_cache = {}


def _tiled(M: int, N: int, K: int, dtype: str, BLOCK_M: int, BLOCK_N: int, BLOCK_K: int, STAGES: int, THREADS: int,
           POLICY: str, RASTER: str, PANEL: int, PERSISTENT: bool, SMS: int, CTAS_PER_SM: int):
    policy = POLICIES[POLICY]
    m_tiles = (M + BLOCK_M - 1) // BLOCK_M
    n_tiles = (N + BLOCK_N - 1) // BLOCK_N
    k_steps = (K + BLOCK_K - 1) // BLOCK_K
    ctas = max(1, min(SMS, m_tiles * n_tiles))

    if PERSISTENT:
        @T.prim_func
        def hopper_gemm_persistent(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype),
                                   C: T.Tensor((M, N), dtype)):
            with T.Kernel(ctas, threads=THREADS) as cta:
                a_tile = T.alloc_shared((BLOCK_M, BLOCK_K), dtype)
                b_tile = T.alloc_shared((BLOCK_K, BLOCK_N), dtype)
                c_tile = T.alloc_shared((BLOCK_M, BLOCK_N), dtype)
                acc = T.alloc_fragment((BLOCK_M, BLOCK_N), "float32")
                for by, bx in T.Persistent([m_tiles, n_tiles], ctas, cta, group_size=PANEL):
                    T.clear(acc)
                    for k in T.Pipelined(k_steps, num_stages=STAGES):
                        T.copy(A[by * BLOCK_M, k * BLOCK_K], a_tile)
                        T.copy(B[k * BLOCK_K, bx * BLOCK_N], b_tile)
                        T.gemm(a_tile, b_tile, acc, policy=policy)
                    T.copy(acc, c_tile)
                    T.copy(c_tile, C[by * BLOCK_M, bx * BLOCK_N])

        return hopper_gemm_persistent

    @T.prim_func
    def hopper_gemm(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(n_tiles, m_tiles, threads=THREADS) as (bx, by):
            a_tile = T.alloc_shared((BLOCK_M, BLOCK_K), dtype)
            b_tile = T.alloc_shared((BLOCK_K, BLOCK_N), dtype)
            c_tile = T.alloc_shared((BLOCK_M, BLOCK_N), dtype)  # TileLang reuses the pipeline's memory for it
            acc = T.alloc_fragment((BLOCK_M, BLOCK_N), "float32")
            if RASTER != "none":
                T.use_swizzle(PANEL, order=RASTER)
            if CTAS_PER_SM > 1:
                # registers for several CTAs an SM: no setmaxnreg shift between the warp groups
                T.annotate_min_blocks_per_sm(CTAS_PER_SM)
                T.no_set_max_nreg()
            T.clear(acc)
            for k in T.Pipelined(k_steps, num_stages=STAGES):
                T.copy(A[by * BLOCK_M, k * BLOCK_K], a_tile)
                T.copy(B[k * BLOCK_K, bx * BLOCK_N], b_tile)
                T.gemm(a_tile, b_tile, acc, policy=policy)
            T.copy(acc, c_tile)
            T.copy(c_tile, C[by * BLOCK_M, bx * BLOCK_N])

    return hopper_gemm


def _split_partial(M: int, N: int, K: int, dtype: str, BLOCK_N: int, BLOCK_K: int, STAGES: int, SPLIT: int,
                   K_STEPS_PER_SPLIT: int, CTAS_PER_SM: int):
    """Slice z of K (K_STEPS_PER_SPLIT whole K blocks from block z * K_STEPS_PER_SPLIT, fewer in the last slice) of
    one 64 x BLOCK_N tile, in float32, into plane z of W."""
    BLOCK_M = 64  # one warp group's wgmma covers 64 rows; rows past M read zeros and are not stored
    k_steps = (K + BLOCK_K - 1) // BLOCK_K

    @T.prim_func
    def split_k_partial(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype),
                        W: T.Tensor((SPLIT, M, N), "float32")):
        with T.Kernel(T.ceildiv(N, BLOCK_N), T.ceildiv(M, BLOCK_M), SPLIT, threads=128) as (bx, by, z):
            a_tile = T.alloc_shared((BLOCK_M, BLOCK_K), dtype)
            b_tile = T.alloc_shared((BLOCK_K, BLOCK_N), dtype)
            acc = T.alloc_fragment((BLOCK_M, BLOCK_N), "float32")
            if CTAS_PER_SM > 1:
                T.annotate_min_blocks_per_sm(CTAS_PER_SM)
                T.no_set_max_nreg()
            first = z * K_STEPS_PER_SPLIT
            T.clear(acc)
            for k in T.Pipelined(T.min(K_STEPS_PER_SPLIT, k_steps - first), num_stages=STAGES):
                T.copy(A[by * BLOCK_M, (first + k) * BLOCK_K], a_tile)
                T.copy(B[(first + k) * BLOCK_K, bx * BLOCK_N], b_tile)
                T.gemm(a_tile, b_tile, acc)
            T.copy(acc, W[z, by * BLOCK_M:(by + 1) * BLOCK_M, bx * BLOCK_N:(bx + 1) * BLOCK_N])

    return split_k_partial


def _split_sum(M: int, N: int, dtype: str, SPLIT: int):
    """C = the sum of W's SPLIT planes, added in order 0, 1, ... in float32 and rounded once."""
    BLOCK = 256

    @T.prim_func
    def split_k_sum(W: T.Tensor((SPLIT, M, N), "float32"), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, BLOCK), M, threads=128) as (bx, row):
            total = T.alloc_fragment((BLOCK,), "float32")
            T.clear(total)
            for z in T.serial(SPLIT):
                for j in T.Parallel(BLOCK):
                    total[j] += T.if_then_else(bx * BLOCK + j < N, W[z, row, bx * BLOCK + j], 0.0)
            for j in T.Parallel(BLOCK):
                if bx * BLOCK + j < N:
                    C[row, bx * BLOCK + j] = T.cast(total[j], dtype)

    return split_k_sum


def _compiled(builder, *args, warp_specialize: bool = True):
    """The kernel builder(*args) makes, compiled once. warp_specialize=False turns off TileLang's producer warp group
    (its pass config), for shapes where only one of A and B can go through TMA: TileLang then gives the producer
    as many threads as the consumers for its plain loads, and 256 of each leave the accumulator too few registers."""
    key = (builder.__name__, *args, warp_specialize)
    if key not in _cache:
        configs = {} if warp_specialize else {tilelang.PassConfigKey.TL_DISABLE_WARP_SPECIALIZED: True}
        _cache[key] = tilelang.compile(builder(*args), pass_configs=configs)
    return _cache[key]


def _stages(wanted: int, block_m: int, block_n: int, block_k: int, ctas_per_sm: int = 1, epilogue: int = 0) -> int:
    """STAGES capped so that the pipelined A and B tiles of ctas_per_sm CTAs fit in an SM's shared memory, beside
    `epilogue` bytes of C tile where TileLang keeps it apart (the persistent loop: the stages are live across it)."""
    return max(1, min(wanted, (SMEM_BUDGET // ctas_per_sm - epilogue) // ((block_m + block_n) * block_k * 2)))


def _sm_count(device) -> int:
    if device.type == "cuda":
        return torch.cuda.get_device_properties(device).multi_processor_count
    return 132  # no card here (the compile-only check): an H100's count


def custom_kernel(*inputs):
    if len(inputs) == 1 and isinstance(inputs[0], (tuple, list)):
        inputs = tuple(inputs[0])
    a, b = inputs[0].contiguous(), inputs[1].contiguous()
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)
    if M == 0 or N == 0:
        return c
    dtype = str(a.dtype).removeprefix("torch.")  # "bfloat16"
    # TMA needs 16-byte aligned rows: TileLang loads A and B with it (and warp-specializes) only where both allow it
    tma = (K * a.element_size()) % 16 == 0 and (N * b.element_size()) % 16 == 0
    if M <= KNOBS["SMALL_M"]:
        bn, bk = KNOBS["SMALL_BLOCK_N"], KNOBS["SMALL_BLOCK_K"]
        k_steps = (K + bk - 1) // bk
        tiles = ((M + 63) // 64) * ((N + bn - 1) // bn)
        split = max(1, min(KNOBS["SPLIT_K"], k_steps, KNOBS["SPLIT_CTAS"] // tiles))
        per_split = max(1, (k_steps + split - 1) // split)
        split = max(1, (k_steps + per_split - 1) // per_split)  # no slice left without a K block
        stages = _stages(KNOBS["SMALL_STAGES"], 64, bn, bk, KNOBS["SMALL_CTAS_PER_SM"])
        if split == 1:  # enough tiles already: 64-row tiles straight into C
            _compiled(_tiled, M, N, K, dtype, 64, bn, bk, stages, 128, "full_row", KNOBS["RASTER"], KNOBS["PANEL"],
                      False, 0, KNOBS["SMALL_CTAS_PER_SM"], warp_specialize=tma)(a, b, c)
            return c
        w = torch.empty((split, M, N), dtype=torch.float32, device=a.device)
        _compiled(_split_partial, M, N, K, dtype, bn, bk, stages, split, per_split, KNOBS["SMALL_CTAS_PER_SM"],
                  warp_specialize=tma)(a, b, w)
        _compiled(_split_sum, M, N, dtype, split)(w, c)
        return c
    bm, bn, bk = KNOBS["BLOCK_M"], KNOBS["BLOCK_N"], KNOBS["BLOCK_K"]
    threads = min(KNOBS["THREADS"], bm // 64 * 128)  # a consumer warp group per 64 rows at most
    bn = min(bn, 128 * threads // bm)  # at most 128 float32 accumulators a thread: more would spill
    persistent = bool(KNOBS["PERSISTENT"])
    stages = _stages(KNOBS["STAGES"], bm, bn, bk, epilogue=bm * bn * c.element_size() if persistent else 0)
    _compiled(_tiled, M, N, K, dtype, bm, bn, bk, stages, threads, KNOBS["POLICY"], KNOBS["RASTER"], KNOBS["PANEL"],
              persistent, _sm_count(a.device), 1, warp_specialize=tma)(a, b, c)
    return c
