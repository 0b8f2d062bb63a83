// Device primitives behind the tile language (templates/tile.m4). Thread indices, shuffles,
// shared-memory exchanges, vector accesses and cluster (distributed shared memory) traffic live
// here and nowhere else; kernels/*.tile only name tile operations.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#include "norm_args.h" // argument blocks of kernels/*.tile, shared with the host
#include "tile_attention.cuh" // tensor-core tiles behind the attention macros

// Hopper features (sm_90 SASS only; the sm_80 SASS and compute_80 PTX of the same source trap
// there, and the grids register the variants that use them for sm_90 only): thread-block
// clusters, and the bulk-copy engine with mbarrier transaction counts.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#include <cooperative_groups.h>
#define TILE_HAS_SM90 1
#else
#define TILE_HAS_SM90 0
#endif

namespace tile {

// Programmatic dependent launch (images for compute_90 and up; the loader sets the launch
// attribute only where every kernel loaded such an image): wait until the grid before this one
// in the stream has finished and its writes are visible, before this program touches global
// memory (it may read what that grid wrote, or overwrite what it reads); then let the next grid
// start launching, so its programs' launch overlaps this grid's last wave instead of following
// it. Without the attribute, both are no-ops.
__device__ __forceinline__ void grid_dependency_sync() {
#if TILE_HAS_SM90
    asm volatile("griddepcontrol.wait;" ::: "memory");
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// Storage types, spelled as grid files spell dtypes (m4 pastes `tile::DTYPE`).
using f32 = float;
using f16 = __half;
using bf16 = __nv_bfloat16;

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
template <typename T> __device__ __forceinline__ T from_float(float v);
template <> __device__ __forceinline__ float from_float<float>(float v) { return v; }
template <> __device__ __forceinline__ __half from_float<__half>(float v) {
    return __float2half_rn(v);
}
template <> __device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
    return __float2bfloat16_rn(v);
}

// Two 16-bit storage values packed in a 32-bit word to two floats (tag dispatch on the type).
// bf16: integer ops, one instruction per element (low half: shift, high half: mask), where a
// per-element conversion costs a PRMT and a shift for each high half. f16: __half22float2.
__device__ __forceinline__ void unpack2(uint32_t w, float *out, __nv_bfloat16) {
    out[0] = __uint_as_float(w << 16);
    out[1] = __uint_as_float(w & 0xffff0000u);
}
__device__ __forceinline__ void unpack2(uint32_t w, float *out, __half) {
    const float2 f = __half22float2(*reinterpret_cast<const __half2 *>(&w));
    out[0] = f.x;
    out[1] = f.y;
}
// Two floats rounded (to nearest even) to two 16-bit storage values in one word, one cvt for
// the pair: bit for bit two from_float calls.
__device__ __forceinline__ uint32_t pack2(float a, float b, __nv_bfloat16) {
    const __nv_bfloat162 h = __floats2bfloat162_rn(a, b);
    return *reinterpret_cast<const uint32_t *>(&h);
}
__device__ __forceinline__ uint32_t pack2(float a, float b, __half) {
    const __half2 h = __floats2half2_rn(a, b);
    return *reinterpret_cast<const uint32_t *>(&h);
}
// A 16-byte vector of N storage values to N floats, bit for bit what to_float gives.
template <int N, typename T> __device__ __forceinline__ void unpack16(const int4 &raw, float *out) {
    static_assert(N * sizeof(T) == 16, "a 16-byte vector");
    const uint32_t w[4] = {(uint32_t)raw.x, (uint32_t)raw.y, (uint32_t)raw.z, (uint32_t)raw.w};
#pragma unroll
    for (int j = 0; j < 4; j++) {
        if constexpr (sizeof(T) == 4) out[j] = __uint_as_float(w[j]);
        else unpack2(w[j], out + 2 * j, T{});
    }
}

// exp via the SFU's base-2 exponential (exp2_approx): one FMUL + MUFU.EX2.
constexpr float LOG2E = 1.4426950408889634f;
__device__ __forceinline__ float exp(float x) { return exp2_approx(x * LOG2E); }
// exp(a - b) as one FFMA (a*log2e - b*log2e; the b term is hoisted out of tile loops) and
// one MUFU.EX2, rather than FADD + FMUL + MUFU.
__device__ __forceinline__ float exp_sub(float a, float b) {
    return exp2_approx(__fmaf_rn(a, LOG2E, -b * LOG2E));
}
__device__ __forceinline__ float log(float x) { return __logf(x); }

// ------------------------------------------------------------------------------ layout
// A [ROWS, BLOCK_N] register tile over a program of THREADS threads: TPR consecutive threads
// share a row; thread `lane` of a row holds vectors lane, lane+TPR, lane+2*TPR, ... so each
// warp-wide access is contiguous (coalesced). With CLUSTER > 1, the CLUSTER programs of a
// cluster hold consecutive BLOCK_N-wide slices of the same rows.
template <int ROWS_, int BLOCK_N_, int THREADS_, int VEC_, int CLUSTER_> struct row_layout {
    static constexpr int ROWS = ROWS_, BLOCK_N = BLOCK_N_, THREADS = THREADS_, VEC = VEC_;
    static constexpr int CLUSTER = CLUSTER_;
    static constexpr int TPR = THREADS / ROWS;
    static constexpr int PER_THREAD = BLOCK_N / TPR;
    static constexpr int ITERS = PER_THREAD / VEC;
    static constexpr int WARPS_PER_ROW = TPR > 32 ? TPR / 32 : 1;
    static_assert(THREADS % ROWS == 0, "threads split evenly over rows");
    static_assert(BLOCK_N % (TPR * VEC) == 0, "a row is whole vectors on every thread");
    static_assert(TPR <= 32 || ROWS == 1, "a row shared with others stays inside one warp");
    static_assert(CLUSTER == 1 || ROWS == 1, "clusters split one row");

    __device__ static int row_in_program() { return threadIdx.x / TPR; }
    __device__ static int lane() { return threadIdx.x % TPR; }
    __device__ static int col(int i) { return (i * TPR + lane()) * VEC; }
    __device__ static int cluster_rank() { return CLUSTER > 1 ? blockIdx.x % CLUSTER : 0; }
    __device__ static int64_t program_id() { return blockIdx.x / CLUSTER; }
    __device__ static int64_t programs() { return gridDim.x / CLUSTER; }
};

// A thread's part of a tile: fp32 values, ITERS vectors of VEC.
template <typename L> struct frag {
    float v[L::ITERS][L::VEC];
};

// The first row of the program plus this thread's row within it.
template <typename L> __device__ __forceinline__ int64_t program_row() {
    return L::program_id() * L::ROWS + L::row_in_program();
}

// Persistent programs walk row blocks strided by the grid: the next row of this thread, and
// whether this program's row block starting at `row`'s block is live (uniform over the program,
// so reductions with barriers may run inside the loop).
template <typename L> __device__ __forceinline__ int64_t row_stride() {
    return L::programs() * L::ROWS;
}
template <typename L> __device__ __forceinline__ bool row_block_live(int64_t row, int64_t rows) {
    return row - L::row_in_program() < rows;
}

// First column of this program's slice of the row: programs of a cluster split it.
template <typename L> __device__ __forceinline__ int64_t program_column() {
    return (int64_t)L::cluster_rank() * L::BLOCK_N;
}

// Programs over column tiles (a launch of rows x ceil(cols / BLOCK_N) programs, where no row
// statistics are needed): program p takes row block p / tiles and that block's column tile
// p % tiles (a 32-bit division, once a program).
template <typename L> __device__ __forceinline__ uint32_t column_tiles(int64_t cols) {
    return (uint32_t)((cols + L::BLOCK_N - 1) / L::BLOCK_N);
}
template <typename L> __device__ __forceinline__ int64_t tile_program_row(int64_t cols) {
    return (int64_t)(blockIdx.x / column_tiles<L>(cols)) * L::ROWS + L::row_in_program();
}
template <typename L> __device__ __forceinline__ int64_t tile_program_column(int64_t cols) {
    return (int64_t)(blockIdx.x % column_tiles<L>(cols)) * L::BLOCK_N;
}

// Distance between a program's consecutive column tiles: its cluster's programs interleave.
template <typename L> __device__ __forceinline__ int64_t column_step() {
    return (int64_t)L::BLOCK_N * L::CLUSTER;
}

// ------------------------------------------------------------------------------ memory
template <int N, typename T> struct alignas(N * sizeof(T)) vec_t {
    T e[N];
};

// How a load treats the caches: evict_first for the last read of data (ld.global.cs);
// read_only through the non-coherent path (ld.global.nc), for data no thread writes during the
// kernel, or (in place: y == x, s == residual) only the thread that read it, after its one
// read: no element is read through it after it was written; plain (ld.global), which the
// compiler cannot move across a barrier, for small vectors read after a row reduction, so
// their registers are not held through it; keep_l2, read_only with an L2 evict-last policy on
// the lines (what torch.compile's norm kernels put on their first read of x), which made the
// one-pass norm tiles faster on an H200 though each row is read once (perf-notes K29:
// measured, not explained).
enum class hint { evict_first, read_only, plain, keep_l2 };

__device__ __forceinline__ int4 load16_keep_l2(const int4 *p) {
    uint64_t policy;
    int4 r;
    asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(policy));
    asm volatile("ld.global.nc.L2::cache_hint.v4.s32 {%0, %1, %2, %3}, [%4], %5;"
                 : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
                 : "l"(p), "l"(policy));
    return r;
}

