/* The argument block of the flash-attention kernels (kernels/attention.tile), passed by value:
 * written by the host (src/attention.c, C11) and read by the device (C++), so plain C with
 * fixed-width types and one definition for both. Strides are in elements. */
#ifndef FUSEDOPS_ATTENTION_ARGS_H
#define FUSEDOPS_ATTENTION_ARGS_H

#include <cuda.h> /* CUtensorMap */
#include <stdint.h>

/* A divisor fixed for a call, as a multiplier and a shift (Granlund and Montgomery, "Division
 * by invariant integers using multiplication", 1994): tile_divide. A block's coordinates take
 * four divisions by such divisors, five where a full call walks a head's blocks in a row,
 * seven where each head's are turned (tile::attn::walk_divide; perf-notes A30, A57, A60). */
typedef struct tile_divisor {
    uint32_t divisor, multiplier, shift;
} tile_divisor;

#ifdef __CUDACC__
#define TILE_ARGS_INLINE __host__ __device__ static inline
#else
#define TILE_ARGS_INLINE static inline
#endif

/* Divisor d's multiplier and shift (1 <= d < 2^31; the host's, per call). */
TILE_ARGS_INLINE tile_divisor tile_divisor_of(uint32_t d) {
    uint32_t shift = 0;
    while (((uint64_t)1 << shift) < d) shift++; /* ceil(log2(d)) */
    const uint64_t multiplier = (((uint64_t)1 << 32) * (((uint64_t)1 << shift) - d)) / d + 1;
    const tile_divisor r = {d, (uint32_t)multiplier, shift};
    return r;
}

/* n / d.divisor for n below 2^31 (the walk's numbers: the host keeps a call's blocks at 2^30 or
 * fewer): a high multiply, an add that cannot wrap there, and a shift, all 32-bit. */
TILE_ARGS_INLINE uint32_t tile_divide(uint32_t n, tile_divisor d) {
    const uint32_t high = (uint32_t)((uint64_t)n * d.multiplier >> 32);
    return (high + n) >> d.shift;
}

typedef struct tile_attention_kernel_args {
    /* Tensor maps of the warp-specialized variants (copies by the tensor memory accelerator),
     * encoded per call by the host over (head_dim, seq, heads, batch), 128-byte swizzled in
     * boxes of 64 columns x BLOCK_M (q) or BLOCK_N (k, v) positions; unused (zero) otherwise. */
    CUtensorMap q_map, k_map, v_map;
    /* The output's, in boxes of 64 columns x 64 rows (a consumer warpgroup's), where o allows
     * one (o_by_map 1; else the threads store it: perf-notes A32). */
    CUtensorMap o_map;
    void *o;
    const void *q, *k, *v;
    float *lse;                  /* log-sum-exp per (head, query), or NULL */
    const int32_t *cu_seqlens_q; /* [batch + 1] token offsets (device), or NULL: fixed lengths */
    const int32_t *cu_seqlens_k;
    int64_t q_batch, q_seq, q_head; /* strides of batch, sequence and head */
    int64_t k_batch, k_seq, k_head;
    int64_t v_batch, v_seq, v_head;
    int64_t o_batch, o_seq, o_head;
    int64_t lse_batch, lse_head; /* lse[b * lse_batch + h * lse_head + token] */
    int32_t batch, heads_q, heads_kv, head_dim;
    int32_t seqlen_q, seqlen_k;  /* the lengths, or with cu_seqlens the maxima */
    int32_t m_blocks;            /* query blocks per (batch, head): ceil(seqlen_q / BLOCK_M) */
    int32_t head_group;          /* (batch, head) pairs whose programs run together (>= 1) */
    int32_t causal;              /* 1: key j sees query i iff j <= i + seqlen_k - seqlen_q */
    int32_t paired;              /* 1: persistent programs walk causal blocks in long/short pairs */
    int32_t o_by_map;            /* 1: o_map holds the output (warp-specialized variants) */
    int32_t blocks_fastest;      /* 1: a group's walk takes each head's query blocks in a row;
                                  * 2: the same, each head's blocks turned (a ragged last one) */
    /* The walk's divisors (program_block_at): a group's units (head_group pairs times the
     * units of a pair), a group's pairs and the last group's, heads_q, heads_q / heads_kv,
     * m_blocks, and the programs launched (gridDim.x: blocks_fastest 2's turn). */
    tile_divisor group_units, group_pairs, last_group_pairs, heads_q_div, heads_per_kv, m_blocks_div,
        programs_div;
    float scale;                 /* softmax scale */
    float scale_log2;            /* scale * log2(e): exponents are taken base 2 */
    /* The caller's workspace, or NULL (counter_take, tile_matrix.cuh): the variants that hand
     * blocks over (grid param HANDED) take each next query block from it as they finish
     * (perf-notes A28); the host gives it to no other. */
    unsigned long long *block_counter;
    /* A split of the keys (splits > 1; variants of one program a block, src/attention.c):
     * the walk's batch is batch x splits, split s of a block reads its sequence's keys
     * [s x split_keys, (s + 1) x split_keys) and leaves its rows' O / sum and log-sum-exp in
     * split_o ([splits, batch, heads_q, seqlen_q, head_dim]; varlen: seqlen_q the longest) and
     * split_lse (the same without head_dim); the last split of a block to count itself in at
     * split_counters ([batch, heads_q, m_blocks], zeroed) combines them into o and lse
     * (store_split). */
    int32_t splits, split_keys;
    float *split_o, *split_lse;
    unsigned *split_counters;
    /* Query heads folded into a block's rows (fold > 1; variants that copy Q and store O by
     * threads, src/attention.c fold_query_heads): a (folded) head's sequence holds `fold` query
     * heads of one key/value head, query s of the i-th at row i x n + s (n: the sequence's
     * queries a head), those heads q_fold, o_fold and lse_fold elements apart in q, o and lse.
     * 1: none. */
    int32_t fold;
    int64_t q_fold, o_fold, lse_fold;
} tile_attention_kernel_args;

#endif
