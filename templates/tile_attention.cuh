// Device primitives behind the tile language's attention macros (templates/tile.m4,
// "attention"): tensor-core tiles (mma.sync m16n8k16, ldmatrix), asynchronous tile copies
// (cp.async with zero fill) and the per-thread layout of the flash-attention state. The
// kernels in kernels/attention.tile name only the tile operations.
//
// Layout of a program: WARPS warps, each owning WARP_ROWS query rows (MF fragments of 16) of
// the BLOCK_M-row query block (BLOCK_M = WARP_ROWS * WARPS). Key and value tiles of BLOCK_N rows are shared by all warps through
// shared memory. A warp's scores S (16 x BLOCK_N) and output O (16 x HEAD_DIM) live in
// registers as mma accumulator fragments: in each 16-row fragment, lane = 4 * g + t holds rows
// g and g + 8, columns 8 * j + 2 * t and + 1 of every 8-column tile j.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#include "attention_args.h"
#include "tile_matrix.cuh"

namespace tile {
namespace attn {

// ------------------------------------------------------------------------------ layout
template <int HEAD_DIM_, int BLOCK_M_, int BLOCK_N_, int WARPS_, int WARP_ROWS_> struct layout {
    static constexpr int HEAD_DIM = HEAD_DIM_, BLOCK_M = BLOCK_M_, BLOCK_N = BLOCK_N_;
    static constexpr bool HANDED = false;          // every warp walks the blocks (ws_layout)
    static constexpr bool FOLDS = true;            // takes query heads folded into rows (a.fold)
    static constexpr bool CAUSAL_BLOCKS_TO_END = false; // (ws_layout)
    static constexpr int WARPS = WARPS_, THREADS = WARPS * 32;
    static constexpr int PROGRAM_THREADS = THREADS; // (as the grid names them)
    static constexpr int FIRST_WARP = 0;           // every warp owns query rows
    static constexpr int WARP_ROWS = WARP_ROWS_;   // query rows a warp owns
    static constexpr int MF = WARP_ROWS / 16;      // its 16-row mma fragments: each key or
                                                   // value fragment read from shared memory
                                                   // feeds MF products
    static constexpr int CHUNKS = HEAD_DIM / 8;    // 16-byte chunks per row
    static constexpr int PITCH = HEAD_DIM + 8;     // shared row pitch in elements: the 16-byte
                                                   // pad puts the 8 rows of an ldmatrix on
                                                   // distinct banks
    static constexpr int N_TILES = BLOCK_N / 8;    // 8-column tiles of S
    static constexpr int D_TILES = HEAD_DIM / 8;   // 8-column tiles of O
    static constexpr bool Q_IN_REGISTERS = MF == 1 && HEAD_DIM <= 128; // else re-read from
                                                                      // shared memory
    static constexpr int Q_OFFSET = 0, K_OFFSET = BLOCK_M * PITCH,
                         V_OFFSET = (BLOCK_M + BLOCK_N) * PITCH;
    static constexpr int SMEM_ELEMENTS = (BLOCK_M + 2 * BLOCK_N) * PITCH;
    static_assert(BLOCK_M == WARP_ROWS * WARPS && WARP_ROWS % 16 == 0, "warps own 16-row fragments");
    static_assert(HEAD_DIM % 16 == 0 && BLOCK_N % 16 == 0, "whole mma k-steps");
};

// Waits for this thread's copies, then the program's: the tiles are whole and every warp is
// done with what it read before.
__device__ __forceinline__ void copy_wait_all() {
    asm volatile("cp.async.wait_group 0;" ::: "memory");
    __syncthreads();
}

// ------------------------------------------------------------------------------ program
// The (batch, head, query block) of this program and the extents it works on.
struct block {
    int32_t b, h, hk;
    int64_t q_start, k_start; // token offsets of the sequence (varlen) or 0
    int32_t seq_q, seq_k;
    int32_t m0;               // first query row of the block
    int32_t n_end;            // key tiles to visit: [0, n_end)
    int32_t diagonal;         // causal offset seq_k - seq_q: key j sees query i iff j <= i + diagonal
    int32_t split;            // a.splits > 1: which share of the keys (from k_start, seq_k of them)
    bool empty;               // no query row of this block exists
};
// A block of the layouts that take query heads folded into rows (L::FOLDS; a.fold > 1: row
// i x head_rows + s is query s of the block's i-th folded head). A type of its own, so the
// warp-specialized kernels' blocks stay as they were (two more fields moved their SASS).
struct folded_block : block {
    int32_t head_rows;        // a.fold > 1: queries a folded head; else 0
    int32_t first_query;      // the least query position of the block's rows (the causal mask's)
};
template <typename B> constexpr bool folds_rows = false;
template <> constexpr bool folds_rows<folded_block> = true;

// The walk's divisions, by numbers fixed for the call. At head dims to 64, whose blocks are short,
// the integer divisions (some 20 dependent instructions each) delayed the consumers between
// blocks: the multiply form measured +1.5-2% there; at head dim 128 it measured level to -2%
// (GQA, no cause found), so there the division stays (perf-notes A30).
template <typename L>
__device__ __forceinline__ uint32_t walk_divide(uint32_t n, const tile_divisor &d) {
    if constexpr (L::HEAD_DIM <= 64) return tile_divide(n, d);
    else return n / d.divisor;
}

// How far a causal sequence's blocks move back (L::CAUSAL_BLOCKS_TO_END): where its last block
// would hold one warpgroup's rows (seq_q % BLOCK_M in 1..64), by the other warpgroups' rows,
// so the last block is whole and the first has one busy warpgroup, whose rows see the fewest
// keys. Where two warpgroups would be busy it stays (moved, 2048 rows measured 1.5% slower:
// perf-notes A63). The blocks a sequence needs stay ceil(seq_q / BLOCK_M). Q's copy of the
// first block reads zeros before row 0 at fixed lengths (the map's bounds), but a varlen
// window reads the tokens before the sequence: those of earlier sequences, unused, where the
// sequence starts at least `shift` tokens into the tensor; before the tensor otherwise, so
// there the blocks stay. The dispatch's walk model moves them too (src/attention.c,
// causal_block_shift).
template <typename L> __device__ __forceinline__ int32_t causal_block_shift(int32_t seq_q) {
    const int32_t rows = seq_q % L::BLOCK_M; // the last block's
    return rows > 0 && rows <= 64 ? L::BLOCK_M - 64 : 0;
}

// Query block number pid of the launch (a program's own with one block each: blockIdx.x), or
// with a.paired position pid = blockIdx.x + turn * gridDim.x of a persistent program's causal walk.
// 32-bit arithmetic: the host keeps the blocks of a call at 2^30 or fewer (a 64-bit division is a
// called routine, and a program computes its next block between two of its blocks).
template <typename L>
__device__ __forceinline__ block program_block_at(const tile_attention_kernel_args &a, int64_t pid,
                                                  int64_t turn) {
    block k;
    // Blocks come in groups of head_group (batch, head) pairs, every query block of a group
    // before the next group: the K and V the programs in flight read stay in L2. Within a group
    // the longest blocks come first, heads fastest; or with a.blocks_fastest (full calls of
    // equal blocks, whose order cannot unbalance the walk; 2: of a ragged last block on a fixed
    // walk, each head's blocks turned) head by head, its blocks in a row: the programs that
    // read one head's K and V at once then run side by side, and L2 serves them with a fifth
    // fewer reads (perf-notes A57, A60).
    const uint32_t pairs = (uint32_t)a.heads_q * (uint32_t)a.batch, group_pairs = (uint32_t)a.head_group;
    const uint32_t per_unit = a.paired ? (a.m_blocks + 1) / 2 : a.m_blocks; // units of a (batch, head)
    uint32_t unit = (uint32_t)pid, second = 0;
    if (a.paired) {
        // Causal blocks differ in work (the diagonal), and a static walk must keep the programs'
        // sums equal: a unit is the long block m_blocks - 1 - j then the short block j of one
        // (batch, head), taken by one program in two consecutive turns of the walk.
        unit = blockIdx.x + (uint32_t)(turn >> 1) * gridDim.x;
        second = (uint32_t)turn & 1;
    }
    const bool past = unit >= pairs * per_unit; // the walk's last turns: past the last unit
    if (past) unit = 0;
    const uint32_t group = walk_divide<L>(unit, a.group_units);
    const uint32_t first = group * group_pairs, in_group = unit - first * per_unit;
    const tile_divisor size = pairs - first < group_pairs ? a.last_group_pairs : a.group_pairs;
    int32_t j = (int32_t)walk_divide<L>(in_group, size);
    uint32_t pair = first + in_group - (uint32_t)j * size.divisor; // b * heads_q + h
    if (a.blocks_fastest) { // (never paired: per_unit is m_blocks)
        const uint32_t head = walk_divide<L>(in_group, a.m_blocks_div);
        j = (int32_t)(in_group - head * per_unit);
        pair = first + head;
        if (a.blocks_fastest == 2) {
            // A ragged last block: a fixed walk over heads of m_blocks blocks in a row would
            // give some programs that block every turn (when gridDim.x is a multiple of
            // m_blocks). Each head's blocks turn by the walk's turn at its first block, so a
            // program's block index moves on each turn and the short blocks spread over all.
            const uint32_t turned = walk_divide<L>(pair * per_unit, a.programs_div); // / gridDim.x
            j += (int32_t)(turned - walk_divide<L>(turned, a.m_blocks_div) * per_unit);
            if (j >= a.m_blocks) j -= a.m_blocks;
        }
    }
    // Longest first: a causal call's last blocks see the most keys; a full call's last block may
    // be short (a ragged end), so with a block counter, whose programs take the next block as
    // they finish, it goes last (the fixed walk keeps one order, perf-notes A28; only layouts
    // that hand blocks over take a counter).
    const bool last_longest = !L::HANDED || a.causal || !a.block_counter;
    const int32_t mb = second ? j : last_longest ? a.m_blocks - 1 - j : j;
    const bool none = past || (second && mb == a.m_blocks - 1 - j); // or a middle block's twin
    k.b = (int32_t)walk_divide<L>(pair, a.heads_q_div);
    k.h = (int32_t)(pair - (uint32_t)k.b * (uint32_t)a.heads_q);
    k.hk = (int32_t)walk_divide<L>((uint32_t)k.h, a.heads_per_kv);
    k.split = 0;
    if (a.splits > 1) { // the walk's batches are (batch, split) pairs, splits fastest
        const int32_t b = k.b / a.splits;
        k.split = k.b - b * a.splits;
        k.b = b;
    }
    if (a.cu_seqlens_q) {
        k.q_start = a.cu_seqlens_q[k.b];
        k.seq_q = a.cu_seqlens_q[k.b + 1] - (int32_t)k.q_start;
        k.k_start = a.cu_seqlens_k[k.b];
        k.seq_k = a.cu_seqlens_k[k.b + 1] - (int32_t)k.k_start;
    } else {
        k.q_start = k.k_start = 0;
        k.seq_q = a.seqlen_q;
        k.seq_k = a.seqlen_k;
    }
    k.m0 = mb * L::BLOCK_M;
    if constexpr (L::CAUSAL_BLOCKS_TO_END)
        if (a.causal) {
            const int32_t shift = causal_block_shift<L>(k.seq_q);
            if (!a.cu_seqlens_q || k.q_start >= shift) k.m0 -= shift;
        }
    k.empty = none || k.m0 >= k.seq_q;
    k.diagonal = k.seq_k - k.seq_q;
    if (a.splits > 1) { // keys from the split's first, in its own numbering, so the diagonal
                        // moves back by as many (a short sequence's last splits see none)
        const int32_t skip = k.split * a.split_keys;
        k.k_start += skip;
        k.diagonal -= skip;
        k.seq_k = max(0, min(a.split_keys, k.seq_k - skip));
    }
    int32_t n_end = (k.seq_k + L::BLOCK_N - 1) / L::BLOCK_N;
    if (a.causal) {
        const int32_t last_row = min(k.m0 + L::BLOCK_M, k.seq_q) - 1;
        const int32_t last_key = last_row + k.diagonal; // the last key any row here sees
        n_end = last_key < 0 ? 0 : min(n_end, last_key / L::BLOCK_N + 1);
    }
    k.n_end = n_end;
    return k;
}

// This program's block (one a program), with its rows' folded heads where L takes them: a
// fixed-length call's seqlen_q counts the folded rows; a varlen one's cu_seqlens_q count a head's
// queries, so its rows are a.fold times those (whether the block has any decided again: with one
// program a block, program_block_at's other empty blocks, the persistent walks', never occur),
// and its diagonal (program_block_at's) is right. The host folds a block's rows at most
// (FOLD_ROWS), but any count works.
template <typename L>
__device__ __forceinline__ auto program_block(const tile_attention_kernel_args &a) {
    if constexpr (!L::FOLDS) {
        return program_block_at<L>(a, blockIdx.x, 0);
    } else {
        folded_block k{program_block_at<L>(a, blockIdx.x, 0), 0, 0};
        k.first_query = k.m0;
        if (a.fold < 2) return k;
        if (a.cu_seqlens_q) {
            k.head_rows = k.seq_q;
            k.seq_q *= a.fold;
            k.empty = k.m0 >= k.seq_q;
        } else {
            k.head_rows = k.seq_q / a.fold;
            k.diagonal += k.seq_q - k.head_rows;
        }
        // the block's query positions: every one where its rows span two heads
        int32_t last_row = min(k.m0 + L::BLOCK_M, k.seq_q) - 1;
        const int32_t first_head = k.m0 / max(k.head_rows, 1), last_head = last_row / max(k.head_rows, 1);
        const bool one = first_head == last_head;
        k.first_query = one ? k.m0 - first_head * k.head_rows : 0;
        last_row = one ? last_row - last_head * k.head_rows : k.head_rows - 1;
        if (a.causal) {
            const int32_t last_key = last_row + k.diagonal;
            const int32_t n_end = (k.seq_k + L::BLOCK_N - 1) / L::BLOCK_N;
            k.n_end = last_key < 0 ? 0 : min(n_end, last_key / L::BLOCK_N + 1);
        }
        return k;
    }
}
// Positions of the launch's walk: every (batch, head)'s m_blocks (persistent programs walk them),
// or with a.paired every program's turns over whole units of two blocks.
__device__ __forceinline__ int64_t attention_walk(const tile_attention_kernel_args &a) {
    const uint32_t pairs = (uint32_t)a.heads_q * (uint32_t)a.batch;
    if (!a.paired) return (int64_t)a.m_blocks * pairs;
    const uint32_t units = pairs * ((a.m_blocks + 1) / 2);
    return 2 * (int64_t)gridDim.x * ((units + gridDim.x - 1) / gridDim.x);
}

// The least query position of block k's rows.
template <typename B> __device__ __forceinline__ int32_t first_query(const B &k) {
    if constexpr (folds_rows<B>) return k.first_query;
    return k.m0;
}
// Whether key tile n has keys past the sequence or, causal, above the diagonal of a row at
// first_row or later.
template <typename L, typename B>
__device__ __forceinline__ bool key_tile_masked(const B &k, int32_t n, int32_t first_row,
                                                int32_t causal) {
    const int32_t last_key = n * L::BLOCK_N + L::BLOCK_N - 1;
    return last_key >= k.seq_k || (causal && last_key > first_row + k.diagonal);
}
// Whether key tile n has elements outside the sequence or above the causal diagonal.
template <typename L, typename B>
__device__ __forceinline__ bool tile_needs_mask(const B &k, int32_t n, int32_t causal) {
    return key_tile_masked<L>(k, n, first_query(k), causal);
}

// Query row `row` of block k: its offset in q, o or lse, whose queries lie `seq` and whose
// folded heads lie `fold` elements apart (k.head_rows > 0: row i x head_rows + s is query s of
// the block's i-th folded head; else the row is the query).
template <typename B>
__device__ __forceinline__ int64_t query_offset(const B &k, int32_t row, int64_t seq, int64_t fold) {
    if constexpr (folds_rows<B>)
        if (k.head_rows) {
            const int32_t head = row / k.head_rows;
            return (int64_t)head * fold + (int64_t)(row - head * k.head_rows) * seq;
        }
    return (int64_t)row * seq;
}
// The query position of row `row` of block k (the causal mask's).
template <typename B> __device__ __forceinline__ int32_t query_position(const B &k, int32_t row) {
    if constexpr (folds_rows<B>)
        if (k.head_rows) return row % k.head_rows;
    return row;
}

// ------------------------------------------------------------------------------ copies
// Starts copying rows [row0, row0 + ROWS) of a [seq, head_dim] slab (row r at base +
// row_offset(r) elements) into shared memory, chunk (r, c) at byte at(r, c) of `dst`; rows >=
// rows_valid and columns >= head_dim become zeros. A tile inside the sequence at the layout's
// full head_dim skips the test a chunk (perf-notes A55).
template <typename L, int ROWS, typename T, typename RowOffset, typename At>
__device__ __forceinline__ void copy_rows(unsigned char *dst, At at, const T *base,
                                          RowOffset row_offset, int32_t row0, int32_t rows_valid,
                                          int32_t head_dim) {
    if (head_dim == L::CHUNKS * 8 && row0 + ROWS <= rows_valid) {
        for_thread_chunks<L::THREADS, ROWS, L::CHUNKS>([&](int r, int c) {
            copy16(dst + at(r, c), base + row_offset(row0 + r) + c * 8, true);
        });
        return;
    }
    const int chunks_valid = head_dim / 8;
    for_thread_chunks<L::THREADS, ROWS, L::CHUNKS>([&](int r, int c) {
        const bool valid = c < chunks_valid && row0 + r < rows_valid;
        const T *src = valid ? base + row_offset(row0 + r) + c * 8 : base;
        copy16(dst + at(r, c), src, valid);
    });
}
// copy_rows into padded rows of L::PITCH elements (the mma.sync path).
template <typename L, int ROWS, typename T, typename RowOffset>
__device__ __forceinline__ void copy_padded_tile(T *smem, const T *base, RowOffset row_offset,
                                                 int32_t row0, int32_t rows_valid, int32_t head_dim) {
    copy_rows<L, ROWS>(reinterpret_cast<unsigned char *>(smem),
                       [](int r, int c) { return padded<L::PITCH, T>(r, c); }, base, row_offset,
                       row0, rows_valid, head_dim);
}
// Rows `ld` elements apart (keys and values).
struct row_stride {
    int64_t ld;
    __device__ int64_t operator()(int32_t row) const { return (int64_t)row * ld; }
};
// Block k's query rows in q (folded heads, query_offset).
template <typename B> struct query_rows {
    const B &k;
    int64_t seq, fold;
    __device__ int64_t operator()(int32_t row) const { return query_offset(k, row, seq, fold); }
};

template <typename L, typename T> struct smem_tiles {
    T *q, *k, *v;
};
template <typename L, typename T> __device__ __forceinline__ smem_tiles<L, T> shared_tiles() {
    extern __shared__ __align__(16) unsigned char tile_dynamic_smem[];
    T *base = reinterpret_cast<T *>(tile_dynamic_smem);
    return smem_tiles<L, T>{base + L::Q_OFFSET, base + L::K_OFFSET, base + L::V_OFFSET};
}

template <typename T>
__device__ __forceinline__ const T *q_slab(const tile_attention_kernel_args &a, const block &k) {
    return (const T *)a.q + (a.cu_seqlens_q ? 0 : (int64_t)k.b * a.q_batch) + k.q_start * a.q_seq +
           (int64_t)k.h * a.q_head;
}
template <typename T>
__device__ __forceinline__ const T *k_slab(const tile_attention_kernel_args &a, const block &k) {
    return (const T *)a.k + (a.cu_seqlens_k ? 0 : (int64_t)k.b * a.k_batch) + k.k_start * a.k_seq +
           (int64_t)k.hk * a.k_head;
}
template <typename T>
__device__ __forceinline__ const T *v_slab(const tile_attention_kernel_args &a, const block &k) {
    return (const T *)a.v + (a.cu_seqlens_k ? 0 : (int64_t)k.b * a.v_batch) + k.k_start * a.v_seq +
           (int64_t)k.hk * a.v_head;
}

template <typename L, typename T, typename B>
__device__ __forceinline__ void copy_q(const smem_tiles<L, T> &s, const tile_attention_kernel_args &a,
                                       const B &k) {
    copy_padded_tile<L, L::BLOCK_M>(s.q, q_slab<T>(a, k), query_rows<B>{k, a.q_seq, a.q_fold},
                                    k.m0, k.seq_q, a.head_dim);
}
template <typename L, typename T>
__device__ __forceinline__ void copy_k(const smem_tiles<L, T> &s, const tile_attention_kernel_args &a,
                                       const block &k, int32_t n) {
    copy_padded_tile<L, L::BLOCK_N>(s.k, k_slab<T>(a, k), row_stride{a.k_seq}, n * L::BLOCK_N,
                                    k.seq_k, a.head_dim);
}
template <typename L, typename T>
__device__ __forceinline__ void copy_v(const smem_tiles<L, T> &s, const tile_attention_kernel_args &a,
                                       const block &k, int32_t n) {
    copy_padded_tile<L, L::BLOCK_N>(s.v, v_slab<T>(a, k), row_stride{a.v_seq}, n * L::BLOCK_N,
                                    k.seq_k, a.head_dim);
}

// ------------------------------------------------------------------------------ state
// A warp's query rows as mma A fragments (HEAD_DIM / 16 k-steps of 4 registers), held in
// registers for HEAD_DIM <= 128, else re-read from shared memory at each use.
template <typename L> struct q_frags {
    uint32_t a[L::Q_IN_REGISTERS ? L::HEAD_DIM / 16 : 1][4];
};
// First row (within the block) of this warp's fragment f.
template <typename L> __device__ __forceinline__ int fragment_row(int f) {
    return (int)(threadIdx.x / 32 - L::FIRST_WARP) * L::WARP_ROWS + f * 16;
}


// A fragment of k-step kk of this warp's query fragment f.
template <typename L, typename T>
__device__ __forceinline__ void q_fragment(uint32_t r[4], const T *q_smem, int f, int kk) {
    const int l = lane_id();
    const int row = fragment_row<L>(f) + (l & 7) + ((l >> 3) & 1) * 8, chunk = kk * 2 + (l >> 4);
    ldmatrix_x4(r, q_smem + row * L::PITCH + chunk * 8);
}
template <typename L, typename T>
__device__ __forceinline__ void load_q_frags(q_frags<L> &q, const T *q_smem) {
    if constexpr (L::Q_IN_REGISTERS) {
#pragma unroll
        for (int kk = 0; kk < L::HEAD_DIM / 16; kk++) q_fragment<L>(q.a[kk], q_smem, 0, kk);
    }
}

// Scores of the warp's rows against a key tile: [WARP_ROWS, BLOCK_N] as MF x N_TILES
// accumulators.
template <typename L> struct scores {
    float s[L::MF][L::N_TILES][4];
};

// Output accumulator and the running softmax statistics of the warp's two rows per thread
// (rows g and g + 8): max of the raw scores and this thread's part of the sum of exp.
template <typename L> struct state {
    float o[L::MF][L::D_TILES][4];
    float m[L::MF][2], l[L::MF][2];
};
template <typename L> __device__ __forceinline__ void state_init(state<L> &st) {
#pragma unroll
    for (int f = 0; f < L::MF; f++) {
#pragma unroll
        for (int d = 0; d < L::D_TILES; d++)
#pragma unroll
            for (int e = 0; e < 4; e++) st.o[f][d][e] = 0.0f;
        st.m[f][0] = st.m[f][1] = -__builtin_huge_valf();
        st.l[f][0] = st.l[f][1] = 0.0f;
    }
}

// S = Q K^T for the key tile in shared memory. Each key fragment read feeds the warp's MF
// query fragments.
template <typename L, typename T>
__device__ __forceinline__ void qk(scores<L> &S, const q_frags<L> &q, const T *q_smem,
                                   const T *k_smem) {
#pragma unroll
    for (int f = 0; f < L::MF; f++)
#pragma unroll
        for (int j = 0; j < L::N_TILES; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) S.s[f][j][e] = 0.0f;
    const int l = lane_id();
#pragma unroll
    for (int kk = 0; kk < L::HEAD_DIM / 16; kk++) {
        uint32_t qa[L::MF][4];
#pragma unroll
        for (int f = 0; f < L::MF; f++) {
            if constexpr (L::Q_IN_REGISTERS) {
#pragma unroll
                for (int e = 0; e < 4; e++) qa[f][e] = q.a[kk][e];
            } else {
                q_fragment<L>(qa[f], q_smem, f, kk);
            }
        }
#pragma unroll
        for (int np = 0; np < L::N_TILES / 2; np++) {
            uint32_t b[4];
            const int row = np * 16 + (l & 7) + (l >> 4) * 8, chunk = kk * 2 + ((l >> 3) & 1);
            ldmatrix_x4(b, k_smem + row * L::PITCH + chunk * 8);
#pragma unroll
            for (int f = 0; f < L::MF; f++) {
                mma_type<T>::mma(S.s[f][2 * np], qa[f], b[0], b[1]);
                mma_type<T>::mma(S.s[f][2 * np + 1], qa[f], b[2], b[3]);
            }
        }
    }
}

// Scores outside the sequence or above the causal diagonal become -inf. A row sees keys up to
// min(seq_k - 1, row + diagonal if causal): one comparison an element against that limit, taken
// relative to the thread's first column of the tile (perf-notes A26).
template <typename L, typename B>
__device__ __forceinline__ void mask(scores<L> &S, const B &k, int32_t n, int32_t causal) {
    const int l = lane_id(), g = l >> 2, t = l & 3;
#pragma unroll
    for (int f = 0; f < L::MF; f++)
#pragma unroll
        for (int r = 0; r < 2; r++) {
            const int32_t query = query_position(k, k.m0 + fragment_row<L>(f) + g + r * 8);
            int32_t last = k.seq_k - 1;
            if (causal && query + k.diagonal < last) last = query + k.diagonal;
            const int32_t limit = last - n * L::BLOCK_N - 2 * t; // key j * 8 + e of the thread
#pragma unroll
            for (int j = 0; j < L::N_TILES; j++)
#pragma unroll
                for (int e = 0; e < 2; e++)
                    if (j * 8 + e > limit) S.s[f][j][2 * r + e] = -__builtin_huge_valf();
        }
}

// One row's running max after a key tile whose scores' max over this thread's columns is
// `tile_max`: the 4 lanes of a row (t = 0..3) hold its columns. Returns the exponent base
// (scale_log2 * the new max), sets alpha = exp2(scale_log2 * (old max - new max)), the factor
// the row's output and sum are rescaled by, and m = the new max.
__device__ __forceinline__ float row_max_update(float &m, float tile_max, float scale_log2, float &alpha) {
    float mx = fmaxf(m, tile_max);
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
    // A row with every key masked so far keeps max -inf: exponents use 0 instead, so
    // exp(-inf - 0) = 0 rather than exp(-inf + inf) = NaN.
    const float base = mx == -__builtin_huge_valf() ? 0.0f : mx * scale_log2;
    alpha = exp2_approx(m * scale_log2 - base); // 0 when m was -inf
    m = mx;
    return base;
}

// Online softmax: folds the tile's scores into the running max and sum and turns S into
// P = exp(scale * (S - max)) in place; alpha = exp(scale * (old max - new max)) per row, the
// factor the output accumulator must be rescaled by (rescale(), or at once: online_softmax).
// Only the first TILES column tiles hold scores where TILES < N_TILES (a key tile's first half,
// ws_half_key_tile): the rest become P = 0 without exponentials.
template <typename L, int TILES = L::N_TILES>
__device__ __forceinline__ void online_softmax_deferred(state<L> &st, scores<L> &S,
                                                        float scale_log2, float (&alpha)[L::MF][2]) {
#pragma unroll
    for (int f = 0; f < L::MF; f++)
#pragma unroll
        for (int r = 0; r < 2; r++) {
            float mx = st.m[f][r];
#pragma unroll
            for (int j = 0; j < TILES; j++)
                mx = fmaxf(mx, fmaxf(S.s[f][j][2 * r], S.s[f][j][2 * r + 1]));
            const float base = row_max_update(st.m[f][r], mx, scale_log2, alpha[f][r]);
            float sum = 0.0f;
#pragma unroll
            for (int j = 0; j < TILES; j++)
#pragma unroll
                for (int e = 0; e < 2; e++) {
                    const float p = exp2_approx(__fmaf_rn(S.s[f][j][2 * r + e], scale_log2, -base));
                    S.s[f][j][2 * r + e] = p;
                    sum += p;
                }
#pragma unroll
            for (int j = TILES; j < L::N_TILES; j++) S.s[f][j][2 * r] = S.s[f][j][2 * r + 1] = 0.0f;
            st.l[f][r] = st.l[f][r] * alpha[f][r] + sum;
        }
}
template <typename L>
__device__ __forceinline__ void rescale(state<L> &st, const float (&alpha)[L::MF][2]) {
#pragma unroll
    for (int f = 0; f < L::MF; f++)
#pragma unroll
        for (int d = 0; d < L::D_TILES; d++)
#pragma unroll
            for (int e = 0; e < 4; e++) st.o[f][d][e] *= alpha[f][e >> 1];
}
template <typename L>
__device__ __forceinline__ void online_softmax(state<L> &st, scores<L> &S, float scale_log2) {
    float alpha[L::MF][2];
    online_softmax_deferred(st, S, scale_log2, alpha);
    rescale(st, alpha);
}

// O += P V for the value tile in shared memory; P (the accumulators of S) becomes the A
// operand in registers, rounded to the storage type. Each value fragment read feeds the
// warp's MF fragments.
template <typename L, typename T>
__device__ __forceinline__ void pv(state<L> &st, const scores<L> &P, const T *v_smem) {
    const int l = lane_id();
#pragma unroll
    for (int kk = 0; kk < L::BLOCK_N / 16; kk++) {
        uint32_t pa[L::MF][4];
#pragma unroll
        for (int f = 0; f < L::MF; f++) {
            pa[f][0] = mma_type<T>::pack(P.s[f][2 * kk][0], P.s[f][2 * kk][1]);
            pa[f][1] = mma_type<T>::pack(P.s[f][2 * kk][2], P.s[f][2 * kk][3]);
            pa[f][2] = mma_type<T>::pack(P.s[f][2 * kk + 1][0], P.s[f][2 * kk + 1][1]);
            pa[f][3] = mma_type<T>::pack(P.s[f][2 * kk + 1][2], P.s[f][2 * kk + 1][3]);
        }
#pragma unroll
        for (int dp = 0; dp < L::D_TILES / 2; dp++) {
            uint32_t b[4];
            const int row = kk * 16 + (l & 7) + ((l >> 3) & 1) * 8, chunk = dp * 2 + (l >> 4);
            ldmatrix_x4_trans(b, v_smem + row * L::PITCH + chunk * 8);
#pragma unroll
            for (int f = 0; f < L::MF; f++) {
                mma_type<T>::mma(st.o[f][2 * dp], pa[f], b[0], b[1]);
                mma_type<T>::mma(st.o[f][2 * dp + 1], pa[f], b[2], b[3]);
            }
        }
    }
}

// The rows' totals: 1 / sum of exp per row into inv (0 for a row that sees no key, whose output
// is 0), and where lse_rows is given (element `row` of the block's (batch, head)) the log-sum-exp
// (natural log) per row: -inf for such a row.
template <typename L, typename B>
__device__ __forceinline__ void finish_rows(const tile_attention_kernel_args &a, const B &k,
                                            const state<L> &st, float *lse_rows,
                                            float (&inv)[L::MF][2]) {
    const int l = lane_id(), g = l >> 2, t = l & 3;
#pragma unroll
    for (int f = 0; f < L::MF; f++)
#pragma unroll
        for (int r = 0; r < 2; r++) {
            float sum = st.l[f][r];
            sum += __shfl_xor_sync(0xffffffffu, sum, 1);
            sum += __shfl_xor_sync(0xffffffffu, sum, 2);
            inv[f][r] = sum > 0.0f ? 1.0f / sum : 0.0f;
            const int32_t row = k.m0 + fragment_row<L>(f) + g + r * 8;
            if (lse_rows && t == 0 && row < k.seq_q)
                lse_rows[query_offset(k, row, 1, a.lse_fold)] =
                    sum > 0.0f ? st.m[f][r] * a.scale + __logf(sum) : -__builtin_huge_valf();
        }
}
// The caller's log-sum-exp of block k's (batch, head), by row, or nullptr.
__device__ __forceinline__ float *lse_of(const tile_attention_kernel_args &a, const block &k) {
    if (!a.lse) return nullptr;
    return a.lse + (a.cu_seqlens_q ? 0 : (int64_t)k.b * a.lse_batch) + (int64_t)k.h * a.lse_head +
           k.q_start;
}
// The caller's output of block k's (batch, head), by row (a.o_seq apart).
template <typename T>
__device__ __forceinline__ T *out_of(const tile_attention_kernel_args &a, const block &k) {
    return (T *)a.o + (a.cu_seqlens_q ? k.q_start * a.o_seq : (int64_t)k.b * a.o_batch) +
           (int64_t)k.h * a.o_head;
}

// A key split's share (a.splits > 1: one program a block; perf-notes A45, A49): the
// block's O / sum over its keys in fp32 and their log-sum-exp go to the caller's workspace, then
// the last of the block's splits to count itself in combines them all. Split s of row i weighs
// exp(lse_s - lse) with lse = log sum_s exp(lse_s) (a split whose keys the row sees none of:
// -inf, weight 0), and that split zeroes the block's counter again for the next call.
// Splits are at most 32: a lane holds each one's log-sum-exp.
constexpr int SPLIT_LOADS = 8; // shares a lane loads at once in the combine
template <typename L, typename T, typename B>
__device__ __forceinline__ void store_split(const tile_attention_kernel_args &a, const B &k,
                                            const state<L> &st) {
    const int l = lane_id(), g = l >> 2, t = l & 3;
    const int64_t unit = (int64_t)k.b * a.heads_q + k.h; // (batch, head), of the real batch
    const int64_t rows_a_split = (int64_t)(a.batch / a.splits) * a.heads_q * a.seqlen_q;
    const int64_t first = unit * a.seqlen_q;             // the unit's row 0 in a split's rows
    float inv[L::MF][2];
    B by_row = k; // the shares are kept by the block's rows, folded or not
    if constexpr (folds_rows<B>) by_row.head_rows = 0;
    finish_rows<L>(a, by_row, st, a.split_lse + k.split * rows_a_split + first, inv);
    float *part = a.split_o + (k.split * rows_a_split + first) * a.head_dim;
#pragma unroll
    for (int f = 0; f < L::MF; f++)
#pragma unroll
        for (int d = 0; d < L::D_TILES; d++)
#pragma unroll
            for (int r = 0; r < 2; r++) {
                const int32_t row = k.m0 + fragment_row<L>(f) + g + r * 8, col = d * 8 + 2 * t;
                if (row < k.seq_q && col < a.head_dim)
                    *reinterpret_cast<float2 *>(part + (int64_t)row * a.head_dim + col) =
                        make_float2(st.o[f][d][2 * r] * inv[f][r], st.o[f][d][2 * r + 1] * inv[f][r]);
            }
    __shared__ int last_split;
    __threadfence(); // this split's shares are visible before it counts itself in
    __syncthreads();
    if (threadIdx.x == 0) {
        unsigned *counter = a.split_counters + unit * a.m_blocks + k.m0 / L::BLOCK_M;
        last_split = atomicAdd(counter, 1u) == (unsigned)a.splits - 1;
        if (last_split) *counter = 0;
    }
    __syncthreads();
    if (!last_split) return;
    __threadfence(); // every split counted in before: their shares are read from L2 (ld.cg)
    T *out = out_of<T>(a, k);
    float *lse_rows = lse_of(a, k);
    const int32_t end = min(k.m0 + L::BLOCK_M, k.seq_q);
    for (int32_t row = k.m0 + (int32_t)(threadIdx.x / 32); row < end; row += L::THREADS / 32) {
        const float share_lse =
            l < a.splits ? __ldcg(a.split_lse + l * rows_a_split + first + row) : -__builtin_huge_valf();
        float top = share_lse;
#pragma unroll
        for (int m = 16; m > 0; m >>= 1) top = fmaxf(top, __shfl_xor_sync(0xffffffffu, top, m));
        const float weight = top == -__builtin_huge_valf() ? 0.0f : __expf(share_lse - top);
        float total = weight;
#pragma unroll
        for (int m = 16; m > 0; m >>= 1) total += __shfl_xor_sync(0xffffffffu, total, m);
        const float scale = total > 0.0f ? 1.0f / total : 0.0f;
        for (int32_t c0 = 0; c0 < a.head_dim; c0 += 64) { // (uniform: every lane shuffles)
            const int32_t c = c0 + 2 * l;                 // a lane's two columns
            const float *share = a.split_o + (first + row) * a.head_dim + c;
            float2 sum = make_float2(0.0f, 0.0f);
            // Eight shares' loads in flight before their sums: one at a time, each an L2 round
            // trip, the combine of 16 splits took longer than a split's keys.
            for (int32_t s0 = 0; s0 < a.splits; s0 += SPLIT_LOADS) {
                float2 x[SPLIT_LOADS];
#pragma unroll
                for (int j = 0; j < SPLIT_LOADS; j++)
                    x[j] = s0 + j < a.splits && c < a.head_dim
                               ? __ldcg(reinterpret_cast<const float2 *>(
                                     share + (s0 + j) * rows_a_split * a.head_dim))
                               : make_float2(0.0f, 0.0f);
#pragma unroll
                for (int j = 0; j < SPLIT_LOADS; j++) {
                    const float w = __shfl_sync(0xffffffffu, weight, (s0 + j) & 31);
                    sum.x += w * x[j].x, sum.y += w * x[j].y;
                }
            }
            if (c < a.head_dim)
                *reinterpret_cast<uint32_t *>(out + query_offset(k, row, a.o_seq, a.o_fold) + c) =
                    mma_type<T>::pack(sum.x * scale, sum.y * scale);
        }
        if (lse_rows && l == 0)
            lse_rows[query_offset(k, row, 1, a.lse_fold)] = total > 0.0f ? top + __logf(total) : -__builtin_huge_valf();
    }
}

// O / sum, written through shared memory (the warp's own rows of the Q tile) as 16-byte row
// chunks; rows past the sequence and columns past head_dim are not written; lse per row.
template <typename L, typename T, typename B>
__device__ __forceinline__ void store(const tile_attention_kernel_args &a, const B &k,
                                      state<L> &st, T *q_smem) {
    if (a.splits > 1) return store_split<L, T, B>(a, k, st);
    const int l = lane_id(), g = l >> 2, t = l & 3;
    float inv[L::MF][2];
    finish_rows<L>(a, k, st, lse_of(a, k), inv);
    // mma.sync path: the warp's last reads of its own Q rows are done. wgmma path: the staging
    // spans other warps' Q rows; it is free because a program barrier follows every warp's
    // last Q K^T wait (the loop's last copy wait, or the one before the loop).
    __syncwarp();
#pragma unroll
    for (int f = 0; f < L::MF; f++)
#pragma unroll
        for (int d = 0; d < L::D_TILES; d++)
#pragma unroll
            for (int r = 0; r < 2; r++) {
                const uint32_t packed = mma_type<T>::pack(st.o[f][d][2 * r] * inv[f][r],
                                                          st.o[f][d][2 * r + 1] * inv[f][r]);
                *reinterpret_cast<uint32_t *>(q_smem + (fragment_row<L>(f) + g + r * 8) * L::PITCH +
                                              d * 8 + 2 * t) = packed;
            }
    __syncthreads();
    T *out = out_of<T>(a, k);
    const int chunks_valid = a.head_dim / 8;
    for_thread_chunks<L::THREADS, L::BLOCK_M, L::CHUNKS>([&](int r, int c) {
        if (k.m0 + r < k.seq_q && c < chunks_valid)
            *reinterpret_cast<int4 *>(out + query_offset(k, k.m0 + r, a.o_seq, a.o_fold) + c * 8) =
                *reinterpret_cast<const int4 *>(q_smem + r * L::PITCH + c * 8);
    });
}

// ------------------------------------------------------------------------------ Hopper path
// The same algorithm on sm_90a's warpgroup matrix products (wgmma): WGS warpgroups of 128
// threads, each owning 64 query rows; Q, K and V tiles in shared memory in the 128-byte
// swizzled layout wgmma reads through descriptors (rows of 64 columns, 128 bytes, in 8-row
// atoms whose 16-byte chunks are XOR-permuted by row), STAGES buffers each of K and V so the copies of
// the next key tile overlap both products and the softmax of this one. P stays in registers
// as the A operand of P V. The accumulator fragments have the mma layout above (warp w of the
// program owns rows 16w..16w+15), so masking, the online softmax and the store are shared.

template <int HEAD_DIM_, int BLOCK_N_, int WGS_, int STAGES_> struct wg_layout {
    static constexpr int HEAD_DIM = HEAD_DIM_, BLOCK_N = BLOCK_N_, WGS = WGS_;
    static constexpr bool HANDED = false;          // (ws_layout)
    static constexpr bool FOLDS = true;            // (layout)
    static constexpr bool CAUSAL_BLOCKS_TO_END = false; // (ws_layout)
    static constexpr int STAGES = STAGES_;         // K and V buffers each: copies run
    static constexpr int AHEAD = STAGES - 1;       // AHEAD key tiles ahead of the products
    static constexpr int BLOCK_M = 64 * WGS, WARPS = 4 * WGS, THREADS = 128 * WGS;
    static constexpr int PROGRAM_THREADS = THREADS; // (as the grid names them)
    static constexpr int WARP_ROWS = 16, MF = 1;   // fragments as the mma path sees them
    static constexpr int FIRST_WARP = 0;           // every warp owns query rows
    static constexpr int CHUNKS = HEAD_DIM / 8, PITCH = HEAD_DIM + 8; // output staging
    static constexpr int N_TILES = BLOCK_N / 8, D_TILES = HEAD_DIM / 8;
    static constexpr int D_BLOCKS = HEAD_DIM / 64;  // 64-column swizzle blocks of a row
    static constexpr int Q_BYTES = BLOCK_M * HEAD_DIM * 2, KV_BYTES = BLOCK_N * HEAD_DIM * 2;
    static constexpr int STAGING_BYTES = BLOCK_M * PITCH * 2;
    static constexpr int Q_REGION = ((Q_BYTES > STAGING_BYTES ? Q_BYTES : STAGING_BYTES) + 1023) / 1024 * 1024;
    static constexpr int SMEM_BYTES = Q_REGION + 2 * STAGES * KV_BYTES + 1024; // + alignment slack
    static_assert(HEAD_DIM % 64 == 0 && BLOCK_N % 16 == 0, "64-column swizzle blocks, k-steps of 16");
    __device__ static int consumer_wg() { return threadIdx.x / 128; } // the warpgroup's 64 rows
};

// K and V stages are addressed from one base (stage s: K at 2s, V at 2s + 1 tiles past Q), not
// through arrays of pointers: indexed by a run-time stage, those lived in local memory, and each
// product waited on a local load for its operand's address (SASS of the ws kernels).
template <typename L, typename T> struct wg_tiles {
    T *q;        // also the output staging (padded rows of PITCH)
    uint32_t kv; // shared-window address: a generic pointer costs two registers more
    __device__ T *k(int s) const { return stage(2 * s); }
    __device__ T *v(int s) const { return stage(2 * s + 1); }
    __device__ T *stage(int i) const {
        return reinterpret_cast<T *>(__cvta_shared_to_generic(kv + (uint32_t)(i * L::KV_BYTES)));
    }
};
template <typename L, typename T> __device__ __forceinline__ wg_tiles<L, T> wg_shared_tiles() {
    extern __shared__ __align__(16) unsigned char tile_dynamic_smem[];
    // the swizzle atoms must sit on 1024-byte boundaries
    const uintptr_t base = ((uintptr_t)tile_dynamic_smem + 1023) & ~(uintptr_t)1023;
    unsigned char *p = reinterpret_cast<unsigned char *>(base);
    wg_tiles<L, T> t;
    t.q = reinterpret_cast<T *>(p);
    t.kv = (uint32_t)__cvta_generic_to_shared(p + L::Q_REGION);
    return t;
}

// copy_rows into a swizzled tile (the wgmma path).
template <typename L, int ROWS, typename T, typename RowOffset>
__device__ __forceinline__ void wg_copy_tile(T *smem, const T *base, RowOffset row_offset,
                                             int32_t row0, int32_t rows_valid, int32_t head_dim) {
    copy_rows<L, ROWS>(reinterpret_cast<unsigned char *>(smem),
                       [](int r, int c) { return swizzled(ROWS, r, c); }, base, row_offset, row0,
                       rows_valid, head_dim);
}
template <typename L, typename T, typename B>
__device__ __forceinline__ void wg_copy_q(const wg_tiles<L, T> &s, const tile_attention_kernel_args &a,
                                          const B &k) {
    wg_copy_tile<L, L::BLOCK_M>(s.q, q_slab<T>(a, k), query_rows<B>{k, a.q_seq, a.q_fold}, k.m0,
                                k.seq_q, a.head_dim);
}
// Key tile n into K stage n % STAGES, value tile n into V stage n % STAGES (separate rings:
// the pipelined kernel reads K tile n - 1 and V tile n at once).
template <typename L, typename T>
__device__ __forceinline__ void wg_copy_k(const wg_tiles<L, T> &s, const tile_attention_kernel_args &a,
                                          const block &k, int32_t n) {
    wg_copy_tile<L, L::BLOCK_N>(s.k(n % L::STAGES), k_slab<T>(a, k), row_stride{a.k_seq},
                                n * L::BLOCK_N, k.seq_k, a.head_dim);
}
template <typename L, typename T>
__device__ __forceinline__ void wg_copy_v(const wg_tiles<L, T> &s, const tile_attention_kernel_args &a,
                                          const block &k, int32_t n) {
    wg_copy_tile<L, L::BLOCK_N>(s.v(n % L::STAGES), v_slab<T>(a, k), row_stride{a.v_seq},
                                n * L::BLOCK_N, k.seq_k, a.head_dim);
}


// Issues S = Q K_n^T for the warpgroup's 64 rows (K-major operands from K stage n % STAGES) as one
// committed group; S is not to be read before a wait (wg_wait_scores).
// Byte offset of k-step kk (16 columns) in a K-major tile of `rows` rows, swizzled in 64-column
// blocks of rows x 128 bytes.
__device__ __forceinline__ uint32_t kstep_offset(int rows, int kk) {
    return (uint32_t)((kk >> 2) * rows * 128 + (kk & 3) * 32);
}
template <typename L, int N = L::BLOCK_N, typename T>
__device__ __forceinline__ void wg_qk(scores<L> &S, const T *q_tile, const T *k_tile) {
#if TILE_HAS_WGMMA
    const unsigned char *q =
        reinterpret_cast<const unsigned char *>(q_tile) + L::consumer_wg() * 64 * 128;
    const unsigned char *kt = reinterpret_cast<const unsigned char *>(k_tile);
    const uint64_t qd = wg_desc(q, 16, 1024), kd = wg_desc(kt, 16, 1024);
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
    for (int kk = 0; kk < L::HEAD_DIM / 16; kk++) {
        const uint32_t qo = kstep_offset(L::BLOCK_M, kk), ko = kstep_offset(L::BLOCK_N, kk);
        // the first k-step only writes S: its old values are dead before the products, so
        // ptxas need not keep them (and P's registers) alive beside the new scores
        if (kk == 0) wgmma_op<T, N>::zs(&S.s[0][0][0], wg_desc_at(qd, qo), wg_desc_at(kd, ko));
        else wgmma_op<T, N>::ss(&S.s[0][0][0], wg_desc_at(qd, qo), wg_desc_at(kd, ko), 1);
    }
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
#else
    (void)S, (void)q_tile, (void)k_tile;
    __trap(); // wgmma variants are registered for sm_90 only
#endif
}
template <typename L, typename T>
__device__ __forceinline__ void wg_qk_start(scores<L> &S, const wg_tiles<L, T> &t, int32_t n) {
    wg_qk<L>(S, t.q, t.k(n % L::STAGES));
}
// Waits for the scores: PENDING later groups (a P V issued after them) may stay in flight.
template <int PENDING, typename L> __device__ __forceinline__ void wg_wait_scores(scores<L> &S) {
    wg_wait_groups<PENDING>();
    wg_fence_operands(S.s[0]);
}

// P packed as the A operand of P V: it must stay untouched until the product is waited for.
template <typename L> struct p_operand {
    uint32_t a[L::BLOCK_N / 16][4];
};
// P, as the in-place softmax left it in S, rounded to T into the operand: element e of column
// tile j of the warp's 64-row fragment (rows g for e < 2, g + 8 otherwise; keys 2t and 2t + 1);
// one 16-key step of the A operand holds column tiles 2kk and 2kk + 1.
template <typename T, typename L>
__device__ __forceinline__ void wg_pack_p(p_operand<L> &pa, const scores<L> &S) {
    static_assert(L::MF == 1, "one fragment of rows a warp");
    const auto &p = S.s[0];
#pragma unroll
    for (int kk = 0; kk < L::BLOCK_N / 16; kk++) {
        pa.a[kk][0] = mma_type<T>::pack(p[2 * kk][0], p[2 * kk][1]);
        pa.a[kk][1] = mma_type<T>::pack(p[2 * kk][2], p[2 * kk][3]);
        pa.a[kk][2] = mma_type<T>::pack(p[2 * kk + 1][0], p[2 * kk + 1][1]);
        pa.a[kk][3] = mma_type<T>::pack(p[2 * kk + 1][2], p[2 * kk + 1][3]);
    }
}

// Issues O += P V (P packed in pa, V N-major from v_tile) as one committed group.
template <typename L, typename T>
__device__ __forceinline__ void wg_pv_issue(const p_operand<L> &pa, state<L> &st, const T *v_tile) {
#if TILE_HAS_WGMMA
    const unsigned char *vt = reinterpret_cast<const unsigned char *>(v_tile);
    // every operand register is written before the fence: none changes while products run
    // (no operand fence on the output here: an empty asm "defining" the accumulators while the
    // scores' products run makes ptxas serialize the warpgroup's products, C7515)
    const uint64_t vd = wg_desc(vt, L::BLOCK_N * 128, 1024);
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
    for (int kk = 0; kk < L::BLOCK_N / 16; kk++) {
        // 16 key rows a step; the head's 64-column blocks lie BLOCK_N * 128 bytes apart
        wgmma_op<T, L::HEAD_DIM>::rs(&st.o[0][0][0], pa.a[kk], wg_desc_at(vd, kk * 16 * 128));
    }
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
#else
    (void)pa, (void)st, (void)v_tile;
    __trap();
#endif
}
// The same from V stage n % STAGES.
template <typename L, typename T>
__device__ __forceinline__ void wg_pv_start(const p_operand<L> &pa, state<L> &st,
                                            const wg_tiles<L, T> &t, int32_t n) {
    wg_pv_issue<L>(pa, st, t.v(n % L::STAGES));
}
// Waits for every product in flight (the P V): the output and P's registers are free again.
template <typename L> __device__ __forceinline__ void wg_pv_finish(state<L> &st, p_operand<L> &pa) {
    wg_wait_groups<0>();
    wg_fence_operands(st.o[0]);
    wg_fence_registers(pa.a);
}

// ------------------------------------------------------------------------------ warp-specialized
// Hopper, warp-specialized (FlashAttention-3's split): a producer warpgroup, one thread of which
// copies Q (once per query block) and then K and V tiles by tensor map into rings of STAGES stages (mbarriers, no
// program barrier anywhere in the loop), and two consumer warpgroups of 64 query rows each
// running the wgmma path above, which hand each stage back once its products completed. The
// producer gives its registers to the consumers (setmaxnreg). Shared layout as wg_layout's: Q,
// then K and V stages, swizzled in 64-column blocks, then the output's staging tile (unless it
// is staged in Q's stage: STAGING_ON_Q). Programs
// are persistent (they walk query blocks, kernels/attention.tile), unless the host launches one
// per block (causal calls that do not walk long/short pairs).
template <int HEAD_DIM_, int BLOCK_N_, int STAGES_, int WGS_, int HANDED_, int QREG_ = 0, int O_ON_Q_ = 0>
struct ws_layout {
    static constexpr int HEAD_DIM = HEAD_DIM_, BLOCK_N = BLOCK_N_, STAGES = STAGES_;
    // The output staged in Q's stage rather than a region of its own (grid param O_ON_Q): at
    // head dim 256 Q, two K and V stages and a separate staging tile would not fit shared
    // memory. Each warpgroup writes its own rows of Q (read by none but its own products,
    // done by then), and Q's stage goes back once the copy out has read it (ws_staging_done):
    // the next block's Q then loads after this one's store, not during it.
    static constexpr bool STAGING_ON_Q = O_ON_Q_ != 0;
    // Q as S = Q K^T's A operand from registers, read from its stage once a block (grid param
    // QREG), instead of from shared memory by every key tile's products (perf-notes A37).
    static constexpr bool Q_IN_REGISTERS = QREG_ != 0;
    // The producer decides the blocks and hands each to the consumers beside its Q (with a
    // block counter, as programs finish), or every warpgroup walks the fixed order itself
    // (grid param HANDED; perf-notes A28b: handing gains at 64 x 128, costs at head dim 128).
    static constexpr bool HANDED = HANDED_ != 0;
    static constexpr bool FOLDS = false; // Q and O by tensor map: rows one head's (layout)
    static constexpr int WGS = WGS_, BLOCK_M = 64 * WGS;     // consumer warpgroups, their query rows
    // Causal, a sequence's 192-row blocks may end at its last rows (causal_block_shift), so
    // that a short block's idle warpgroups lie at its start, where rows see fewest keys, not
    // at its end, where the one busy warpgroup's rows see the most (perf-notes A63). Three
    // warpgroups only: ws_rows_past passes the warpgroups before the sequence as those past it.
    static constexpr bool CAUSAL_BLOCKS_TO_END = WGS == 3;
    static constexpr int WARPS = 4 * (WGS + 1), THREADS = 32 * WARPS; // + the producer warpgroup, first
    static constexpr int PROGRAM_THREADS = THREADS, QUERY_ROWS = BLOCK_M; // (as the grid names them)
    static constexpr int FIRST_WARP = 4, CONSUMER_WARPS = 4 * WGS;
    // the producer keeps 24 registers a thread, the consumers share the rest of the 64K file
    // (setmaxnreg takes multiples of 8): 240 each with two consumer warpgroups, 160 with three
    static constexpr int PRODUCER_REGS = 24, CONSUMER_REGS = (65536 / 128 - PRODUCER_REGS) / WGS / 8 * 8;
    static constexpr int WARP_ROWS = 16, MF = 1;
    static constexpr int CHUNKS = HEAD_DIM / 8, N_TILES = BLOCK_N / 8, D_TILES = HEAD_DIM / 8;
    static constexpr int D_BLOCKS = HEAD_DIM / 64;
    static constexpr int Q_BYTES = BLOCK_M * HEAD_DIM * 2, KV_BYTES = BLOCK_N * HEAD_DIM * 2;
    static constexpr int Q_REGION = (Q_BYTES + 1023) / 1024 * 1024;
    // the output's staging (as Q's layout) after the K and V stages: apart from Q, so the next
    // query block's Q loads while this one's output is written (or Q's own stage: above)
    static constexpr int STAGING_OFFSET = STAGING_ON_Q ? 0 : Q_REGION + 2 * STAGES * KV_BYTES;
    static constexpr int SMEM_BYTES =
        Q_REGION + 2 * STAGES * KV_BYTES + (STAGING_ON_Q ? 0 : Q_REGION) + 1024; // + alignment slack
    static_assert(HEAD_DIM % 64 == 0 && BLOCK_N % 16 == 0 && BLOCK_N <= 256 && STAGES >= 2,
                  "64-column swizzle blocks, k-steps of 16 keys, boxes of <= 256 rows, copies a tile ahead");
    static_assert(WGS == 2 || WGS == 3, "two or three consumer warpgroups (named barriers 1 to 2 * WGS)");
    __device__ static int consumer_wg() { return threadIdx.x / 128 - 1; }
};

// What the consumers need of a block (the key and value head and tokens are the producer's
// alone; a varlen sequence's first token the consumers read themselves, ws_store), as the
// producer hands it over beside its Q; n_end -1 ends the walk.
struct ws_handed {
    int32_t b, h, m0, n_end, seq_q, seq_k;
};
// The producer's and the consumers' views of the three rings: Q (one stage, filled once per
// query block, with the block beside it), K, V.
template <typename L> struct ws_rings {
    stage_ring<1> q;
    stage_ring<L::STAGES> k, v;
    ws_handed *handed;
};
// Collective, once per program.
template <typename L> __device__ __forceinline__ ws_rings<L> ws_rings_start() {
    __shared__ __align__(16) ws_handed handed; // (HANDED layouts only)
    return ws_rings<L>{stage_ring_start<1, L::CONSUMER_WARPS, 0>(),
                       stage_ring_start<L::STAGES, L::CONSUMER_WARPS, 1>(),
                       stage_ring_start<L::STAGES, L::CONSUMER_WARPS, 2>(), &handed};
}

// The producer's walk over query blocks: the fixed one (blockIdx.x, + gridDim.x, ...; with
// a.paired, turns of long/short pairs), or with a block counter (a.block_counter) the first
// block blockIdx.x and each next one the counter's, as the program finishes (perf-notes A28):
// no program waits on a fixed share of unequal blocks. The next number is taken once this
// block's last key and value tiles are on their way, not a block ahead: a claim a block early
// binds the walk's first 2 x gridDim.x blocks at the start, long with long, which left a causal
// call of two blocks a program 35% slower (perf-notes A33); the atomic's latency hides behind
// the consumers' last tiles. Numbers only grow; one that does not (a workspace not zeroed, or
// shared by calls running at once) ends the walk, so such misuse skips blocks (docs/api.md)
// but never repeats one or hangs.
// (32-bit: the host keeps a call's blocks at 2^30 or fewer, and the producer's 24 registers
// spill 64-bit ones.)
struct ws_walk {
    int32_t pid, turn, end;
};
__device__ __forceinline__ ws_walk ws_walk_start(const tile_attention_kernel_args &a) {
    return ws_walk{(int32_t)blockIdx.x, 0, (int32_t)attention_walk(a)};
}
__device__ __forceinline__ bool ws_walk_more(const ws_walk &w) { return w.pid < w.end; }
__device__ __forceinline__ void ws_walk_next(ws_walk &w, const tile_attention_kernel_args &a) {
    if (!a.block_counter) {
        w.pid += gridDim.x;
        w.turn++;
        return;
    }
    const int32_t next = (int32_t)counter_take(a.block_counter);
    w.pid = next > w.pid ? next : w.end; // a counter that did not grow ends the walk
}
// After the producer's walk: an end position for the consumers, behind the last block's Q
// (a plain arrival completes the stage's phase: no bytes), and the counter's count of programs
// done.
template <typename L>
__device__ __forceinline__ void ws_hand_end(ws_rings<L> &r, const tile_attention_kernel_args &a) {
    mbarrier_wait(&r.q.empty[r.q.stage], r.q.phase ^ 1);
    r.handed->n_end = -1;
    mbarrier_arrive(&r.q.full[r.q.stage]);
    if (a.block_counter) counter_finish(a.block_counter);
}
// Consumers: the next query block the producer handed over, once its Q has landed; false at the
// end of the walk. Lane 0 reads the block (volatile: the load stays inside its branch) and
// broadcasts it, so ptxas knows every value warp-uniform (a block read by every lane is not:
// then it guards each product of the loop for a divergent warp, 4-6% at 192 rows, perf-notes
// A28b); and the reader is the lane that hands the Q stage back, so the producer's next write
// waits on that very thread's arrival.
template <typename L>
__device__ __forceinline__ bool ws_block_handed(ws_rings<L> &r, block &k) {
    (void)r.q.take();
    int32_t b = 0, h = 0, m0 = 0, n_end = 0, seq_q = 0, seq_k = 0;
    if (lane_id() == 0) {
        const uint32_t at = (uint32_t)__cvta_generic_to_shared(r.handed);
        asm volatile("ld.shared.v4.s32 {%0, %1, %2, %3}, [%4];"
                     : "=r"(b), "=r"(h), "=r"(m0), "=r"(n_end) : "r"(at) : "memory");
        asm volatile("ld.shared.v2.s32 {%0, %1}, [%2];"
                     : "=r"(seq_q), "=r"(seq_k) : "r"(at + 16) : "memory");
    }
    k.b = __shfl_sync(0xffffffffu, b, 0), k.h = __shfl_sync(0xffffffffu, h, 0), k.hk = 0;
    k.m0 = __shfl_sync(0xffffffffu, m0, 0), k.n_end = __shfl_sync(0xffffffffu, n_end, 0);
    k.q_start = k.k_start = 0; // (varlen: ws_store reads the first token)
    k.seq_q = __shfl_sync(0xffffffffu, seq_q, 0), k.seq_k = __shfl_sync(0xffffffffu, seq_k, 0);
    k.diagonal = k.seq_k - k.seq_q;
    k.split = 0;
    k.empty = false;
    return k.n_end >= 0;
}
template <typename L> __device__ __forceinline__ bool ws_is_producer() { return threadIdx.x < 128; }
template <typename L> __device__ __forceinline__ bool ws_is_producer_thread() { return threadIdx.x == 0; }

// Where row `row` of block k's sequence (its queries, or with `keys` its keys and values) lies
// in the tensor maps, which are 4-dim (head_dim, rows, heads, outer; innermost first), rows past
// the sequence reading as zeros and never written:
// - fixed lengths: (row, batch);
// - varlen (src/attention.c, encode_maps): the outer axis is the token at which the sequence
//   ends, and rows count back from it over a window of the longest sequence's length, both
//   axes a token apart (the window's end is the sequence's end, so the copies read zeros past
//   it and the stores stop there, as FlashAttention's predicated copies do; perf-notes A35).
struct map_rows {
    int32_t row, outer;
};
__device__ __forceinline__ map_rows ws_map_rows(const tile_attention_kernel_args &a, const block &k,
                                                int32_t row, bool keys) {
    if (!a.cu_seqlens_q) return map_rows{row, k.b};
    const int32_t seq = keys ? k.seq_k : k.seq_q, window = keys ? a.seqlen_k : a.seqlen_q;
    return map_rows{row - seq + window, (int32_t)(keys ? k.k_start : k.q_start) + seq};
}
// Producer: rows [at.row, at.row + ROWS) of head h as D_BLOCKS boxes of 64 columns (rows past
// the sequence and columns past head_dim read as zeros), completing on bar.
template <typename L, int ROWS>
__device__ __forceinline__ void ws_load_rows(void *smem, const CUtensorMap *map, map_rows at,
                                             int32_t h, uint64_t *bar) {
#pragma unroll
    for (int j = 0; j < L::D_BLOCKS; j++)
        tma_load_4d(reinterpret_cast<unsigned char *>(smem) + j * ROWS * 128, map, 64 * j, at.row,
                    h, at.outer, bar);
}
// Q of block k, once the last block's Q is free; where the layout hands blocks over, the block
// goes beside it, and the stage's full barrier publishes both.
template <typename L, typename T>
__device__ __forceinline__ void ws_load_q(ws_rings<L> &r, const wg_tiles<L, T> &t,
                                          const tile_attention_kernel_args &a, const block &k) {
    if constexpr (L::HANDED) {
        mbarrier_wait(&r.q.empty[r.q.stage], r.q.phase ^ 1);
        *r.handed = ws_handed{k.b, k.h, k.m0, k.n_end, k.seq_q, k.seq_k};
    }
    uint64_t *bar = r.q.acquire(L::Q_BYTES); // (handed: its wait returns at once)
    ws_load_rows<L, L::BLOCK_M>(t.q, &a.q_map, ws_map_rows(a, k, k.m0, false), k.h, bar);
}
// Key and value tile n, each into the next free stage of its ring.
template <typename L, typename T>
__device__ __forceinline__ void ws_load_kv(ws_rings<L> &r, const wg_tiles<L, T> &t,
                                           const tile_attention_kernel_args &a, const block &k,
                                           int32_t n) {
    const int ks = r.k.stage;
    uint64_t *bar = r.k.acquire(L::KV_BYTES);
    const map_rows at = ws_map_rows(a, k, n * L::BLOCK_N, true);
    ws_load_rows<L, L::BLOCK_N>(t.k(ks), &a.k_map, at, k.hk, bar);
    const int vs = r.v.stage;
    bar = r.v.acquire(L::KV_BYTES);
    ws_load_rows<L, L::BLOCK_N>(t.v(vs), &a.v_map, at, k.hk, bar);
}

// Q as the A operand of S = Q K^T where the layout keeps it in registers (L::Q_IN_REGISTERS):
// the warp's 16 rows of the warpgroup's 64 in the mma A fragment order, a k-step of 16 columns
// a row of `a`. Elsewhere one unused row.
template <typename L> struct q_operand {
    uint32_t a[L::Q_IN_REGISTERS ? L::HEAD_DIM / 16 : 1][4];
};
// Reads the warp's rows of Q from its (swizzled) stage into qa, once a block; nothing where Q
// stays in shared memory.
template <typename L, typename T>
__device__ __forceinline__ void ws_load_q_operand(q_operand<L> &qa, const wg_tiles<L, T> &t) {
    if constexpr (L::Q_IN_REGISTERS) {
        const int l = lane_id();
        // ldmatrix.x4: lanes 0-15 give rows 0-15 of the k-step's first 8 columns, 16-31 of its last 8
        // (fragment_row<L>(0) is the same value, but written so it moved ptxas's register
        // allocation of the whole loop: 1.4% slower causal at 2048 keys, session 36, call 11)
        const int row = L::consumer_wg() * 64 + (threadIdx.x / 32 % 4) * 16 + (l & 15);
        const unsigned char *q = reinterpret_cast<const unsigned char *>(t.q);
#pragma unroll
        for (int kk = 0; kk < L::HEAD_DIM / 16; kk++) // a k-step: the row's 16-byte chunks 2kk, 2kk + 1
            ldmatrix_x4(qa.a[kk], q + swizzled(L::BLOCK_M, row, 2 * kk + (l >> 4)));
    } else {
        (void)qa, (void)t;
    }
}
// S = Q K^T with Q from registers (qa) and K K-major from k_tile, as one committed group; over
// the tile's first N keys (S's first N / 8 column tiles).
template <typename L, int N = L::BLOCK_N, typename T>
__device__ __forceinline__ void wg_qk_q_registers(scores<L> &S, const q_operand<L> &qa, const T *k_tile) {
#if TILE_HAS_WGMMA
    const uint64_t kd = wg_desc(reinterpret_cast<const unsigned char *>(k_tile), 16, 1024);
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
    for (int kk = 0; kk < L::HEAD_DIM / 16; kk++) {
        const uint32_t ko = kstep_offset(L::BLOCK_N, kk);
        if (kk == 0) wgmma_op<T, N>::template zr<0>(&S.s[0][0][0], qa.a[kk], wg_desc_at(kd, ko));
        else wgmma_op<T, N>::template rs<0>(&S.s[0][0][0], qa.a[kk], wg_desc_at(kd, ko));
    }
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
#else
    (void)S, (void)qa, (void)k_tile;
    __trap();
#endif
}

// Consumers: wait for the next key tile and issue S = Q K^T on it (Q from registers or from its
// stage, as the layout keeps it); wait for the next value tile and issue O += P V on it, P
// packed before (ring order: the producer's order of tiles).
template <typename L, typename T>
__device__ __forceinline__ void ws_qk_start(scores<L> &S, ws_rings<L> &r, const wg_tiles<L, T> &t,
                                            const q_operand<L> &qa) {
    if constexpr (L::Q_IN_REGISTERS) wg_qk_q_registers<L>(S, qa, t.k(r.k.take()));
    else wg_qk<L>(S, t.q, t.k(r.k.take()));
}
// A warpgroup's first key tile where its rows see only the tile's first half (ws_half_key_tile):
// S = Q K^T over those 64 keys; S's other column tiles stay unset (the mask writes them without
// reading, online_softmax_deferred_half makes their P 0: A62b), so TILE_WG_WAIT_SCORES waits.
// (The kernel branches around issue, turn and wait together: a branch around the issue alone
// made ptxas serialize the wgmma pipeline.)
template <typename L, typename T>
__device__ __forceinline__ void ws_qk_start_half(scores<L> &S, ws_rings<L> &r, const wg_tiles<L, T> &t,
                                                 const q_operand<L> &qa) {
    if constexpr (L::BLOCK_N != 128) ws_qk_start<L>(S, r, t, qa); // (not reached: never half)
    else if constexpr (L::Q_IN_REGISTERS) wg_qk_q_registers<L, L::BLOCK_N / 2>(S, qa, t.k(r.k.take()));
    else wg_qk<L, L::BLOCK_N / 2>(S, t.q, t.k(r.k.take()));
}
// online_softmax_deferred over a half key tile's first half only (P 0 on the rest).
template <typename L>
__device__ __forceinline__ void online_softmax_deferred_half(state<L> &st, scores<L> &S, float scale_log2,
                                                             float (&alpha)[L::MF][2], bool half) {
    if (half) online_softmax_deferred<L, L::N_TILES / 2>(st, S, scale_log2, alpha);
    else online_softmax_deferred<L>(st, S, scale_log2, alpha);
}
template <typename L, typename T>
__device__ __forceinline__ void ws_pv_start(const p_operand<L> &pa, state<L> &st, ws_rings<L> &r,
                                            const wg_tiles<L, T> &t) {
    wg_pv_issue<L>(pa, st, t.v(r.v.take()));
}

// Ping-pong (FlashAttention-3): the consumer warpgroups issue their products in turns, round
// robin, each passing the turn to the next once its products are issued, so one's softmax runs
// while another's products hold the tensor cores. Warpgroup w waits on named barrier
// 1 + WGS + w (256 threads: its bar.sync, the previous warpgroup's bar.arrive; barriers 1 to
// WGS are ws_store's). The turns run on across a program's query blocks: warpgroup 0 takes its
// very first turn without waiting and, after the last, waits once more for the last
// warpgroup's last pass, so every arrival has its wait and no warpgroup can arrive twice on a
// barrier before its waiter has waited.
struct ws_turns {
    int wg;
    bool started; // warpgroup 0 has taken a turn
};
template <typename L> __device__ __forceinline__ ws_turns ws_turns_start() {
    return ws_turns{L::consumer_wg(), false};
}
template <typename L> __device__ __forceinline__ void ws_turn_wait(ws_turns &t) {
    if (t.wg != 0 || t.started)
        asm volatile("bar.sync %0, 256;" ::"r"(1 + L::WGS + t.wg) : "memory");
    t.started = true;
}
template <typename L> __device__ __forceinline__ void ws_turn_pass(const ws_turns &t) {
    const int next = t.wg + 1 == L::WGS ? 0 : t.wg + 1;
    asm volatile("bar.arrive %0, 256;" ::"r"(1 + L::WGS + next) : "memory");
}
template <typename L> __device__ __forceinline__ void ws_turns_finish(const ws_turns &t) {
    if (t.wg == 0 && t.started) asm volatile("bar.sync %0, 256;" ::"r"(1 + L::WGS) : "memory");
}
// Q's stage back after the block's last Q K^T (or with no key tile), unless the output is staged
// there: then ws_staging_done gives it back.
template <typename L> __device__ __forceinline__ void ws_release_q(ws_rings<L> &r) {
    if constexpr (!L::STAGING_ON_Q) r.q.release();
    else (void)r;
}
// After ws_store, where the output is staged in Q's stage: the stage goes back once the copy out
// (by tensor map) has read it; the threads' store has read it already (ws_store's last
// warpgroup barrier). The issuing thread is lane 0 of the warpgroup's first warp, whose
// arrival is the one that waits.
template <typename L>
__device__ __forceinline__ void ws_staging_done(ws_rings<L> &r, const tile_attention_kernel_args &a) {
    if constexpr (L::STAGING_ON_Q) {
        if (a.o_by_map && threadIdx.x % 128 == 0) bulk_wait_read<0>();
        r.q.release();
    } else {
        (void)r, (void)a;
    }
}
// After a consumer warpgroup's last block: its copies out (ws_store by the tensor map) have
// completed before the program and its shared memory go.
template <typename L> __device__ __forceinline__ void ws_stores_finish(const tile_attention_kernel_args &a) {
    if constexpr (!L::HANDED)
        if (a.o_by_map && threadIdx.x % 128 == 0) bulk_wait();
}

// Whether this consumer warpgroup's 64 query rows all lie past the sequence (the last block of
// a sequence that is not a multiple of BLOCK_M rows) or, causal, before it (the first block,
// causal_block_shift). Three warpgroups only: 192-row blocks
// end any sequence of 2^k rows (k >= 6) with one or two such warpgroups; with two the
// branch is compiled out, and their loop stays as it was (perf-notes A20).
template <typename L> __device__ __forceinline__ bool ws_rows_past(const block &k) {
    if constexpr (L::WGS < 3) return false;
    // the warpgroup broadcast from lane 0, so the compiler knows the branch is warp-uniform:
    // otherwise it guards every product of the loop after it for a divergent warp
    const int wg = __shfl_sync(0xffffffffu, L::consumer_wg(), 0);
    // (or all before it, a causal sequence's first block: a negative first row, unsigned, is
    // past any length; one comparison, where a second made ptxas serialize the wgmma pipeline)
    return (uint32_t)(k.m0 + 64 * wg) >= (uint32_t)k.seq_q;
}
// Such a warpgroup issues no products and stores nothing, but takes and hands back every stage,
// Q's included (after its copies landed: an early arrival could count toward the stage's
// previous use; a handed block's Q is taken with it, ws_block_handed), and keeps its turns, as the loop does
// (n_end + 1 of them, none without a key tile), so the rings and the round robin of the
// warpgroups with rows stay in step.
template <typename L>
__device__ __forceinline__ void ws_pass_block(ws_turns &turns, ws_rings<L> &r, const block &k) {
    if constexpr (!L::HANDED) (void)r.q.take();
    if (k.n_end == 0) { // no key tile: no turn either
        r.q.release();  // (it stages no output, so Q's stage goes back as in any layout)
        return;
    }
    for (int32_t n = k.n_end - 1; n >= 0; n--) {
        ws_turn_wait<L>(turns);
        (void)r.k.take();
        ws_turn_pass<L>(turns);
        r.k.release();
        if (n == 0) r.q.release();
        (void)r.v.take();
        r.v.release();
    }
    ws_turn_wait<L>(turns);
    ws_turn_pass<L>(turns);
}

// Causal: block k as this consumer warpgroup sees it. Its 64 rows may end a whole key tile (or
// more) before the block's last row does: with 192-row blocks of 128-key tiles, or 128-row
// blocks of 64-key tiles, the first warpgroups' leading key tiles lie wholly above their
// diagonal. Those tiles pass as ws_pass_block passes them (stages and turns, no products) and
// the warpgroup's loop starts at its own last tile, so n_end is cut to it. Compiled out where
// 64 x (WGS - 1) < BLOCK_N: with 128-key tiles (`ws` n128, `wsh`) no warpgroup ends a tile
// early on an aligned diagonal; with 80, 144 or 160 keys (`ws256` n80, `ws` n144, `ws160`) the
// first one can, but there it measured slower (perf-notes A58).
// A warpgroup whose rows see no key keeps every tile (its loop masks them all and stores zeros).
template <typename L, typename B>
__device__ __forceinline__ B ws_own_key_tiles(ws_turns &turns, ws_rings<L> &r, const B &k,
                                              int32_t causal) {
    if constexpr (64 * (L::WGS - 1) < L::BLOCK_N) {
        (void)turns, (void)r, (void)causal;
        return k;
    } else {
        if (!causal) return k;
        const int wg = __shfl_sync(0xffffffffu, L::consumer_wg(), 0); // (warp-uniform, ws_rows_past)
        const int32_t last_key = min(k.m0 + 64 * wg + 63, k.seq_q - 1) + k.diagonal;
        if (last_key < 0) return k;
        B own = k;
        own.n_end = min(k.n_end, last_key / L::BLOCK_N + 1);
        for (int32_t n = k.n_end - 1; n >= own.n_end; n--) {
            ws_turn_wait<L>(turns);
            (void)r.k.take();
            ws_turn_pass<L>(turns);
            r.k.release();
            (void)r.v.take();
            r.v.release();
        }
        return own;
    }
}

// tile_needs_mask for one consumer warpgroup of the warp-specialized kernels (whole warps: a
// shuffle): on three consumers whose rows own their key tiles (`ws3`), the causal test from its
// own first row, 64 x wg below the block's, so a later warpgroup skips the mask on a tile only
// earlier rows see past (perf-notes A59: +1.7% on head dim 64 causal). The 2-consumer kernels
// keep the block's test: on them A58 measured a per-warpgroup walk slower, and this unmeasured.
template <typename L, typename B>
__device__ __forceinline__ bool ws_tile_needs_mask(const B &k, int32_t n, int32_t causal) {
    static_assert(!folds_rows<B>, "the warp-specialized kernels' rows are a block's queries");
    if constexpr (L::WGS < 3 || 64 * (L::WGS - 1) < L::BLOCK_N) return tile_needs_mask<L>(k, n, causal);
    const int wg = __shfl_sync(0xffffffffu, L::consumer_wg(), 0); // (warp-uniform)
    return key_tile_masked<L>(k, n, k.m0 + 64 * wg, causal);
}

// Whether this consumer warpgroup's rows see none of key tile n's second half (causal, the
// diagonal in its first half; or the keys end there): its products and exponentials there are
// halved (perf-notes A62: +1.0-2.5% at head dim 64 causal). Only where 64-key products exist
// (128-key tiles) and at head dim 64: at 128, where the products alone would halve, the same
// measured 0.5-2% slower causal. Uniform over the warpgroup.
template <typename L, typename B>
__device__ __forceinline__ bool ws_half_key_tile(const B &k, int32_t n, int32_t causal) {
    if constexpr (L::BLOCK_N != 128 || L::HEAD_DIM > 64) {
        (void)k, (void)n, (void)causal;
        return false;
    } else {
        const int wg = __shfl_sync(0xffffffffu, L::consumer_wg(), 0);
        int32_t last_key = k.seq_k - 1;
        // (ws_own_key_tiles' last key, written out again: made one helper for both, ptxas
        // serialized the head-64 kernels' wgmma pipeline)
        if (causal) last_key = min(last_key, min(k.m0 + 64 * wg + 63, k.seq_q - 1) + k.diagonal);
        return last_key < n * L::BLOCK_N + L::BLOCK_N / 2;
    }
}

// O / sum through the warpgroup's own 64 rows of the staging tile, in Q's swizzled layout
// (conflict-free both ways), then 16-byte row chunks out, or with O's tensor map one bulk store
// from one thread (perf-notes A32); rows past the sequence and columns past head_dim are not
// written; lse per row. Only the warpgroup's 128 threads synchronize (named barrier 1 +
// warpgroup), before the chunks are read and before the staging is reused.
template <typename L, typename T>
__device__ __forceinline__ void ws_store(const tile_attention_kernel_args &a, const block &handed,
                                         state<L> &st, const wg_tiles<L, T> &t) {
    const int l = lane_id(), g = l >> 2, q = l & 3, wg = L::consumer_wg();
    const bool issuer = threadIdx.x % 128 == 0;
    // A handed varlen block comes without its sequence's first token (the handover stays as
    // fixed lengths have it: perf-notes A35b); it is read here, once a block.
    block k = handed;
    if constexpr (L::HANDED)
        if (a.cu_seqlens_q) k.q_start = __ldg(a.cu_seqlens_q + k.b);
    float inv[L::MF][2];
    finish_rows<L>(a, k, st, lse_of(a, k), inv);
    unsigned char *tile = reinterpret_cast<unsigned char *>(t.q) + L::STAGING_OFFSET;
    // Not where blocks are handed over: there the store by map measured 4% slower (perf-notes
    // A32), so that kernel keeps the threads' store, compiled as before.
    if constexpr (!L::HANDED)
        if (a.o_by_map) { // the last block's copy out has read the staging (long since, as a rule)
            if (issuer) bulk_wait_read<0>();
            warpgroup_sync(1 + wg);
        }
#pragma unroll
    for (int d = 0; d < L::D_TILES; d++)
#pragma unroll
        for (int r = 0; r < 2; r++) {
            const int row = fragment_row<L>(0) + g + r * 8;
            *reinterpret_cast<uint32_t *>(tile + swizzled(L::BLOCK_M, row, d) + 4 * q) =
                mma_type<T>::pack(st.o[0][d][2 * r] * inv[0][r], st.o[0][d][2 * r + 1] * inv[0][r]);
        }
    if constexpr (!L::HANDED)
        if (a.o_by_map) {
            // The staging is the tensor map's box layout (128-byte swizzle, 64 columns a block):
            // one thread sends the warpgroup's rows out, box by box, and the warpgroup goes on
            // to the next block; rows past the sequence and columns past head_dim lie outside
            // the map.
            fence_async_shared();
            warpgroup_sync(1 + wg);
            if (issuer) {
                const map_rows at = ws_map_rows(a, k, k.m0 + 64 * wg, false);
#pragma unroll
                for (int j = 0; j < L::D_BLOCKS; j++)
                    tma_store_4d(&a.o_map, 64 * j, at.row, k.h, at.outer,
                                 tile + j * L::BLOCK_M * 128 + wg * 64 * 128);
                bulk_commit();
            }
            return;
        }
    warpgroup_sync(1 + wg);
    T *out = out_of<T>(a, k);
    const int chunks_valid = a.head_dim / 8;
#pragma unroll
    for (int i = threadIdx.x % 128; i < 64 * L::CHUNKS; i += 128) {
        const int r = wg * 64 + i / L::CHUNKS, c = i % L::CHUNKS;
        if (k.m0 + r < k.seq_q && c < chunks_valid)
            *reinterpret_cast<int4 *>(out + (int64_t)(k.m0 + r) * a.o_seq + c * 8) =
                *reinterpret_cast<const int4 *>(tile + swizzled(L::BLOCK_M, r, c));
    }
    warpgroup_sync(1 + wg);
}

} // namespace attn
} // namespace tile