// One whole vector of a tile: VEC storage values at src (16 bytes in one access where VEC
// allows, with the cache hint H) to fp32, and back.
template <typename L, hint H, typename T>
__device__ __forceinline__ void read_vector(float *out, const T *src) {
    if constexpr (sizeof(vec_t<L::VEC, T>) == 16) {
        const int4 *v = reinterpret_cast<const int4 *>(src);
        const int4 raw = H == hint::evict_first ? __ldcs(v)
                         : H == hint::read_only ? __ldg(v)
                         : H == hint::keep_l2   ? load16_keep_l2(v)
                                                : *v;
        unpack16<L::VEC, T>(raw, out);
    } else {
        const vec_t<L::VEC, T> w = *reinterpret_cast<const vec_t<L::VEC, T> *>(src);
#pragma unroll
        for (int k = 0; k < L::VEC; k++) out[k] = to_float(w.e[k]);
    }
}
template <typename L, typename T> __device__ __forceinline__ void write_vector(T *dst, const float *in) {
    vec_t<L::VEC, T> w;
#pragma unroll
    for (int k = 0; k < L::VEC; k++) w.e[k] = from_float<T>(in[k]);
    *reinterpret_cast<vec_t<L::VEC, T> *>(dst) = w;
}

// The masked read shared by load, load_with and slot_load: tile columns [0, BLOCK_N) of a row
// of each of N tensors at p[j], whose first `limit` columns exist. whole(j, out, c) reads
// tensor j's whole vector at column c; `spare` is a column whole() may always read for this
// thread once the row has a whole vector (its value is dropped). A vector straddling the end
// takes element reads from p[j]; lanes outside the row read as `other`. A whole tile (every
// tile but a row's last, and a row exactly BLOCK_N wide) takes one bounds test instead of one
// per vector. A partial tile is not branched around per vector: each reads a column clamped
// into the row (spare past the end) and a select drops it, so a thread's reads are all in
// flight at once. Behind a branch each, they went one after another (the branch held each
// vector's unpack): a scalar 4096-column tile ran 3x slower on 3072 columns than on 4096. The
// N tensors' whole-vector reads share one block, so all are in flight together before any is
// unpacked (x and the residual: perf-notes K16).
template <int N, typename L, typename T, typename Whole>
__device__ __forceinline__ void read_tiles(frag<L> *const (&t)[N], const T *const (&p)[N],
                                           bool row_ok, int64_t limit, float other, int spare,
                                           Whole whole) {
    if (row_ok && limit >= L::BLOCK_N) {
#pragma unroll
        for (int i = 0; i < L::ITERS; i++)
#pragma unroll
            for (int j = 0; j < N; j++) whole(j, t[j]->v[i], L::col(i));
        return;
    }
    if (!row_ok || limit < L::VEC) { /* no whole vector (p may lie past the tensor) */
#pragma unroll
        for (int j = 0; j < N; j++)
#pragma unroll
            for (int i = 0; i < L::ITERS; i++)
#pragma unroll
                for (int k = 0; k < L::VEC; k++) t[j]->v[i][k] = other;
    } else {
#pragma unroll
        for (int i = 0; i < L::ITERS; i++) {
            const int c = L::col(i);
            const bool in = c + L::VEC <= limit;
#pragma unroll
            for (int j = 0; j < N; j++) {
                float x[L::VEC];
                whole(j, x, in ? c : spare);
#pragma unroll
                for (int k = 0; k < L::VEC; k++) t[j]->v[i][k] = in ? x[k] : other;
            }
        }
    }
    if (L::VEC > 1 && row_ok && limit % L::VEC != 0) { /* the vector straddling the end */
#pragma unroll
        for (int i = 0; i < L::ITERS; i++) {
            const int c = L::col(i);
            if (c < limit && c + L::VEC > limit) {
#pragma unroll
                for (int j = 0; j < N; j++)
#pragma unroll
                    for (int k = 0; k < L::VEC; k++)
                        if (c + k < limit) t[j]->v[i][k] = to_float(p[j][c + k]);
            }
        }
    }
}
// One tensor's: whole(out, c).
template <typename L, typename T, typename Whole>
__device__ __forceinline__ void read_tile(frag<L> &t, const T *p, bool row_ok, int64_t limit,
                                          float other, int spare, Whole whole) {
    frag<L> *const ts[1] = {&t};
    const T *const ps[1] = {p};
    read_tiles<1, L>(ts, ps, row_ok, limit, other, spare,
                     [&](int, float *out, int c) { whole(out, c); });
}

