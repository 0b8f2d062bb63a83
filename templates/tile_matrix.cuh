// Matrix machinery shared by the tensor-core kernels (attention, grouped matmul): mma.sync
// fragments and ldmatrix (sm_80), asynchronous 16-byte copies with zero fill, and Hopper's
// warpgroup products (wgmma) over 128-byte-swizzled shared tiles read through descriptors.
// Kernels reach these through their tile headers (tile_attention.cuh, tile_gemm.cuh); the
// fragment layout: in each 16-row mma fragment, lane = 4 * g + t holds rows g and g + 8,
// columns 8 * j + 2 * t and + 1 of every 8-column tile j (wgmma accumulators likewise, warp w
// of a warpgroup owning its rows 16w..16w+15).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

namespace tile {

__device__ __forceinline__ int lane_id() { return threadIdx.x % 32; }

// The 128 threads of one warpgroup meet at named barrier `id` (1 and up: 0 is __syncthreads),
// the other warpgroups going on.
__device__ __forceinline__ void warpgroup_sync(int id) {
    asm volatile("bar.sync %0, 128;" ::"r"(id) : "memory");
}

// The SFU's base-2 exponential, MUFU.EX2 (relative error ~2^-22; flushes denormals).
__device__ __forceinline__ float exp2_approx(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

// ------------------------------------------------------------------------------ mma.sync (sm_80)
template <typename T> struct mma_type;
template <> struct mma_type<__nv_bfloat16> {
    __device__ static uint32_t pack(float lo, float hi) {
        __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
        return *reinterpret_cast<uint32_t *>(&h);
    }
    __device__ static void mma(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1) {
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, "
                     "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    }
};
template <> struct mma_type<__half> {
    __device__ static uint32_t pack(float lo, float hi) {
        __half2 h = __floats2half2_rn(lo, hi);
        return *reinterpret_cast<uint32_t *>(&h);
    }
    __device__ static void mma(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1) {
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, "
                     "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    }
};

__device__ __forceinline__ void ldmatrix_x4(uint32_t r[4], const void *smem) {
    const unsigned addr = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t r[4], const void *smem) {
    const unsigned addr = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

// ------------------------------------------------------------------------------ copies
// 16 bytes global -> shared without registers, of which the first `bytes` are read and the
// rest written as zeros (tile edges: rows past a matrix, columns past its width), so padded
// lanes hold 0 and never NaN.
__device__ __forceinline__ void copy16_partial(void *smem, const void *global, int bytes) {
    const unsigned dst = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(global), "r"(bytes)
                 : "memory");
}
__device__ __forceinline__ void copy16(void *smem, const void *global, bool valid) {
    copy16_partial(smem, global, valid ? 16 : 0);
}
__device__ __forceinline__ void copy_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }

// Calls copy(r, c) for each 16-byte chunk (row r, column chunk c) of a ROWS x CHUNKS tile
// that this thread copies, of a program of THREADS threads: every thread of the program takes
// part and threadIdx.x < THREADS (the grids' `threads`, which the layouts assert). Where
// THREADS is a multiple of CHUNKS a thread's chunks share one column and its rows step by
// THREADS / CHUNKS in a count of rounds fixed at compile time (r0 < STEP: only a ragged last
// round needs a bound test): in a loop bounded by threadIdx.x each chunk took a branch, a
// reconvergence and a division, most of a decode kernel's instructions and 12-43% of the
// grouped matmul's `mma` rate (perf-notes A53, G23). Otherwise (attention's heads of 96) that
// loop.
template <int THREADS, int ROWS, int CHUNKS, typename Copy>
__device__ __forceinline__ void for_thread_chunks(Copy copy) {
    if constexpr (THREADS % CHUNKS == 0) {
        constexpr int STEP = THREADS / CHUNKS, ROUNDS = (ROWS + STEP - 1) / STEP;
        const int c = (int)threadIdx.x % CHUNKS, r0 = (int)threadIdx.x / CHUNKS;
#pragma unroll
        for (int j = 0; j < ROUNDS; j++) {
            if constexpr (ROWS % STEP != 0)
                if (r0 + j * STEP >= ROWS) break; // a ragged last round
            copy(r0 + j * STEP, c);
        }
    } else {
#pragma unroll
        for (int i = threadIdx.x; i < ROWS * CHUNKS; i += THREADS) copy(i / CHUNKS, i % CHUNKS);
    }
}

// Waits for this thread's copies but the PENDING most recent groups, makes them visible to
// the tensor cores' (async) proxy, then waits for the program: the tiles the next products
// read are whole and every warp is done with the stages the next copies overwrite.
template <int PENDING> __device__ __forceinline__ void wg_copy_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("cp.async.wait_group %0;\n\tfence.proxy.async.shared::cta;" ::"n"(PENDING) : "memory");
#else
    asm volatile("cp.async.wait_group %0;" ::"n"(PENDING) : "memory"); // never runs: sm_90 only
#endif
    __syncthreads();
}

// ------------------------------------------------------------------------------ wgmma (sm_90a)
template <typename T, int N> struct wgmma_op;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define TILE_HAS_WGMMA 1
#include "wgmma_ops.inc"
#else
#define TILE_HAS_WGMMA 0
#endif

// Byte offset of 16-byte chunk c of row r in a tile of padded rows of PITCH elements of T.
template <int PITCH, typename T> __device__ __forceinline__ uint32_t padded(int r, int c) {
    return (uint32_t)(r * PITCH + c * 8) * (uint32_t)sizeof(T);
}
// Swizzled tiles: rows of 64 two-byte columns (128 bytes) in 8-row atoms whose 16-byte chunks are
// XOR-permuted by row; a wider tile is a sequence of 64-column blocks of `rows` rows each.
// Byte offset of 16-byte chunk c (of the row's) of row r in a swizzled tile of `rows` rows.
__device__ __forceinline__ uint32_t swizzled(int rows, int r, int c) {
    return (uint32_t)((c >> 3) * rows * 128 + r * 128 + (((c & 7) ^ (r & 7)) << 4));
}

// Matrix descriptor of a swizzled tile at shared-memory address `addr`: 128-byte swizzle; lbo
// and sbo in bytes.
__device__ __forceinline__ uint64_t wg_desc_shared(uint32_t addr, uint32_t lbo, uint32_t sbo) {
    return (uint64_t)((addr & 0x3FFFF) >> 4) | (uint64_t)((lbo & 0x3FFFF) >> 4) << 16 |
           (uint64_t)((sbo & 0x3FFFF) >> 4) << 32 | (uint64_t)1 << 62;
}
// The same of a tile at `p`, a generic pointer into shared memory.
__device__ __forceinline__ uint64_t wg_desc(const void *p, uint32_t lbo, uint32_t sbo) {
    return wg_desc_shared((uint32_t)__cvta_generic_to_shared(p), lbo, sbo);
}

// The descriptor of the tile `bytes` past the one `d` describes (same strides): the start
// address is the low 14 bits of d, in 16-byte units, and a program's offset in shared memory
// (the address's low 18 bits; the cluster rank lies above them) stays below 2^18 bytes, so
// adding to the low word never carries out of that field. Built from one base
// descriptor a product, a k-step's costs one add where wg_desc costs five instructions (perf-notes A25).
__device__ __forceinline__ uint64_t wg_desc_at(uint64_t d, uint32_t bytes) {
    return (d & 0xFFFFFFFF00000000ull) | (uint32_t)((uint32_t)d + (bytes >> 4));
}

// Keeps the compiler from moving reads or writes of wgmma accumulators across the asynchronous
// products (they are in flight between issue and wait).
template <int N> __device__ __forceinline__ void wg_fence_operands(float (&d)[N][4]) {
#pragma unroll
    for (int j = 0; j < N; j++)
#pragma unroll
        for (int e = 0; e < 4; e++) asm volatile("" : "+f"(d[j][e])::"memory");
}
// Waits until at most PENDING of this warpgroup's committed product groups are in flight
// (groups complete in order).
template <int PENDING> __device__ __forceinline__ void wg_wait_groups() {
#if TILE_HAS_WGMMA
    asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(PENDING) : "memory");
#endif
}

// Keeps the compiler from moving writes of operand registers of an in-flight product.
template <int K> __device__ __forceinline__ void wg_fence_registers(uint32_t (&r)[K][4]) {
#pragma unroll
    for (int k = 0; k < K; k++)
#pragma unroll
        for (int e = 0; e < 4; e++) asm volatile("" : "+r"(r[k][e])::"memory");
}

// ------------------------------------------------------------------------------ barriers, TMA
// mbarriers (sm_90): a producer's copies complete a phase with their byte count; consumers
// arrive to hand a buffer back. Waits spin on the phase parity.
__device__ __forceinline__ void mbarrier_init(uint64_t *bar, uint32_t arrivals) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"((uint32_t)__cvta_generic_to_shared(bar)),
                 "r"(arrivals)
                 : "memory");
