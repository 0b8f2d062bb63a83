// Device primitives behind the tile language's grouped-matmul macros (templates/tile.m4,
// "grouped matmul"): the persistent tile scheduler that walks the groups on the device, tile
// copies into shared memory for both B layouts, and the tensor-core products of a C tile on
// mma.sync (sm_80) and on warpgroup products (wgmma, sm_90a). kernels/grouped_matmul.tile
// names only these tile operations.
//
// A program owns one BM x BN tile of C at a time. Its accumulator is spread over the warps in
// the mma fragment layout (tile_matrix.cuh): warp w holds MF 16-row fragments by NT 8-column
// tiles starting at (warp_row0(), warp_col0()).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#include "gemm_args.h"
#include "tile_matrix.cuh"

namespace tile {
namespace gemm {

// ------------------------------------------------------------------------------ layouts
// mma.sync: WARPS_M x WARPS_N warps, each a (BM / WARPS_M) x (BN / WARPS_N) warp tile; K
// steps of BK through STAGES shared buffers with rows padded by 16 bytes (the 8 rows of an
// ldmatrix land on distinct banks). B's buffer is [BN][BK] (B K-major) or [BK][BN] (N-major).
template <int BM_, int BN_, int BK_, int WARPS_M_, int WARPS_N_, int STAGES_> struct mma_layout {
    static constexpr int BM = BM_, BN = BN_, BK = BK_, STAGES = STAGES_;
    static constexpr int WARPS_M = WARPS_M_, WARPS_N = WARPS_N_, WARPS = WARPS_M * WARPS_N;
    static constexpr int THREADS = WARPS * 32, PROGRAM_THREADS = THREADS;
    static constexpr int AHEAD = STAGES - 1;       // k-tiles the copies run ahead
    static constexpr int WTM = BM / WARPS_M, WTN = BN / WARPS_N;
    static constexpr int MF = WTM / 16, NT = WTN / 8;
    static constexpr int A_PITCH = BK + 8, BK_PITCH = BK + 8, BN_PITCH = BN + 8;
    static constexpr int A_ELEMS = BM * A_PITCH, A_BYTES = A_ELEMS * 2;
    static constexpr int B_ELEMS = BN * BK_PITCH > BK * BN_PITCH ? BN * BK_PITCH : BK * BN_PITCH;
    static constexpr int STAGE_BYTES = (A_ELEMS + B_ELEMS) * 2;
    static constexpr int SMEM_BYTES = STAGES * STAGE_BYTES;
    static constexpr bool WGMMA = false;
    static constexpr bool HALF_TILES = false; // every warp holds rows of every tile
    __device__ static int warp_row0() { return (threadIdx.x / 32 / WARPS_N) * WTM; }
    __device__ static int warp_col0() { return (threadIdx.x / 32 % WARPS_N) * WTN; }
    static_assert(WTM % 16 == 0 && WTN % 16 == 0 && BK % 16 == 0, "whole fragments");
};

// Warp-specialized wgmma: warpgroup 0 produces (one thread issues the tensor-memory-accelerator
// copies of each k-tile, STAGES ahead, as consumers hand stages back through mbarriers);
// warpgroups 1 and 2 consume, 64 rows each of the 128 x BN tile. The epilogue of one tile
// overlaps the copies of the next.
template <int BM_, int BN_, int STAGES_, int SLOTS_ = 2> struct ws_layout {
    static constexpr int BM = BM_, BN = BN_, BK = 64, STAGES = STAGES_, SLOTS = SLOTS_;
    static constexpr int WARPS = 12, THREADS = 384, PROGRAM_THREADS = THREADS;
    static constexpr int CONSUMER_WARPS = 8;
    static constexpr int PRODUCER_REGS = 40, CONSUMER_REGS = 232; // 128 * 40 + 256 * 232 <= 64K
    static constexpr int WG_COLS = BN;                            // a consumer's columns
    static constexpr int MF = 1, NT = WG_COLS / 8;
    static constexpr int A_PITCH = 0, BK_PITCH = 0, BN_PITCH = 0; // swizzled
    static constexpr int A_BYTES = BM * BK * 2, B_BYTES = BN * BK * 2;
    static constexpr int STAGE_BYTES = A_BYTES + B_BYTES;
    // each consumer's output staging, written out in WG_COLS / 64 passes: two 64 x 64 slots by
    // turns, or one a pass (no pass then waits for a copy out of the same tile)
    static constexpr int SLOT_BYTES = 64 * 64 * 2;
    static constexpr int STAGING_BYTES = SLOTS * SLOT_BYTES;
    static constexpr int SMEM_BYTES = STAGES * STAGE_BYTES + 2 * STAGING_BYTES + 1024; // + alignment
    static constexpr bool WGMMA = true;
    // A tile of 64 rows or fewer (a half tile) may be split by columns: each consumer multiplies
    // the 64 rows by half the columns (wgmma N of 128), not 64 rows of the next group's data.
    static constexpr bool HALF_TILES = WG_COLS == 256;
    __device__ static int consumer_wg() { return threadIdx.x / 128 - 1; }
    __device__ static int warp_row0() { return (threadIdx.x / 32 - 4) * 16; }
    __device__ static int warp_col0() { return 0; }
    static_assert(SLOTS == 2 || SLOTS == WG_COLS / 64, "two slots by turns, or one a pass");
    static_assert(BM == 128 && STAGES >= 2 && WG_COLS % 128 == 0 && WG_COLS <= 256,
                  "64-row warpgroups, wgmma N of 128 or 256 (the epilogue's passes of 64 columns come in pairs)");
};

// ------------------------------------------------------------------------------ scheduler
// The C tile a program works on: group, its rows [row0, row_end) and first column; its number
// in the walk (tiles numbered group by group).
struct tile_pos {
    int32_t group;
    int64_t row0, row_end;
    int32_t col0;
    int64_t number;
};

// Tiles are numbered group by group; a program takes tiles blockIdx.x, + gridDim.x, ... (or,
// with a tile counter, the counter's: scheduler_take) and keeps a cursor over the groups (tile
// numbers only grow, so the walk is done once per program). Every thread of a walk computes the
// same cursor: no shared memory, no barrier.
struct scheduler {
    int64_t next;            // the tile this program takes next (with a tile counter, and in
                             // scheduler_handed: the one it took last)
    int32_t group;           // cursor: group, its rows and its tiles [base, base + tiles)
    int64_t start, end;
    int64_t base, tiles;
    int32_t n_tiles;         // BN-column tiles of C
    int32_t band;            // row tiles a band (scheduler_position)
    int64_t pending;         // scheduler_take with a tile counter: the tile taken next (lane 0)
};

template <typename L>
__device__ __forceinline__ scheduler scheduler_init(const tile_gemm_kernel_args &a) {
    scheduler s;
    s.next = s.pending = blockIdx.x;
    s.group = -1;
    s.start = s.end = 0;
    s.base = s.tiles = 0;
    s.n_tiles = (a.n + L::BN - 1) / L::BN;
    // The programs in flight cover a band's R row tiles by P / R column tiles; their A rows
    // (R BM) and B columns (P BN / R) are fewest at R = sqrt(P BN / BM) (perf-notes G7), as long
    // as the band's rows of A (kept in L2 while its columns go by) stay within 16 MiB, a third of
    // a Hopper GPU's L2.
    const float best = sqrtf((float)gridDim.x * L::BN / L::BM) + 0.5f;
    const int64_t fits = (16LL << 20) / ((int64_t)L::BM * (a.k > 0 ? a.k : 1) * 2);
    s.band = (int32_t)(best < (float)fits ? best : (float)fits);
    if (s.band < 1) s.band = 1;
    return s;
}

// Moves the cursor to the group holding tile s.next, 32 groups a step (a lane each): group ends
// are clamped into [previous end, total_m] (a running max), so any offsets are safe to read.
// False when the tiles are exhausted.
template <typename L>
__device__ __forceinline__ bool scheduler_seek(scheduler &s, const tile_gemm_kernel_args &a) {
    const unsigned all = 0xffffffffu;
    const int lane = lane_id();
    while (s.next >= s.base + s.tiles) {
        if (s.group + 1 >= a.groups) return false;
        s.base += s.tiles; // the window starts past the current group
        s.tiles = 0;
        const int32_t g = s.group + 1 + lane;
        int64_t end = s.end;
        if (g < a.groups) {
            const int64_t o = __ldg(a.offsets + g);
            end = o < 0 ? 0 : o > a.total_m ? a.total_m : o;
        }
#pragma unroll
        for (int d = 1; d < 32; d <<= 1) {
            const int64_t e = __shfl_up_sync(all, end, d);
            if (lane >= d && e > end) end = e;
        }
        if (s.end > end) end = s.end;
        int64_t start = __shfl_up_sync(all, end, 1);
        if (lane == 0) start = s.end;
        const int64_t tiles = g < a.groups ? (end - start + L::BM - 1) / L::BM * s.n_tiles : 0;
        int64_t upto = tiles; // inclusive prefix sum of the tiles
#pragma unroll
        for (int d = 1; d < 32; d <<= 1) {
            const int64_t u = __shfl_up_sync(all, upto, d);
            if (lane >= d) upto += u;
        }
        const unsigned hit = __ballot_sync(all, g < a.groups && s.next < s.base + upto);
        // the group holding the tile, or else the window's last group: the cursor moves past it
        const int last = hit ? __ffs(hit) - 1 : (a.groups - 2 - s.group < 31 ? a.groups - 2 - s.group : 31);
        s.base += __shfl_sync(all, hit ? upto - tiles : upto, last);
        s.group = __shfl_sync(all, g, last);
        s.start = __shfl_sync(all, start, last);
        s.end = __shfl_sync(all, end, last);
        s.tiles = hit ? __shfl_sync(all, tiles, last) : 0;
    }
    return true;
}

// The walk's divisions in Int (a group's tiles fit 32 bits but for extreme shapes, where
// 64-bit division's long routine runs instead: some 1% of the large shape's time was spent
// here, perf-notes G19).
template <typename L, typename Int>
__device__ __forceinline__ void scheduler_position_in(const scheduler &s, tile_pos &pos) {
    const Int local = (Int)(s.next - s.base), band_rows = (Int)s.band, n_tiles = (Int)s.n_tiles;
    const Int m_tiles = (Int)s.tiles / n_tiles;
    const Int band = local / (band_rows * n_tiles);
    const Int rows = m_tiles - band * band_rows < band_rows ? m_tiles - band * band_rows : band_rows;
    const Int r = local - band * band_rows * n_tiles;
    const Int col_tile = r / rows;
    pos.group = s.group;
    pos.row0 = s.start + (int64_t)(band * band_rows + (r - col_tile * rows)) * L::BM;
    pos.row_end = s.end;
    pos.col0 = (int32_t)col_tile * L::BN;
    pos.number = s.next;
}
// Takes the next tile: false when there is none. Within a group, tiles run in bands of
// s.band row tiles, column tile by column tile, so the programs running at once share rows of
// A and columns of B in L2.
template <typename L>
__device__ __forceinline__ void scheduler_position(const scheduler &s, tile_pos &pos) {
    if (s.tiles <= 0x7fffffff) scheduler_position_in<L, uint32_t>(s, pos);
    else scheduler_position_in<L, int64_t>(s, pos);
}
template <typename L>
__device__ __forceinline__ bool scheduler_next(scheduler &s, const tile_gemm_kernel_args &a,
                                               tile_pos &pos) {
    if (!scheduler_seek<L>(s, a)) return false;
    scheduler_position<L>(s, pos);
    s.next += gridDim.x;
    return true;
}

// The producer warp's walk (warp-specialized variants). Without a tile counter, scheduler_next's.
// With one, each program's first tile is blockIdx.x and every later one the counter's next
// (past the grid's first tiles): a program whose tiles went fast takes more, so no program
// waits on a fixed share at the end (perf-notes G11), and the tiles in flight stay a window of
// consecutive numbers, which the bands' sharing of L2 wants. The counter is read a tile ahead
// (lane 0 holds it: a program claims its next tile as it starts this one's copies), so its
// latency hides behind them. Numbers only grow; one that does not (a workspace not zeroed, or
// shared by calls running at once) ends the walk, so such misuse skips tiles (docs/api.md) but
// never hangs or writes outside C.
template <typename L>
__device__ __forceinline__ bool scheduler_take(scheduler &s, const tile_gemm_kernel_args &a,
                                               tile_pos &pos) {
    if (!a.tile_counter) return scheduler_next<L>(s, a, pos);
    const int64_t number = __shfl_sync(0xffffffffu, s.pending, 0);
    if (number < s.next) return false; // s.next: the last tile taken (first: blockIdx.x)
    s.next = number;
    if (!scheduler_seek<L>(s, a)) return false;
    scheduler_position<L>(s, pos);
    if (lane_id() == 0) s.pending = counter_take(a.tile_counter);
    return true;
}

// Whether the tile at pos is a half tile (L::HALF_TILES, a.half_tiles; its rows lie in the first
// 64): the consumers then split its columns instead of its rows. It takes less time than a full
// tile, so its program drifts from the others; where that costs the L2 sharing of B the host
// does not ask for half tiles (wants_half_tiles, src/grouped_matmul.c; perf-notes G10, G11).
template <typename L>
__device__ __forceinline__ bool is_half_tile(const tile_gemm_kernel_args &a, const tile_pos &pos) {
    return L::HALF_TILES && a.half_tiles && pos.row_end - pos.row0 <= L::BM / 2;
}

// ------------------------------------------------------------------------------ tiles
template <typename L, typename T> struct smem_tiles {
    unsigned char *base; // STAGES stages of [A tile | B tile]
    // wgmma consumers only (placeholders in mma layouts, meaningless in the producer
    // warpgroup): base as a shared-memory address, and the byte offset of this warpgroup's 64
    // rows in an A stage (rows of 128 bytes; a k-tile's descriptors then cost adds of
    // warp-uniform values, kept in uniform registers: perf-notes G27)
    uint32_t shared, wg_a_offset;
    __device__ T *a(int stage) const { return reinterpret_cast<T *>(base + stage * L::STAGE_BYTES); }
    __device__ unsigned char *staging(int consumer) const {
        return base + L::STAGES * L::STAGE_BYTES + consumer * L::STAGING_BYTES;
    }
    __device__ T *b(int stage) const {
        return reinterpret_cast<T *>(base + stage * L::STAGE_BYTES +
                                     L::A_BYTES);
    }
};
template <typename L, typename T> __device__ __forceinline__ smem_tiles<L, T> shared_tiles() {
    extern __shared__ __align__(16) unsigned char tile_dynamic_smem[];
    if constexpr (!L::WGMMA) {
        return smem_tiles<L, T>{tile_dynamic_smem, 0, 0};
    } else {
        // Swizzle atoms on 1024-byte boundaries. Aligned as a shared-memory address taken from
        // the array itself (the program's cluster rank and a fixed offset), which the k-loop,
        // short of registers, rebuilds in a few 32-bit instructions, not from a 64-bit generic
        // pointer (perf-notes G27).
        const uint32_t at = (uint32_t)__cvta_generic_to_shared(tile_dynamic_smem);
        const uint32_t shared = (at + 1023) & ~1023u;
        // the warpgroup's number broadcast from lane 0, so the compiler knows it warp-uniform
        const uint32_t wg = (uint32_t)__shfl_sync(0xffffffffu, L::consumer_wg(), 0);
        return smem_tiles<L, T>{tile_dynamic_smem + (shared - at), shared, wg * 64 * 128};
    }
}

// Starts copying a ROWS x (CHUNKS * 8) tile of a row-major matrix (row stride ld) whose valid
// part is rows < rows_valid, columns < cols_valid (counted from the tile's origin `src`), into
// shared memory: padded rows of PITCH elements, or (PITCH == 0) the swizzled layout. Outside
// the valid part it writes zeros. WHOLE_UNTESTED: a whole tile skips the test a chunk.
template <int ROWS, int CHUNKS, int PITCH, int THREADS, bool WHOLE_UNTESTED, typename T>
__device__ __forceinline__ void copy_tile(T *dst, const T *src, int64_t ld, int64_t rows_valid,
                                          int64_t cols_valid) {
    unsigned char *d = reinterpret_cast<unsigned char *>(dst);
    const auto at = [](int r, int c) -> uint32_t {
        return PITCH ? padded<PITCH, T>(r, c) : swizzled(ROWS, r, c);
    };
    if (WHOLE_UNTESTED && rows_valid >= ROWS && cols_valid >= CHUNKS * 8) {
        for_thread_chunks<THREADS, ROWS, CHUNKS>(
            [&](int r, int c) { copy16(d + at(r, c), src + r * ld + c * 8, true); });
        return;
    }
    for_thread_chunks<THREADS, ROWS, CHUNKS>([&](int r, int c) {
        const int64_t left = cols_valid - c * 8;
        const int bytes = r >= rows_valid || left <= 0 ? 0 : left >= 8 ? 16 : (int)left * 2;
        const T *from = bytes ? src + r * ld + c * 8 : src;
        copy16_partial(d + at(r, c), from, bytes);
    });
}

// Starts the copies of k-tile kt of the tile at pos (A rows and B columns past the matrices,
// and k past a.k, become zeros) into stage kt % STAGES.
template <typename L, typename T>
__device__ __forceinline__ void copy_k_tile(const smem_tiles<L, T> &t, const tile_gemm_kernel_args &a,
                                            const tile_pos &pos, int32_t kt) {
    const int stage = kt % L::STAGES;
    const int64_t k0 = (int64_t)kt * L::BK;
    // Whole tiles untested on 128-row tiles only: +6-11% there; the 64-row ones, left with
    // fewer registers and more programs an SM by it, ran 1-11% slower (perf-notes G24, G24b).
    constexpr bool untested = L::BM >= 128;
    copy_tile<L::BM, L::BK / 8, L::A_PITCH, L::THREADS, untested>(
        t.a(stage), (const T *)a.a + pos.row0 * a.lda + k0, a.lda, pos.row_end - pos.row0, a.k - k0);
    const T *b = (const T *)a.b + pos.group * a.b_group;
    if (a.b_kmajor)
        copy_tile<L::BN, L::BK / 8, L::BK_PITCH, L::THREADS, untested>(
            t.b(stage), b + pos.col0 * a.b_ld + k0, a.b_ld, a.n - pos.col0, a.k - k0);
    else
        copy_tile<L::BK, L::BN / 8, L::BN_PITCH, L::THREADS, untested>(
            t.b(stage), b + k0 * a.b_ld + pos.col0, a.b_ld, a.k - k0, a.n - pos.col0);
}

// Waits until k-tile kt's copies landed (all but the AHEAD - 1 latest groups) and every warp is
// done with the stage the next copies overwrite.
template <typename L> __device__ __forceinline__ void copy_wait() {
    asm volatile("cp.async.wait_group %0;" ::"n"(L::AHEAD - 1) : "memory");
    __syncthreads();
}

// ------------------------------------------------------------------------------ products
template <typename L> struct accumulator {
    float d[L::MF][L::NT][4];
};
// A tile's accumulator at its start: zero (mma.sync); on wgmma nothing, as a tile's first
// product writes it (scale-d 0, consume_k_tiles), which saves a tile 64 zeroing instructions.
// (That product's asm still names the registers as read-write; the hardware ignores their
// values, so what they held, a program's first tile included, never reaches C.)
template <typename L> __device__ __forceinline__ void accumulator_zero(accumulator<L> &c) {
    if constexpr (!L::WGMMA) {
#pragma unroll
        for (int f = 0; f < L::MF; f++)
#pragma unroll
            for (int j = 0; j < L::NT; j++)
#pragma unroll
                for (int e = 0; e < 4; e++) c.d[f][j][e] = 0.0f;
    } else {
        (void)c;
    }
}

// mma.sync: acc += A_kt B_kt from stage kt % STAGES, every fragment of B read once per warp
// feeding its MF row fragments.
template <typename L, typename T, bool B_KMAJOR>
__device__ __forceinline__ void mma_k_tile(accumulator<L> &c, const smem_tiles<L, T> &t, int32_t kt) {
    const int stage = kt % L::STAGES, l = lane_id();
    const T *as = t.a(stage) + L::warp_row0() * L::A_PITCH;
    const T *bs = t.b(stage);
#pragma unroll
    for (int kk = 0; kk < L::BK / 16; kk++) {
        uint32_t af[L::MF][4];
#pragma unroll
        for (int f = 0; f < L::MF; f++)
            ldmatrix_x4(af[f], as + (f * 16 + (l & 15)) * L::A_PITCH + kk * 16 + (l >> 4) * 8);
#pragma unroll
        for (int jp = 0; jp < L::NT / 2; jp++) {
            const int n = L::warp_col0() + jp * 16;
            uint32_t b[4];
            if (B_KMAJOR) // [BN][BK]: rows are columns of B
                ldmatrix_x4(b, bs + (n + (l & 7) + (l >> 4) * 8) * L::BK_PITCH + kk * 16 + ((l >> 3) & 1) * 8);
            else          // [BK][BN]: transposed on the way to registers
                ldmatrix_x4_trans(b, bs + (kk * 16 + (l & 7) + ((l >> 3) & 1) * 8) * L::BN_PITCH + n + (l >> 4) * 8);
#pragma unroll
            for (int f = 0; f < L::MF; f++) {
                mma_type<T>::mma(c.d[f][2 * jp], af[f], b[0], b[1]);
                mma_type<T>::mma(c.d[f][2 * jp + 1], af[f], b[2], b[3]);
            }
        }
    }
}

// wgmma: issues acc += A_kt B_kt for the warpgroup's 64 rows as one committed group (B K-major
// or N-major through the descriptor's transpose bit), from stage `stage`; in a half tile (HALF),
// for the tile's 64 rows and the warpgroup's half of the columns, into acc's first half.
template <typename L, typename T, bool B_KMAJOR, bool HALF>
__device__ __forceinline__ void wg_k_tile(accumulator<L> &c, const smem_tiles<L, T> &t, int stage,
                                          int accumulate) {
#if TILE_HAS_WGMMA
    constexpr int N = HALF ? L::WG_COLS / 2 : L::WG_COLS;
    const uint32_t as = t.shared + stage * L::STAGE_BYTES + (HALF ? 0 : t.wg_a_offset);
    // a half's first column, N, starts N * 128 bytes into B's stage either way: K-major, rows
    // of 64 k (128 bytes a column); N-major, 64-column blocks of 64 k-rows (8 KB a block); the
    // warpgroup's number times that is its A offset times N / 64 (one register fewer held)
    const uint32_t bs = t.shared + stage * L::STAGE_BYTES + L::A_BYTES + (HALF ? t.wg_a_offset * (N / 64) : 0);
    const uint64_t ad = wg_desc_shared(as, 16, 1024);
    const uint64_t bd = B_KMAJOR ? wg_desc_shared(bs, 16, 1024) : wg_desc_shared(bs, L::BK * 128, 1024);
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
    for (int kk = 0; kk < L::BK / 16; kk++) {
        const uint64_t da = wg_desc_at(ad, kk * 32);
        const int scale_d = kk == 0 ? accumulate : 1; // 0: D = A B, the tile's first product
        if (B_KMAJOR) // [BN rows][64 k], like A
            wgmma_op<T, N>::template ss<0>(&c.d[0][0][0], da, wg_desc_at(bd, kk * 32), scale_d);
        else          // [64 k rows][BN] in 64-column blocks of 64 rows each
            wgmma_op<T, N>::template ss<1>(&c.d[0][0][0], da, wg_desc_at(bd, kk * 16 * 128), scale_d);
    }
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
#else
    (void)c, (void)t, (void)stage, (void)accumulate;
    __trap(); // wgmma variants are registered for sm_90 only
#endif
}

template <typename L, typename T>
__device__ __forceinline__ void product_k_tile(accumulator<L> &c, const smem_tiles<L, T> &t,
                                               int32_t kt, bool b_kmajor) {
    if (b_kmajor) mma_k_tile<L, T, true>(c, t, kt);
    else mma_k_tile<L, T, false>(c, t, kt);
}

// Waits for the products still in flight (wgmma): the accumulator is final.
template <typename L> __device__ __forceinline__ void products_finish(accumulator<L> &c) {
    wg_wait_groups<0>();
#pragma unroll
    for (int f = 0; f < L::MF; f++) wg_fence_operands(c.d[f]);
}

// ------------------------------------------------------------------------------ pipeline
// The warp-specialized variants' stage ring (tile::stage_ring): the producer's one warp fills
// stages by tensor map, every consumer warp hands each stage back. The producer alone decides
// which tile comes next (scheduler_take), so it writes the tile's number beside the stage of
// its first k-tile, before that stage's full barrier publishes both; -1 there ends the walk.
template <typename L> struct pipeline : stage_ring<L::STAGES> {
    int64_t *tile_of; // [STAGES]: the tile whose first k-tile the stage holds
};
// Collective, once per program: the barriers, initialized and visible to every thread.
template <typename L> __device__ __forceinline__ pipeline<L> pipeline_start() {
    __shared__ int64_t tile_of[L::STAGES];
    pipeline<L> p;
    static_cast<stage_ring<L::STAGES> &>(p) = stage_ring_start<L::STAGES, L::CONSUMER_WARPS>();
    p.tile_of = tile_of;
    return p;
}
template <typename L> __device__ __forceinline__ bool is_producer() { return threadIdx.x < 128; }

template <typename L> __device__ __forceinline__ bool is_producer_warp() { return threadIdx.x < 32; }

// Producer (one warp, whose lane 0 issues): waits for the next stage to be free, then copies
// k-tile kt of the tile at pos into it by tensor map (zeros outside the tensors). A half tile
// copies only the 64 rows its consumers read, in boxes of 8 rows: those holding its rows from A,
// the others from past A's end, so its products on rows past the group multiply zeros (the power
// a product costs follows its operands' bits; cuBLAS's padding is zeros too: perf-notes G16). A
// tile of more rows copies one box, rows of the next group included (there 16 boxes a k-tile
// cost more than the zeros save, G16).
template <typename L, typename T>
__device__ __forceinline__ void produce_k_tile(pipeline<L> &p, const smem_tiles<L, T> &t,
                                               const tile_gemm_kernel_args &a, const tile_pos &pos,
                                               int32_t kt) {
    mbarrier_wait(&p.empty[p.stage], p.phase ^ 1);
    if (lane_id() != 0) {
        p.advance();
        return;
    }
    uint64_t *full = &p.full[p.stage];
    if (kt == 0) p.tile_of[p.stage] = pos.number; // published by the arrival below
    const int32_t k0 = kt * L::BK;
    if (!is_half_tile<L>(a, pos)) {
        mbarrier_expect_bytes(full, L::STAGE_BYTES);
        tma_load_2d(t.a(p.stage), &a.a_map, k0, (int32_t)pos.row0, full);
    } else {
        const int64_t rows = pos.row_end - pos.row0;
        mbarrier_expect_bytes(full, L::STAGE_BYTES - L::A_BYTES / 2); // A's other 64 rows stay out
        unsigned char *as = reinterpret_cast<unsigned char *>(t.a(p.stage));
        for (int r = 0; r < L::BM / 2; r += 8) // past A's end (row total_m on) a box is zeros
            tma_load_2d(as + r * L::BK * 2, &a.a_rows_map, k0,
                        (int32_t)(r < rows ? pos.row0 + r : a.total_m), full);
    }
    if (a.b_kmajor) {
        tma_load_3d(t.b(p.stage), &a.b_map, k0, pos.col0, pos.group, full);
    } else {
#pragma unroll
        for (int j = 0; j < L::BN / 64; j++) // 64-column blocks of 64 k-rows
            tma_load_3d(reinterpret_cast<unsigned char *>(t.b(p.stage)) + j * 64 * 128, &a.b_map,
                        pos.col0 + 64 * j, k0, pos.group, full);
    }
    p.advance();
}

// Producer warp, after its last tile: the consumers' walk ends at the next stage (a tile number
// of -1, published by a plain arrival); with a tile counter, the last program out zeroes it for
// the next call (each program's last read of it completed before its count of programs done).
template <typename L>
__device__ __forceinline__ void produce_end(pipeline<L> &p, const tile_gemm_kernel_args &a) {
    if (lane_id() != 0) return;
    mbarrier_wait(&p.empty[p.stage], p.phase ^ 1);
    p.tile_of[p.stage] = -1;
    mbarrier_arrive(&p.full[p.stage]);
    if (a.tile_counter) counter_finish(a.tile_counter);
}

// Consumers' walk: the tile the producer put next in the ring (its number beside the stage its
// first k-tile fills), found by the same cursor as the producer's; false at the end.
template <typename L>
__device__ __forceinline__ bool scheduler_handed(scheduler &s, const tile_gemm_kernel_args &a,
                                                 const pipeline<L> &p, tile_pos &pos) {
    mbarrier_wait_at(p.full_of(p.stage), p.phase); // consume_k_tiles's first wait then returns at once
    // Lane 0 alone reads the number: its arrival on the stage's empty barrier (a release of its
    // own accesses only) is what orders the read before the producer's next write there.
    int64_t number = 0;
    if (lane_id() == 0) number = p.tile_of[p.stage];
    number = __shfl_sync(0xffffffffu, number, 0);
    if (number < 0) return false;
    s.next = number;
    scheduler_seek<L>(s, a);
    scheduler_position<L>(s, pos);
    return true;
}

// Consumers: one k-tile after a tile's first: wait for its stage, issue acc += A B from it,
// wait for the product before and hand that one's stage back (the one before in ring order).
template <typename L, typename T, bool B_KMAJOR, bool HALF>
__device__ __forceinline__ void consume_k_step(const pipeline<L> &p, accumulator<L> &c,
                                               const smem_tiles<L, T> &t, int stage,
                                               uint32_t phase, bool leader) {
    mbarrier_wait_at(p.full_of(stage), phase);
    // the stages' address made anew a k-tile: else the compiler holds every stage's
    // descriptors across the loop, and short of registers ptxas serializes the products
    smem_tiles<L, T> tk = t;
    asm volatile("mov.u32 %0, %0;" : "+r"(tk.shared));
    wg_k_tile<L, T, B_KMAJOR, HALF>(c, tk, stage, 1);
    wg_wait_groups<1>();
    if (leader) mbarrier_arrive_at(p.empty_before(stage));
}
// Consumers: a tile's whole k-loop (k_tiles >= 1), compiled for one B layout and tile kind,
// the first k-tile peeled (its product writes acc). A full tile's k-tiles from stage 0 on go a
// ring at a time, each stage a constant, so a k-tile is its wait, four products and the
// hand-back with no stage arithmetic between (34 instructions a warp a k-tile, 69 as one loop
// over runtime choices; perf-notes G31). Half tiles keep one loop: unrolled they lost 0.7-1.8%
// on (128, 32768, 7168, 2048), where one loop gained 0.6%.
template <typename L, typename T, bool B_KMAJOR, bool HALF>
__device__ __forceinline__ void consume_k_tiles_of(pipeline<L> &p, accumulator<L> &c,
                                                   const smem_tiles<L, T> &t, int32_t k_tiles) {
    const bool leader = lane_id() == 0;
    // broadcast from lane 0, so the compiler knows them warp-uniform (uniform registers)
    int stage = __shfl_sync(0xffffffffu, p.stage, 0);
    uint32_t phase = __shfl_sync(0xffffffffu, p.phase, 0);
    mbarrier_wait_at(p.full_of(stage), phase);
    wg_k_tile<L, T, B_KMAJOR, HALF>(c, t, stage, 0); // writes acc
    if constexpr (HALF) {
        for (int32_t kt = 1; kt < k_tiles; kt++) {
            advance_slot<L::STAGES>(stage, phase, 1);
            consume_k_step<L, T, B_KMAJOR, HALF>(p, c, t, stage, phase, leader);
        }
        advance_slot<L::STAGES>(stage, phase, 1);
    } else {
        int32_t kt = 1;
        for (;;) { // to stage 0, or the end
            advance_slot<L::STAGES>(stage, phase, 1);
            if (kt == k_tiles || stage == 0) break;
            consume_k_step<L, T, B_KMAJOR, HALF>(p, c, t, stage, phase, leader);
            kt++;
        }
        for (; kt + L::STAGES <= k_tiles; kt += L::STAGES) {
#pragma unroll
            for (int s = 0; s < L::STAGES; s++) consume_k_step<L, T, B_KMAJOR, HALF>(p, c, t, s, phase, leader);
            phase ^= 1;
        }
        for (; kt < k_tiles; kt++) { // stage 0 on
            consume_k_step<L, T, B_KMAJOR, HALF>(p, c, t, stage, phase, leader);
            advance_slot<L::STAGES>(stage, phase, 1);
        }
    }
    p.stage = stage;
    p.phase = phase;
}
template <typename L, typename T>
__device__ __forceinline__ void consume_k_tiles(pipeline<L> &p, accumulator<L> &c,
                                                const smem_tiles<L, T> &t, int32_t k_tiles,
                                                bool b_kmajor, bool half) {
    if (half) {
        if (b_kmajor) consume_k_tiles_of<L, T, true, true>(p, c, t, k_tiles);
        else consume_k_tiles_of<L, T, false, true>(p, c, t, k_tiles);
    } else {
        if (b_kmajor) consume_k_tiles_of<L, T, true, false>(p, c, t, k_tiles);
        else consume_k_tiles_of<L, T, false, false>(p, c, t, k_tiles);
    }
}
// Consumers, after a tile's k-loop: the accumulator is final; the last k-tile's stage (the
// one before the ring's next) goes back.
template <typename L>
__device__ __forceinline__ void consume_finish(const pipeline<L> &p, accumulator<L> &c) {
    products_finish<L>(c);
    if (lane_id() == 0) mbarrier_arrive_at(p.empty_before(p.stage));
}

// C[pos] = acc (+ bias of the group), rounded to T, straight from the fragments: two columns
// a store, rows past the group and columns past n skipped.
template <typename L, typename T>
__device__ __forceinline__ void store_tile_direct(const tile_gemm_kernel_args &a, const tile_pos &pos,
                                                  const accumulator<L> &c) {
    const int l = lane_id(), g = l >> 2, q = l & 3;
    const T *bias = a.bias ? (const T *)a.bias + pos.group * a.bias_group : nullptr;
    T *out = (T *)a.c;
#pragma unroll
    for (int j = 0; j < L::NT; j++) {
        const int32_t col = pos.col0 + L::warp_col0() + j * 8 + 2 * q;
        if (col >= a.n) continue;
        const bool pair = col + 1 < a.n;
        float b0 = 0.0f, b1 = 0.0f;
        if (bias) {
            b0 = to_float(bias[col]);
            if (pair) b1 = to_float(bias[col + 1]);
        }
#pragma unroll
        for (int f = 0; f < L::MF; f++)
#pragma unroll
            for (int r = 0; r < 2; r++) {
                const int64_t row = pos.row0 + L::warp_row0() + f * 16 + g + r * 8;
                if (row >= pos.row_end) continue;
                T *p = out + row * a.ldc + col;
                const float v0 = c.d[f][j][2 * r] + b0, v1 = c.d[f][j][2 * r + 1] + b1;
                if (pair) *reinterpret_cast<uint32_t *>(p) = mma_type<T>::pack(v0, v1);
                else *p = from_float<T>(v0);
            }
    }
}

// Byte offset of 16-byte chunk `chunk` (of 8) of row `row` in a 64 x 64 staging slot of
// 128-byte rows: chunk c of row r at c ^ (r % 8), the tensor memory accelerator's 128-byte
// swizzle (slots are 1024-byte aligned). Neither the stmatrix writes (8 rows of one chunk) nor
// the row reads conflict on banks.
__device__ __forceinline__ uint32_t staging_offset(int row, int chunk) {
    return (uint32_t)(row * 128 + ((chunk ^ (row & 7)) << 4));
}

// The same through shared memory (warp-specialized variants): each consumer warpgroup writes its
// 64-row fragments, 64 columns a pass, into its staging slots (stmatrix, 16 x 16 values an
// instruction). Where the warpgroup's rows all lie in the group and C has a tensor map, one
// thread sends each slot out by it; else its threads copy whole 16-byte row chunks out (rows
// past the group and columns past n skipped). With two slots the passes take them by turns,
// each waiting for the copy out two passes back (perf-notes G6, G8); with a slot a pass (`tmao`'s
// four), the warpgroup waits once for the last tile's copies, writes every pass and sends them
// together (G19). Only the warpgroup's own 128 threads synchronize (named barrier 1 + consumer). The
// bias comes in three twins (G19: the epilogue's instructions are time the tensor pipe idles):
// none, read without bounds tests where the warpgroup's columns all lie within n, and tested.
enum class bias_mode { none, inside, edge };
template <typename L, typename T, bias_mode BIAS>
__device__ __forceinline__ void store_tile_staged_as(const tile_gemm_kernel_args &a, const tile_pos &pos,
                                                     const accumulator<L> &c, const smem_tiles<L, T> &t) {
    constexpr int PASSES = L::WG_COLS / 64;
    // (ws_layout allows two slots or one a pass; two stay by turns where there are two passes
    // too: sent together, the 128 x 128 tiles measured no faster, perf-notes G19)
    constexpr bool SLOT_A_PASS = L::SLOTS != 2;
    const int l = lane_id(), q = l & 3, wg = L::consumer_wg();
    const int tid = threadIdx.x % 128, wrow = (threadIdx.x / 32 % 4) * 16;
    const T *bias = BIAS != bias_mode::none ? (const T *)a.bias + pos.group * a.bias_group : nullptr;
    // a half tile: the tile's 64 rows by the warpgroup's half of the columns, in WG_COLS / 128 passes
    const bool half = is_half_tile<L>(a, pos);
    const int64_t row0 = pos.row0 + (half ? 0 : wg * 64);
    const int32_t cols0 = pos.col0 + (half ? wg * (L::WG_COLS / 2) : 0);
    const bool by_map = a.c_by_map && row0 + 64 <= pos.row_end;
    // stmatrix: matrix m = l / 8 is rows (m % 2) * 8 + [0, 8) of the warp's 16, chunk m / 2 of
    // the pair; lane l gives its row l % 8
    const int srow = wrow + (l & 7) + ((l >> 3) & 1) * 8, schunk = l >> 4;
    static_assert(L::WG_COLS % 128 == 0 && (!L::HALF_TILES || L::WG_COLS % 256 == 0),
                  "an even number of passes, half tiles too: with two slots a tile's pass p takes slot p % 2");
    if (SLOT_A_PASS) { // the last tile's copies out have read every slot
        if (tid == 0) bulk_wait_read<0>();
        warpgroup_sync(1 + wg);
    }
#pragma unroll
    for (int pass = 0; pass < PASSES; pass++) {
        if (half && pass == PASSES / 2) break;
        unsigned char *slot = t.staging(wg) + (pass % L::SLOTS) * L::SLOT_BYTES;
        const int32_t col0 = cols0 + pass * 64;
        // Two slots: the copy out from this slot, two passes back, has read it (the latest,
        // from the other slot, may still run; a tile's last pass is always slot 1's). The
        // threads' copy out below writes without a bulk group: it waits for every one.
        if (!SLOT_A_PASS) {
            if (tid == 0) {
                if (by_map) bulk_wait_read<1>();
                else bulk_wait_read<0>();
            }
            warpgroup_sync(1 + wg);
        }
#pragma unroll
        for (int jj = 0; jj < 8; jj += 2) {
            uint32_t r[4];
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const int j = pass * 8 + jj + h;
                float b0 = 0.0f, b1 = 0.0f;
                const int32_t col = col0 + (jj + h) * 8 + 2 * q;
                if (BIAS == bias_mode::inside) {
                    b0 = to_float(bias[col]);
                    b1 = to_float(bias[col + 1]);
                } else if (BIAS == bias_mode::edge) {
                    if (col < a.n) b0 = to_float(bias[col]);
                    if (col + 1 < a.n) b1 = to_float(bias[col + 1]);
                }
                r[2 * h] = mma_type<T>::pack(c.d[0][j][0] + b0, c.d[0][j][1] + b1);     // row g
                r[2 * h + 1] = mma_type<T>::pack(c.d[0][j][2] + b0, c.d[0][j][3] + b1); // row g + 8
            }
            stmatrix_x4(slot + staging_offset(srow, jj + schunk), r);
        }
        if (SLOT_A_PASS && by_map) continue; // sent together below
        if (by_map) fence_async_shared(); // the writes, to the copy engine
        warpgroup_sync(1 + wg);
        if (by_map) {
            if (tid == 0) {
                tma_store_2d(&a.c_map, col0, (int32_t)row0, slot);
                bulk_commit();
            }
            continue;
        }
        T *out = (T *)a.c;
#pragma unroll
        for (int i = tid; i < 64 * 8; i += 128) {
            const int row = i / 8, chunk = i % 8;
            const int64_t grow = row0 + row;
            const int32_t col = col0 + chunk * 8;
            if (grow >= pos.row_end || col >= a.n) continue;
            const int4 v = *reinterpret_cast<const int4 *>(slot + staging_offset(row, chunk));
            T *p = out + grow * a.ldc + col;
            if (col + 8 <= a.n) {
                *reinterpret_cast<int4 *>(p) = v;
            } else { // C's last columns
                const T *e = reinterpret_cast<const T *>(&v);
#pragma unroll
                for (int k = 0; k < 8; k++)
                    if (col + k < a.n) p[k] = e[k];
            }
        }
    }
    if (SLOT_A_PASS && by_map) {
        fence_async_shared();
        warpgroup_sync(1 + wg);
        if (tid == 0) {
#pragma unroll
            for (int pass = 0; pass < PASSES; pass++) {
                if (half && pass == PASSES / 2) break;
                tma_store_2d(&a.c_map, cols0 + pass * 64, (int32_t)row0, t.staging(wg) + pass * L::SLOT_BYTES);
            }
            bulk_commit();
        }
    }
}
template <typename L, typename T>
__device__ __forceinline__ void store_tile_staged(const tile_gemm_kernel_args &a, const tile_pos &pos,
                                                  const accumulator<L> &c, const smem_tiles<L, T> &t) {
    // the warpgroup's end column (its first is store_tile_staged_as's cols0): a half tile's
    // half, or the tile's (a shared helper for both moved ptxas's allocation of every 256-column
    // kernel: kept apart until that is measured)
    const int64_t cols_end = pos.col0 + (is_half_tile<L>(a, pos) ? (L::consumer_wg() + 1) * (L::WG_COLS / 2) : L::WG_COLS);
    if (!a.bias) store_tile_staged_as<L, T, bias_mode::none>(a, pos, c, t);
    else if (cols_end <= a.n) store_tile_staged_as<L, T, bias_mode::inside>(a, pos, c, t);
    else store_tile_staged_as<L, T, bias_mode::edge>(a, pos, c, t);
}

// Consumers, after their last tile: the copies out by tensor map have completed (the program's
// shared memory stays until they have read it).
template <typename L> __device__ __forceinline__ void stores_drain() {
    if (L::WGMMA && threadIdx.x % 128 == 0) bulk_wait();
}

template <typename L, typename T>
__device__ __forceinline__ void store_tile(const tile_gemm_kernel_args &a, const tile_pos &pos,
                                           const accumulator<L> &c, const smem_tiles<L, T> &t) {
    if constexpr (L::WGMMA) store_tile_staged<L, T>(a, pos, c, t);
    else store_tile_direct<L, T>(a, pos, c);
}

} // namespace gemm
} // namespace tile