// Masked tile load of row `row`, columns col0 + [0, BLOCK_N) (read_tile): whole vectors in
// bounds use one 16-byte access with the cache hint H.
template <typename L, hint H, typename T>
__device__ __forceinline__ void load(frag<L> &t, const T *base, int64_t row, int64_t rows,
                                     int64_t col0, int64_t cols, int64_t ld, float other) {
    const T *p = base + row * ld + col0;
    /* spare: the row's first vector, in bounds whenever a whole vector is */
    read_tile<L>(t, p, row < rows, cols - col0, other, 0,
                 [&](float *out, int c) { read_vector<L, H>(out, p + c); });
}

// t from base_t and, where base_u is not NULL, u from base_u: the same rows and columns, with
// the hints HT and HU, both tiles' reads in flight together (read_tiles); u is untouched where
// base_u is NULL.
template <typename L, hint HT, hint HU, typename T>
__device__ __forceinline__ void load_with(frag<L> &t, const T *base_t, int64_t ld_t, frag<L> &u,
                                          const T *base_u, int64_t ld_u, int64_t row, int64_t rows,
                                          int64_t col0, int64_t cols, float other) {
    if (!base_u) {
        load<L, HT>(t, base_t, row, rows, col0, cols, ld_t, other);
        return;
    }
    frag<L> *const ts[2] = {&t, &u};
    const T *const ps[2] = {base_t + row * ld_t + col0, base_u + row * ld_u + col0};
    read_tiles<2, L>(ts, ps, row < rows, cols - col0, other, 0, [&](int j, float *out, int c) {
        if (j == 0) read_vector<L, HT>(out, ps[0] + c);
        else read_vector<L, HU>(out, ps[1] + c);
    });
}

// Masked tile store: only in-bounds elements are written (a whole tile: one bounds test).
template <typename L, typename T>
__device__ __forceinline__ void store(T *base, const frag<L> &t, int64_t row, int64_t rows,
                                      int64_t col0, int64_t cols, int64_t ld) {
    if (row >= rows) return;
    T *p = base + row * ld + col0;
    const int64_t limit = cols - col0;
    if (limit >= L::BLOCK_N) {
#pragma unroll
        for (int i = 0; i < L::ITERS; i++) write_vector<L>(p + L::col(i), t.v[i]);
        return;
    }
#pragma unroll
    for (int i = 0; i < L::ITERS; i++) {
        const int c = L::col(i);
        if (c + L::VEC <= limit) {
            write_vector<L>(p + c, t.v[i]);
        } else {
#pragma unroll
            for (int k = 0; k < L::VEC; k++)
                if (c + k < limit) p[c + k] = from_float<T>(t.v[i][k]);
        }
    }
}

// A [BLOCK_N] vector (a weight or bias of `cols` elements) broadcast over the tile's rows:
// every row of the tile gets vec[col0 + c], `other` beyond cols. A plain load: cached like any
// read (every row reads it), and not hoisted above the reductions before it.
template <typename L, typename T>
__device__ __forceinline__ void load_vector(frag<L> &t, const T *vec, int64_t col0, int64_t cols,
                                            float other) {
    load<L, hint::plain>(t, vec, 0, 1, col0, cols, 0, other);
}

// Per-row fp32 scalars (row statistics): one thread of the row's (and the cluster's first
// program's) threads writes value to p[row].
template <typename L>
__device__ __forceinline__ void store_row(float *p, int64_t row, int64_t rows, float value) {
    if (row < rows && L::lane() == 0 && L::cluster_rank() == 0) p[row] = value;
}

// Rounds every element to storage type T and back: the tile then holds exactly what a store
// of it writes.
// 16-bit types go a pair at a time (pack2, unpack2: 3 instructions per pair, not 4).
template <typename T, typename L> __device__ __forceinline__ void round_to(frag<L> &t) {
#pragma unroll
    for (int i = 0; i < L::ITERS; i++) {
        if constexpr (sizeof(T) == 2 && L::VEC % 2 == 0) {
#pragma unroll
            for (int k = 0; k < L::VEC; k += 2)
                unpack2(pack2(t.v[i][k], t.v[i][k + 1], T{}), &t.v[i][k], T{});
        } else {
#pragma unroll
            for (int k = 0; k < L::VEC; k++) t.v[i][k] = to_float(from_float<T>(t.v[i][k]));
        }
    }
}

// ------------------------------------------------------------------------------ staging
// A row slice staged in shared memory in its storage dtype (the kernel's dynamic shared
// memory). Tile k of this program (k-th column tile it walks) lives at offset k * BLOCK_N.
// Each thread stages and later reads back exactly its own vectors, so beyond waiting for its
// own copies it needs no barrier.
template <typename T> __device__ __forceinline__ T *stage_buffer() {
    extern __shared__ __align__(16) unsigned char tile_dynamic_smem[];
    return reinterpret_cast<T *>(tile_dynamic_smem);
}
template <typename L> __device__ __forceinline__ int64_t stage_offset(int64_t col0) {
    return col0 / column_step<L>() * L::BLOCK_N;
}