#else
    (void)bar, (void)arrivals;
#endif
}
// Makes initialized barriers visible to the copy engine and the other threads (then a barrier).
__device__ __forceinline__ void mbarrier_init_fence() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
#endif
}
// (The _at forms take the barrier's shared-memory address, made once by a caller whose loop
// would otherwise convert a generic pointer every pass: perf-notes G27.)
__device__ __forceinline__ void mbarrier_wait_at(uint32_t addr, uint32_t parity) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    uint32_t done;
    do {
        asm volatile("{\n\t.reg .pred p;\n\t"
                     "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
                     "selp.u32 %0, 1, 0, p;\n\t}"
                     : "=r"(done)
                     : "r"(addr), "r"(parity)
                     : "memory");
    } while (!done);
#else
    (void)addr, (void)parity;
#endif
}
__device__ __forceinline__ void mbarrier_wait(uint64_t *bar, uint32_t parity) {
    mbarrier_wait_at((uint32_t)__cvta_generic_to_shared(bar), parity);
}
__device__ __forceinline__ void mbarrier_arrive_at(uint32_t addr) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(addr) : "memory");
#else
    (void)addr;
#endif
}
__device__ __forceinline__ void mbarrier_arrive(uint64_t *bar) {
    mbarrier_arrive_at((uint32_t)__cvta_generic_to_shared(bar));
}
// One arrival that also announces `bytes` of copies completing on the barrier's phase.
__device__ __forceinline__ void mbarrier_expect_bytes(uint64_t *bar, uint32_t bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(
                     (uint32_t)__cvta_generic_to_shared(bar)),
                 "r"(bytes)
                 : "memory");