// Copies the whole in-bounds vectors of tile col0 to the stage with cp.async (sm_80): 16 bytes
// each, no registers, all of a program's copies in flight at once. Partial vectors at the row's
// end are not staged: stage_load reads those from global memory.
template <typename L, typename T>
__device__ __forceinline__ void stage_copy(T *stage, const T *base, int64_t row, int64_t rows,
                                           int64_t col0, int64_t cols, int64_t ld) {
    static_assert(L::VEC * sizeof(T) == 16, "staging copies 16-byte vectors");
    if (row >= rows) return;
    const T *p = base + row * ld + col0;
    T *s = stage + stage_offset<L>(col0);
    const int64_t limit = cols - col0;
#pragma unroll
    for (int i = 0; i < L::ITERS; i++) {
        const int c = L::col(i);
        if (c + L::VEC <= limit) {
            const unsigned dst = (unsigned)__cvta_generic_to_shared(s + c);
            asm volatile("cp.async.cg.shared.global.L2::128B [%0], [%1], 16;" ::"r"(dst), "l"(p + c)
                         : "memory");
        }
    }
}
__device__ __forceinline__ void stage_wait() {
    asm volatile("cp.async.commit_group;\n\tcp.async.wait_all;" ::: "memory");
}

// Tile col0 from the shared-memory slot that holds its whole vectors (a stage's, a ring's or a
// stream's) or from global memory (the partial vector at the row's end), as fp32; `other`
// outside the row (read_tile).
template <typename L, typename T>
__device__ __forceinline__ void slot_load(frag<L> &t, const T *slot, const T *base, int64_t row,
                                          int64_t rows, int64_t col0, int64_t cols, int64_t ld,
                                          float other) {
    /* spare: the thread's own first vector, always inside the slot (where the tile was not
     * copied there, stale bytes, dropped) */
    read_tile<L>(t, base + row * ld + col0, row < rows, cols - col0, other, L::col(0),
                 [&](float *out, int c) {
                     unpack16<L::VEC, T>(*reinterpret_cast<const int4 *>(slot + c), out);
                 });
}
// Tile col0 from the stage (slot_load from its place in the stage).
template <typename L, typename T>
__device__ __forceinline__ void stage_load(frag<L> &t, const T *stage, const T *base, int64_t row,
                                           int64_t rows, int64_t col0, int64_t cols, int64_t ld,
                                           float other) {
    slot_load<L>(t, stage + stage_offset<L>(col0), base, row, rows, col0, cols, ld, other);
}

// Writes tile col0's whole in-bounds vectors back to the stage (storage dtype) where
// stage_copy put them, so a later stage_load reads t: each thread its own vectors, no barrier.
// The partial vector at the row's end is not staged (stage_load reads it from global memory).
template <typename L, typename T>
__device__ __forceinline__ void stage_store(T *stage, const frag<L> &t, int64_t row, int64_t rows,
                                            int64_t col0, int64_t cols) {
    if (row >= rows) return;
    T *s = stage + stage_offset<L>(col0);
    const int64_t limit = cols - col0;
#pragma unroll
    for (int i = 0; i < L::ITERS; i++)
        if (L::col(i) + L::VEC <= limit) write_vector<L>(s + L::col(i), t.v[i]);
}

// ------------------------------------------------------------------------------ row ring
// A ring of STAGES row buffers in the dynamic shared memory (STAGES * BLOCK_N storage values,
// the grid's `set smem`), filled by the Hopper bulk-copy engine: one 1-D cp.async.bulk per row
// (no tensor map, no registers, no per-thread addresses), completing on the slot's mbarrier
// with a transaction count of the row's bytes. A persistent program (ROWS == 1) walking its
// rows with TILE_FOR_ROW_BLOCKS keeps the next STAGES rows copying while it reduces and writes
// the current one, so a program always has bytes in flight, not only between a load and its
// first reduction. Slot s holds the program's rows k with k % STAGES == s; its barrier completes
// one phase per row, so a reader waits for phase parity (k / STAGES) % 2. Thread 0 issues every
// copy. A row's whole 16-byte vectors are copied (the bulk engine moves multiples of 16 bytes
// from 16-byte aligned addresses: the grid sets align = 16); stage_load reads a partial last
// vector from global memory.
template <typename L, typename T, int STAGES> struct ring {
    static_assert(L::ROWS == 1 && L::CLUSTER == 1, "a slot holds one row of one program");
    static_assert(L::VEC * sizeof(T) == 16, "rows are copied as whole 16-byte vectors");
    static_assert(STAGES >= 1 && STAGES <= 8, "a few slots");
    const T *base;
    int64_t rows, cols, ld;
    uint32_t bytes;  // copied per row: its whole 16-byte vectors
    int slot;        // the slot the next row read comes from
    uint32_t parity; // the phase parity that row's copy completes
};

__device__ __forceinline__ uint32_t shared_address(const void *p) {
    return (uint32_t)__cvta_generic_to_shared(p);
}

// The ring's barriers: one per slot, static shared memory of the kernel.
template <int STAGES> __device__ __forceinline__ uint64_t *ring_barriers() {
    __shared__ __align__(8) uint64_t barrier[STAGES];
    return barrier;
}

// Collective, once per program: the N slot barriers set up (one arrival a phase) and visible to
// the bulk-copy (async) proxy and to every thread.
template <int N> __device__ __forceinline__ void init_slot_barriers() {
    if (threadIdx.x == 0) {
#pragma unroll
        for (int k = 0; k < N; k++) mbarrier_init(&ring_barriers<N>()[k], 1);
        mbarrier_init_fence();
    }
    __syncthreads();
}

// The bytes of a tile's whole 16-byte vectors, for a tile with `left` columns of the row from its
// start (the bulk engine copies whole vectors; a partial last one is read from global memory).
template <typename L, typename T> __device__ __forceinline__ uint32_t whole_vector_bytes(int64_t left) {
    return (uint32_t)((left < L::BLOCK_N ? left : L::BLOCK_N) / L::VEC * L::VEC * sizeof(T));
}

// One thread: start copying `bytes` (a multiple of 16, from a 16-byte aligned address) into a
// shared-memory slot; the slot's barrier completes its phase once they land. The barrier's one
// arrival carries the byte count (zero bytes: the arrival alone completes the phase).
__device__ __forceinline__ void bulk_copy_to_slot(uint64_t *barrier, void *dst, const void *src,
                                                  uint32_t bytes) {
#if TILE_HAS_SM90
    mbarrier_expect_bytes(barrier, bytes);
    if (bytes)
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes "
                     "[%0], [%1], %2, [%3];" ::"r"(shared_address(dst)),
                     "l"(src), "r"(bytes), "r"(shared_address(barrier))
                     : "memory");
#else
    (void)barrier, (void)dst, (void)src, (void)bytes;
    __trap(); // Hopper bulk copies: registered for sm_90 only
#endif
}

// Thread 0: start copying row `row` (nothing past the last row) into `slot`.
template <typename L, typename T, int STAGES>
__device__ __forceinline__ void ring_fetch(const ring<L, T, STAGES> &r, int slot, int64_t row) {
    if (row >= r.rows) return;
    bulk_copy_to_slot(&ring_barriers<STAGES>()[slot], stage_buffer<T>() + slot * L::BLOCK_N,
                      r.base + row * r.ld, r.bytes);
}

// Collective, once per program: set up the barriers and start copying the program's first
// STAGES rows (its first row and the next ones TILE_FOR_ROW_BLOCKS will visit).
template <typename L, typename T, int STAGES>
__device__ __forceinline__ ring<L, T, STAGES> ring_start(const T *base, int64_t rows, int64_t cols,
                                                         int64_t ld) {
    const ring<L, T, STAGES> r{base, rows, cols, ld, whole_vector_bytes<L, T>(cols), 0, 0};
#if TILE_HAS_SM90
    init_slot_barriers<STAGES>();
    if (threadIdx.x == 0)
#pragma unroll
        for (int s = 0; s < STAGES; s++)
            ring_fetch(r, s, program_row<L>() + s * row_stride<L>());
#else
    __trap(); // registered for sm_90 only
#endif
    return r;
}

// Collective: t = row `row` (the program's next row, in TILE_FOR_ROW_BLOCKS order) as fp32 from
// its slot, once its copy has landed; `other` beyond cols. Then, once every thread has read
// the slot (a barrier), thread 0 refills it with the row STAGES rows ahead.
template <typename L, typename T, int STAGES>
__device__ __forceinline__ void ring_load(frag<L> &t, ring<L, T, STAGES> &r, int64_t row,
                                          float other) {
#if TILE_HAS_SM90
    mbarrier_wait(&ring_barriers<STAGES>()[r.slot], r.parity);
    slot_load<L>(t, stage_buffer<T>() + r.slot * L::BLOCK_N, r.base, row, r.rows, 0, r.cols,
                 r.ld, other);
    __syncthreads(); // the slot's readers are done: the copy engine may overwrite it
    if (threadIdx.x == 0) ring_fetch(r, r.slot, row + STAGES * row_stride<L>());
    advance_slot<STAGES>(r.slot, r.parity, 1);
#else
    (void)t, (void)r, (void)row, (void)other;
    __trap(); // registered for sm_90 only
#endif
}

// ------------------------------------------------------------------------------ tile stream
// A persistent program (ROWS == 1, walking TILE_FOR_ROW_BLOCKS) streams its rows' column tiles,
// in that order, through a ring of SLOTS tile slots in the dynamic shared memory (SLOTS *
// BLOCK_N storage values, the grid's `set smem`), one bulk copy a tile on the slot's barrier, as
// the row ring above. A row of at most SLOTS tiles stays in the ring from its first read to its
// tiles' releases, so it can be read twice from shared memory; a released slot at once starts
// copying the tile SLOTS positions on (in a row of SLOTS tiles, the same tile of the program's
// next row). The next row's copies thus run under the current row's stores, and its first
// tiles are reduced while its last ones land (a staged program waits for its whole row).
// Position k of the stream lives in slot k % SLOTS, whose barrier completes phase k / SLOTS
// with that copy.
template <typename L, typename T, int SLOTS> struct stream {
    static_assert(L::ROWS == 1 && L::CLUSTER == 1, "a program streams whole rows of its own");
    static_assert(L::VEC * sizeof(T) == 16, "tiles are copied as whole 16-byte vectors");
    static_assert(SLOTS >= 1 && SLOTS <= 32, "a ring of a few tiles");
    const T *base;
    int64_t rows, cols, ld;
    int tiles;           // column tiles a row (at most SLOTS: dispatch's max_cols)
    int row_slot;        // the current row's first tile: its slot,
    uint32_t row_parity; // and the phase parity its copy completes
    int64_t fetch_row;   // thread 0: the next tile to copy (row, first column, slot)
    int64_t fetch_col0;
    int fetch_slot;
};

// Thread 0: start copying the stream's next tile (nothing past the last row) into its slot and
// move the cursor on.
template <typename L, typename T, int SLOTS>
__device__ __forceinline__ void stream_fetch(stream<L, T, SLOTS> &s) {
    if (s.fetch_row < s.rows)
        bulk_copy_to_slot(&ring_barriers<SLOTS>()[s.fetch_slot],
                          stage_buffer<T>() + s.fetch_slot * L::BLOCK_N,
                          s.base + s.fetch_row * s.ld + s.fetch_col0,
                          whole_vector_bytes<L, T>(s.cols - s.fetch_col0));
    s.fetch_col0 += L::BLOCK_N;
    if (s.fetch_col0 >= s.cols) {
        s.fetch_col0 = 0;
        s.fetch_row += row_stride<L>();
    }
    if (++s.fetch_slot == SLOTS) s.fetch_slot = 0;
}

// Collective, once per program: set up the barriers and start copying the first SLOTS tiles.
template <typename L, typename T, int SLOTS>
__device__ __forceinline__ stream<L, T, SLOTS> stream_start(const T *base, int64_t rows,
                                                            int64_t cols, int64_t ld) {
    stream<L, T, SLOTS> s{base, rows, cols, ld, (int)((cols + L::BLOCK_N - 1) / L::BLOCK_N),
                          0, 0, program_row<L>(), 0, 0};
#if TILE_HAS_SM90
    init_slot_barriers<SLOTS>();
    if (threadIdx.x == 0)
        for (int k = 0; k < SLOTS; k++) stream_fetch(s);
#else
    __trap(); // registered for sm_90 only
#endif
    return s;
}

// Collective: t = tile col0 of the current row `row` as fp32 from its slot, once its copy has
// landed; `other` beyond cols. May be called again for the same tile until it is released.
template <typename L, typename T, int SLOTS>
__device__ __forceinline__ void stream_load(frag<L> &t, const stream<L, T, SLOTS> &s, int64_t row,
                                            int64_t col0, float other) {
    int slot = s.row_slot;
    uint32_t parity = s.row_parity;
    advance_slot<SLOTS>(slot, parity, (int)(col0 / L::BLOCK_N));
    mbarrier_wait(&ring_barriers<SLOTS>()[slot], parity);
    slot_load<L>(t, stage_buffer<T>() + slot * L::BLOCK_N, s.base, row, s.rows, col0, s.cols, s.ld,
                 other);
}