#else
    (void)bar, (void)bytes;
#endif
}
// Tensor-memory-accelerator copies of a box of a tensor map (its coordinates innermost first)
// into shared memory, completing on `bar`; parts of the box outside the tensor read as zeros.
__device__ __forceinline__ void tma_load_2d(void *smem, const void *map, int32_t c0, int32_t c1, uint64_t *bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes "
                 "[%0], [%1, {%2, %3}], [%4];" ::"r"((uint32_t)__cvta_generic_to_shared(smem)),
                 "l"(map), "r"(c0), "r"(c1), "r"((uint32_t)__cvta_generic_to_shared(bar))
                 : "memory");
#else
    (void)smem, (void)map, (void)c0, (void)c1, (void)bar;
#endif
}
__device__ __forceinline__ void tma_load_3d(void *smem, const void *map, int32_t c0, int32_t c1,
                                            int32_t c2, uint64_t *bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes "
                 "[%0], [%1, {%2, %3, %4}], [%5];" ::"r"((uint32_t)__cvta_generic_to_shared(smem)),
                 "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"((uint32_t)__cvta_generic_to_shared(bar))
                 : "memory");
#else
    (void)smem, (void)map, (void)c0, (void)c1, (void)c2, (void)bar;
#endif
}
__device__ __forceinline__ void tma_load_4d(void *smem, const void *map, int32_t c0, int32_t c1,
                                            int32_t c2, int32_t c3, uint64_t *bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes "
                 "[%0], [%1, {%2, %3, %4, %5}], [%6];" ::"r"((uint32_t)__cvta_generic_to_shared(smem)),
                 "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"((uint32_t)__cvta_generic_to_shared(bar))
                 : "memory");