// Collective: every thread is done reading tile col0 of the current row (the tiles of a row are
// released in order, each once): its slot starts copying the tile SLOTS positions on. After
// the row's last tile the stream moves to the program's next row.
template <typename L, typename T, int SLOTS>
__device__ __forceinline__ void stream_release(stream<L, T, SLOTS> &s, int64_t col0) {
    __syncthreads();
    if (threadIdx.x == 0) stream_fetch(s);
    if (col0 + L::BLOCK_N >= s.cols) advance_slot<SLOTS>(s.row_slot, s.row_parity, s.tiles);
}

// ------------------------------------------------------------------------------ maps
// In place: a = f(a). Softmax keeps exp(x - max) in the registers that held x.
template <typename L, typename F> __device__ __forceinline__ void apply(frag<L> &a, F f) {
#pragma unroll
    for (int i = 0; i < L::ITERS; i++)
#pragma unroll
        for (int k = 0; k < L::VEC; k++) a.v[i][k] = f(a.v[i][k]);
}

// In place, elementwise with a second tile of the same layout: a = f(a, b).
template <typename L, typename F>
__device__ __forceinline__ void apply_with(frag<L> &a, const frag<L> &b, F f) {
#pragma unroll
    for (int i = 0; i < L::ITERS; i++)
#pragma unroll
        for (int k = 0; k < L::VEC; k++) a.v[i][k] = f(a.v[i][k], b.v[i][k]);
}
// ------------------------------------------------------------------------------ dropout
// Philox4x32-10 (Salmon et al., SC'11): counter-based, so an element's random draw depends on
// (key, counter) alone, never on which thread, variant or GPU computes it.
__device__ __forceinline__ uint4 philox4x32_10(uint4 c, uint32_t k0, uint32_t k1) {
#pragma unroll
    for (int round = 0; round < 10; round++) {
        if (round) {
            k0 += 0x9E3779B9u;
            k1 += 0xBB67AE85u;
        }
        const uint32_t hi0 = __umulhi(0xD2511F53u, c.x), lo0 = 0xD2511F53u * c.x;
        const uint32_t hi1 = __umulhi(0xCD9E8D57u, c.z), lo1 = 0xCD9E8D57u * c.z;
        c = make_uint4(hi1 ^ c.y ^ k0, lo1, hi0 ^ c.w ^ k1, lo0);
    }
    return c;
}

// The four random words of element group (row, col / 8): counter (col / 8, row, offset) as
// docs/api.md specifies. Each word gives two elements a 16-bit draw each: element col takes
// half col % 2 (0: the low 16 bits) of word (col / 2) % 4, so one Philox call serves eight
// elements (perf-notes K28).
__device__ __forceinline__ uint4 dropout_words(uint64_t seed, uint64_t offset, int64_t row,
                                               int64_t col) {
    const uint4 counter = make_uint4((uint32_t)(col >> 3), (uint32_t)row, (uint32_t)offset,
                                     (uint32_t)(offset >> 32) ^ (uint32_t)(row >> 32) ^
                                         (uint32_t)(col >> 35));
    return philox4x32_10(counter, (uint32_t)seed, (uint32_t)(seed >> 32));
}
__device__ __forceinline__ uint32_t word_of(uint4 w, int j) {
    return j == 0 ? w.x : j == 1 ? w.y : j == 2 ? w.z : w.w;
}
// Whether element j (0..7) of a group is kept: its 16-bit draw >= the 16-bit threshold, compared
// in the word's high half (threshold_high = threshold << 16), so the high draw needs no shift.
__device__ __forceinline__ bool draw_keeps(uint4 w, int j, uint32_t threshold_high) {
    const uint32_t word = word_of(w, j >> 1);
    return (j & 1 ? word : word << 16) >= threshold_high;
}

// Which of a thread's tile elements dropout kept: bit i*VEC + k for element v[i][k].
template <typename L> struct keep_bits {
    static_assert(L::ITERS * L::VEC <= 32, "a thread holds at most 32 elements of a tile");
    uint32_t bits;
};

// Dropout's draws for tile col0 of `row`: decide(i, k, kept) for each element v[i][k], kept iff
// its 16-bit draw is at least `threshold` (< 2^16).
template <typename L, typename Decide>
__device__ __forceinline__ void dropout_draws(int64_t row, int64_t col0, uint64_t seed,
                                              uint64_t offset, uint32_t threshold, Decide decide) {
    const uint32_t threshold_high = threshold << 16;
#pragma unroll
    for (int i = 0; i < L::ITERS; i++) {
        const int64_t c = col0 + L::col(i);
        if constexpr (L::VEC % 4 == 0) { // vectors start at multiples of 4
            // one Philox call per group of 8, or per half group where a vector holds 4 (the
            // neighbouring vector's thread draws the same words for the other half)
            constexpr int G = L::VEC % 8 == 0 ? 8 : 4;
#pragma unroll
            for (int g = 0; g < L::VEC; g += G) {
                const uint4 w = dropout_words(seed, offset, row, c + g);
                const int first = G == 8 ? 0 : (int)((c + g) & 4); // the vector's place in its group
#pragma unroll
                for (int j = 0; j < G; j++) decide(i, g + j, draw_keeps(w, first + j, threshold_high));
            }
        } else {
#pragma unroll
            for (int k = 0; k < L::VEC; k++) {
                const uint4 w = dropout_words(seed, offset, row, c + k);
                decide(i, k, draw_keeps(w, (int)((c + k) & 7), threshold_high));
            }
        }
    }
}

// A kept element scaled by `scale`, a dropped one 0. The product is rounded on its own
// (__fmul_rn): never contracted into an FMA with a later add, so s is bit for bit what
// docs/api.md specifies.
__device__ __forceinline__ float dropout_value(float v, bool kept, float scale) {
    return kept ? __fmul_rn(v, scale) : 0.0f;
}

// Dropout in place over tile col0 of `row` as the draws go, keep = which elements were kept.
template <typename L>
__device__ __forceinline__ void dropout(frag<L> &t, keep_bits<L> &keep, int64_t row, int64_t col0,
                                        uint64_t seed, uint64_t offset, uint32_t threshold,
                                        float scale) {
    keep.bits = 0;
    dropout_draws<L>(row, col0, seed, offset, threshold, [&](int i, int k, bool kept) {
        t.v[i][k] = dropout_value(t.v[i][k], kept, scale);
        keep.bits |= (uint32_t)kept << (i * L::VEC + k);
    });
}

// The draws alone, into keep: they need no tile data, so a kernel may make them before it
// loads the tile (then they hold no tile registers, and the loads after them go out together).
template <typename L>
__device__ __forceinline__ void dropout_draw(keep_bits<L> &keep, int64_t row, int64_t col0,
                                             uint64_t seed, uint64_t offset, uint32_t threshold) {
    keep.bits = 0;
    dropout_draws<L>(row, col0, seed, offset, threshold, [&](int i, int k, bool kept) {
        keep.bits |= (uint32_t)kept << (i * L::VEC + k);
    });
}

// Dropout in place by keep bits drawn before (dropout_draw).
template <typename L>
__device__ __forceinline__ void dropout_apply(frag<L> &t, const keep_bits<L> &keep, float scale) {
#pragma unroll
    for (int i = 0; i < L::ITERS; i++)
#pragma unroll
        for (int k = 0; k < L::VEC; k++)
            t.v[i][k] = dropout_value(t.v[i][k], (keep.bits >> (i * L::VEC + k)) & 1u, scale);
}

// Stores the keep bits as bytes (1 kept, 0 dropped) at mask[row * ld + col], in bounds only.
template <typename L>
__device__ __forceinline__ void store_keep(uint8_t *mask, const keep_bits<L> &keep, int64_t row,
                                           int64_t rows, int64_t col0, int64_t cols, int64_t ld) {
    if (row >= rows) return;
    uint8_t *p = mask + row * ld + col0;
    const int64_t limit = cols - col0;
#pragma unroll
    for (int i = 0; i < L::ITERS; i++) {
        const int c = L::col(i);
        const uint32_t b = keep.bits >> (i * L::VEC);
        if constexpr (L::VEC == 4 || L::VEC == 8) {
            // Whole aligned vectors as one 4- or 8-byte store; the row stride (cols) decides
            // whether a row's bytes are aligned, so check the address.
            if (c + L::VEC <= limit && ((uintptr_t)(p + c) % L::VEC) == 0) {
                uint64_t bytes = 0;
#pragma unroll
                for (int k = 0; k < L::VEC; k++) bytes |= (uint64_t)((b >> k) & 1u) << (8 * k);
                if constexpr (L::VEC == 4) *reinterpret_cast<uint32_t *>(p + c) = (uint32_t)bytes;
                else *reinterpret_cast<uint64_t *>(p + c) = bytes;
                continue;
            }
        }
#pragma unroll
        for (int k = 0; k < L::VEC; k++)
            if (c + k < limit) p[c + k] = (uint8_t)((b >> k) & 1u);
    }
}

// ------------------------------------------------------------------------------ reductions
struct op_max {
    __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
    static constexpr float identity = -__builtin_huge_valf();
};
struct op_sum {
    __device__ float operator()(float a, float b) const { return a + b; }
    static constexpr float identity = 0.0f;
};

// Running softmax statistics: max m and sum of exp(x - m).
struct online {
    float m, s;
};
__device__ __forceinline__ online online_combine(online a, online b) {
    const float m = fmaxf(a.m, b.m);
    // An empty side (m == -inf, s == 0) must not turn into exp(-inf - -inf) = NaN.
    const float sa = a.m == m ? a.s : a.s * tile::exp(a.m - m);
    const float sb = b.m == m ? b.s : b.s * tile::exp(b.m - m);
    return online{m, sa + sb};
}
struct op_online {
    __device__ online operator()(online a, online b) const { return online_combine(a, b); }
};

__device__ __forceinline__ float shfl_xor(float v, int mask) {
    return __shfl_xor_sync(0xffffffffu, v, mask);
}
__device__ __forceinline__ online shfl_xor(online v, int mask) {
    return online{__shfl_xor_sync(0xffffffffu, v.m, mask), __shfl_xor_sync(0xffffffffu, v.s, mask)};
}

// Reduce f(element) over the thread's own part of the tile. f's values are folded as they
// come, never held as a second tile: beside t (still live) that would double the registers a
// thread needs, for the whole kernel (log-softmax's sum of exp: 52 -> 32 registers at 16
// values a thread, docs/perf-notes.md K5).
template <typename L, typename Op, typename F>
__device__ __forceinline__ float thread_reduce(const frag<L> &t, Op op, F f) {
    float r = Op::identity;
#pragma unroll
    for (int i = 0; i < L::ITERS; i++)
#pragma unroll
        for (int k = 0; k < L::VEC; k++) r = op(r, f(t.v[i][k]));
    return r;
}
template <typename L, typename Op> __device__ __forceinline__ float thread_reduce(const frag<L> &t, Op op) {
    return thread_reduce(t, op, [](float v) { return v; });
}

// Lane `lane`'s v, to every lane of the warp (any type of whole 32-bit words).
template <typename V> __device__ __forceinline__ V shfl_lane(V v, int lane) {
    static_assert(sizeof(V) % 4 == 0, "whole 32-bit words");
    uint32_t w[sizeof(V) / 4];
    memcpy(w, &v, sizeof w);
#pragma unroll
    for (int i = 0; i < (int)(sizeof(V) / 4); i++) w[i] = __shfl_sync(0xffffffffu, w[i], lane);
    memcpy(&v, w, sizeof w);
    return v;
}

// Whether row_reduce folds more than 4 warps' parts by a butterfly (below): not the online
// softmax's (m, s) pairs, whose 8-warp loop ran 3% slower so (perf-notes K24).
template <typename Op> struct butterfly_fold { static constexpr bool value = true; };
template <> struct butterfly_fold<op_online> { static constexpr bool value = false; };