#else
    (void)smem, (void)map, (void)c0, (void)c1, (void)c2, (void)c3, (void)bar;
#endif
}
// The reverse: a box of shared memory out to the tensor (the parts of the box outside the tensor
// are not written), in a bulk group of the issuing thread (bulk_commit closes the group).
__device__ __forceinline__ void tma_store_2d(const void *map, int32_t c0, int32_t c1, const void *smem) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];"
                 ::"l"(map), "r"(c0), "r"(c1), "r"((uint32_t)__cvta_generic_to_shared(smem))
                 : "memory");
#else
    (void)map, (void)c0, (void)c1, (void)smem;
#endif
}
__device__ __forceinline__ void tma_store_4d(const void *map, int32_t c0, int32_t c1, int32_t c2,
                                             int32_t c3, const void *smem) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("cp.async.bulk.tensor.4d.global.shared::cta.bulk_group [%0, {%1, %2, %3, %4}], [%5];"
                 ::"l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(c3),
                 "r"((uint32_t)__cvta_generic_to_shared(smem))
                 : "memory");
#else
    (void)map, (void)c0, (void)c1, (void)c2, (void)c3, (void)smem;
#endif
}
// The issuing thread's bulk groups: close the open one; wait until all but the latest PENDING
// have read their shared memory (which may then be written again); wait until all have
// completed.
__device__ __forceinline__ void bulk_commit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
#endif
}
template <int PENDING = 0> __device__ __forceinline__ void bulk_wait_read() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(PENDING) : "memory");
#endif
}
__device__ __forceinline__ void bulk_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
#endif
}
// Makes this thread's shared-memory writes visible to the bulk copies it or others issue next.
__device__ __forceinline__ void fence_async_shared() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
#endif
}
// Four 8 x 8 matrices of 16-bit values from the mma fragment layout (register i: matrix i, two
// columns of one row a lane) to shared memory; lane l gives the address of row l % 8 of matrix
// l / 8 (16 contiguous bytes).
__device__ __forceinline__ void stmatrix_x4(void *row, const uint32_t (&r)[4]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};"
                 ::"r"((uint32_t)__cvta_generic_to_shared(row)), "r"(r[0]), "r"(r[1]), "r"(r[2]), "r"(r[3])
                 : "memory");
#else
    (void)row, (void)r;
#endif
}

// Moves a slot index `by` slots on (0 <= by <= N) in a ring of N, flipping the phase parity
// its barrier completes where it wraps.
template <int N> __device__ __forceinline__ void advance_slot(int &slot, uint32_t &parity, int by) {
    slot += by;
    if (slot >= N) {
        slot -= N;
        parity ^= 1;
    }
}

// A ring of STAGES shared-memory buffers between one producer thread (tensor-memory-accelerator
// copies) and consumer warps: full[s] completes when stage s's copies landed (the producer's
// one arrival with the byte count), empty[s] when every consumer warp is done reading it. A
// stage's uses alternate phase parity; the producer's first wait on each empty barrier passes
// at once (parity 1 of a fresh barrier counts as complete). Each side walks the stages in
// order with its own copy of the ring; `released` is the consumers' oldest stage still held.
template <int STAGES> struct stage_ring {
    uint64_t *full, *empty;
    int stage, released;
    uint32_t phase;
    // full[0] as a shared-memory address (empty[0] lies STAGES * 8 bytes on), taken from the
    // barrier array itself (the program's cluster rank and a fixed offset), so a loop's waits
    // and hand-backs by full_of / empty_of convert no generic pointer (perf-notes G27)
    uint32_t full_at;
    __device__ uint32_t full_of(int s) const { return full_at + s * 8; }
    __device__ uint32_t empty_of(int s) const { return full_at + (STAGES + s) * 8; }
    // the empty barrier of the stage before s in ring order
    __device__ uint32_t empty_before(int s) const { return empty_of(s == 0 ? STAGES - 1 : s - 1); }
    // advance_slot by one, written for one: in that general form ptxas ran short of registers
    // on the head-64 `ws` attention kernels and serialized their products (perf-notes G31)
    __device__ void advance() {
        if (++stage == STAGES) {
            stage = 0;
            phase ^= 1;
        }
    }
    // Producer: waits for the stage to be free, announces `bytes` of copies completing on its
    // full barrier (returned), and moves on.
    __device__ uint64_t *acquire(uint32_t bytes) {
        mbarrier_wait(&empty[stage], phase ^ 1);
        uint64_t *bar = &full[stage];
        mbarrier_expect_bytes(bar, bytes);
        advance();
        return bar;
    }
    // Consumers: waits for the next stage's copies and moves on; returns that stage.
    __device__ int take() {
        mbarrier_wait(&full[stage], phase);
        const int s = stage;
        advance();
        return s;
    }
    // Consumer warp: hands the oldest stage it took back (lane 0 arrives for the warp), once
    // every product reading it has completed.
    __device__ void release() {
        if (lane_id() == 0) mbarrier_arrive(&empty[released]);
        released = released + 1 == STAGES ? 0 : released + 1;
    }
};
// Collective, once per ring of a program (ID tells one kernel's rings apart): the barriers,
// initialized and visible to every thread.
template <int STAGES, int CONSUMER_WARPS, int ID = 0>
__device__ __forceinline__ stage_ring<STAGES> stage_ring_start() {
    __shared__ __align__(8) uint64_t barriers[2 * STAGES];
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; s++) {
            mbarrier_init(&barriers[s], 1);
            mbarrier_init(&barriers[STAGES + s], CONSUMER_WARPS);
        }
        mbarrier_init_fence();
    }
    __syncthreads();
    return stage_ring<STAGES>{barriers, barriers + STAGES, 0, 0, 0, (uint32_t)__cvta_generic_to_shared(barriers)};
}

// A caller's zeroed work counter (64-byte workspaces: [0] numbers taken past the grid's first,
// [1] programs done), from which persistent programs take their next tile or block as they
// finish (perf-notes G11, A28). counter_take: the next number, gridDim.x on (each program's
// first is its blockIdx.x). counter_finish: once a program's last take is done; the last program
// out zeroes both words for the next call.
__device__ __forceinline__ int64_t counter_take(unsigned long long *counter) {
    return gridDim.x + (int64_t)atomicAdd(counter, 1ull);
}
__device__ __forceinline__ void counter_finish(unsigned long long *counter) {
    __threadfence();
    if (atomicAdd(counter + 1, 1ull) == gridDim.x - 1) {
        __threadfence(); // every program's last take is ordered before these stores
        counter[0] = 0;
        counter[1] = 0;
    }
}

// Warpgroup register budgets (sm_90a): a producer warpgroup gives registers back so the
// consumers' accumulators fit. Every thread of the warpgroup executes it.
template <int REGS> __device__ __forceinline__ void warpgroup_registers_release() {
#if TILE_HAS_WGMMA
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(REGS));
#endif
}
template <int REGS> __device__ __forceinline__ void warpgroup_registers_claim() {
#if TILE_HAS_WGMMA
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(REGS));
#endif
}

} // namespace tile