// Reduce a per-thread value over its row: a butterfly of warp shuffles inside the row's lanes,
// then (rows wider than a warp) one shared-memory exchange among the row's warps, then (a row
// split over a cluster) one exchange through distributed shared memory. Every thread of the
// program must call it (it holds barriers); every thread gets its row's result, the same bits
// in every thread. Up to 4 warps' parts are folded one after another; more (8 to 32) by a
// butterfly over the lanes, lane l holding part l % WARPS_PER_ROW, and lane 0's result taken
// by all (a 512-thread two-pass norm of 4096 columns ran 17% faster without the 15 dependent
// folds a thread, perf-notes K24), except where butterfly_fold says not to.
template <typename L, typename V, typename Op> __device__ __forceinline__ V row_reduce(V v, Op op) {
    constexpr int WIDTH = L::TPR < 32 ? L::TPR : 32;
#pragma unroll
    for (int mask = WIDTH / 2; mask > 0; mask /= 2) v = op(v, shfl_xor(v, mask));
    if constexpr (L::WARPS_PER_ROW > 1 || L::CLUSTER > 1) {
        // Parts: one per warp of the row (ROWS == 1 here), then one per program of the cluster.
        __shared__ V warp_part[L::WARPS_PER_ROW];
        __shared__ V program_part;
        const int warp = threadIdx.x / 32;
        __syncthreads(); // the previous reduction's readers are done with warp_part
        if (threadIdx.x % 32 == 0) warp_part[warp] = v;
        __syncthreads();
        if constexpr (L::WARPS_PER_ROW > 4 && butterfly_fold<Op>::value) {
            static_assert((L::WARPS_PER_ROW & (L::WARPS_PER_ROW - 1)) == 0 && L::WARPS_PER_ROW <= 32,
                          "the butterfly pairs lanes by xor: a power of two of warps, at most 32");
            v = warp_part[threadIdx.x % 32 % L::WARPS_PER_ROW];
#pragma unroll
            for (int mask = L::WARPS_PER_ROW / 2; mask > 0; mask /= 2) v = op(v, shfl_xor(v, mask));
            v = shfl_lane(v, 0);
        } else {
            v = warp_part[0];
#pragma unroll
            for (int w = 1; w < L::WARPS_PER_ROW; w++) v = op(v, warp_part[w]);
        }
        if constexpr (L::CLUSTER > 1) {
#if TILE_HAS_SM90
            namespace cg = cooperative_groups;
            cg::cluster_group cluster = cg::this_cluster();
            if (threadIdx.x == 0) program_part = v;
            cluster.sync(); // every program's part is written
            v = *cluster.map_shared_rank(&program_part, 0);
#pragma unroll
            for (int r = 1; r < L::CLUSTER; r++) v = op(v, *cluster.map_shared_rank(&program_part, r));
            cluster.sync(); // no program leaves or rewrites its part while others read it
#else
            __trap(); // cluster variants are registered for sm_90 only (arch_max 90)
#endif
        }
    }
    return v;
}

// Fold a tile into running statistics: one rescale per tile, not per element.
template <typename L> __device__ __forceinline__ online online_update(online acc, const frag<L> &t) {
    const float tile_max = thread_reduce(t, op_max{});
    const float m = fmaxf(acc.m, tile_max);
    if (m == op_max::identity) return acc; // nothing but masked lanes so far
    float s = acc.m == m ? acc.s : acc.s * tile::exp(acc.m - m);
#pragma unroll
    for (int i = 0; i < L::ITERS; i++)
#pragma unroll
        for (int k = 0; k < L::VEC; k++) s += tile::exp_sub(t.v[i][k], m);
    return online{m, s};
}

// ------------------------------------------------------------------------------ deviations
// This thread's sum of (t - center)^2 over the elements of tile col0 below cols: a whole tile
// (every tile but a row's last) without a per-element bounds test. With the row's mean as
// center this is the second pass of an exact two-pass variance, from registers.
template <typename L>
__device__ __forceinline__ float sq_dev_sum(const frag<L> &t, float center, int64_t col0,
                                            int64_t cols) {
    const int64_t limit = cols - col0;
    float r = 0.0f;
    if (limit >= (int64_t)L::BLOCK_N) {
#pragma unroll
        for (int i = 0; i < L::ITERS; i++)
#pragma unroll
            for (int k = 0; k < L::VEC; k++) r = __fmaf_rn(t.v[i][k] - center, t.v[i][k] - center, r);
    } else {
#pragma unroll
        for (int i = 0; i < L::ITERS; i++)
#pragma unroll
            for (int k = 0; k < L::VEC; k++)
                if (L::col(i) + k < limit) r = __fmaf_rn(t.v[i][k] - center, t.v[i][k] - center, r);
    }
    return r;
}

// ------------------------------------------------------------------------------ moments
// Running mean and sum of squared deviations (m2) of n values, combined pairwise (Chan et al.):
// exact two-pass statistics inside a thread, no catastrophic cancellation across threads.
struct moments {
    float n, mean, m2;
};
__device__ __forceinline__ moments moments_combine(moments a, moments b) {
    if (b.n == 0.0f) return a;
    if (a.n == 0.0f) return b;
    // __fdividef: one reciprocal and one multiply (2 ulp) instead of an IEEE division, which
    // costs some ten instructions on every combine of every reduction step.
    const float n = a.n + b.n, d = b.mean - a.mean, fb = __fdividef(b.n, n);
    return moments{n, a.mean + d * fb, a.m2 + b.m2 + d * d * a.n * fb};
}
struct op_moments {
    __device__ moments operator()(moments a, moments b) const { return moments_combine(a, b); }
};
__device__ __forceinline__ moments shfl_xor(moments v, int mask) {
    return moments{__shfl_xor_sync(0xffffffffu, v.n, mask), __shfl_xor_sync(0xffffffffu, v.mean, mask),
                   __shfl_xor_sync(0xffffffffu, v.m2, mask)};
}

// Folds the in-bounds elements of tile col0 (columns below cols) into acc: this thread's mean
// first, then its squared deviations, from registers. A tile wholly inside the row (every
// tile but a row's last) needs no per-element bounds test. CENTERED false folds the raw sum of
// squares with mean 0 (RMSNorm needs only mean(x^2)): one FFMA an element.
template <typename L, bool CENTERED>
__device__ __forceinline__ moments moments_update(moments acc, const frag<L> &t, int64_t col0,
                                                  int64_t cols) {
    const int64_t limit = cols - col0;
    constexpr int N = L::ITERS * L::VEC;
    const bool whole = limit >= (int64_t)L::BLOCK_N; // uniform over the program
    float n = 0.0f, sum = 0.0f;
    if (whole) {
        n = (float)N;
        if (CENTERED)
#pragma unroll
            for (int i = 0; i < L::ITERS; i++)
#pragma unroll
                for (int k = 0; k < L::VEC; k++) sum += t.v[i][k];
    } else {
#pragma unroll
        for (int i = 0; i < L::ITERS; i++)
#pragma unroll
            for (int k = 0; k < L::VEC; k++)
                if (L::col(i) + k < limit) {
                    n += 1.0f;
                    sum += t.v[i][k];
                }
    }
    if (n == 0.0f) return acc;
    const float mean = !CENTERED ? 0.0f : whole ? sum * (1.0f / N) : __fdividef(sum, n);
    const float m2 = sq_dev_sum<L>(t, mean, col0, cols);
    return moments_combine(acc, moments{n, mean, m2});
}

} // namespace tile

// Grouped matmul's tiles (after the conversions above, which its epilogue uses).
#include "tile_gemm.cuh"
