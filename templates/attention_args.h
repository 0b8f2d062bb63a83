/* The argument block of the flash-attention kernels (kernels/attention.tile), passed by value:
 * written by the host (src/attention.c, C11) and read by the device (C++), so plain C with
 * fixed-width types and one definition for both. Strides are in elements. */
#ifndef FUSEDOPS_ATTENTION_ARGS_H
#define FUSEDOPS_ATTENTION_ARGS_H

#include <cuda.h> /* CUtensorMap */
#include <stdint.h>

typedef struct tile_attention_kernel_args {
    /* Tensor maps of the warp-specialized variants (copies by the tensor memory accelerator),
     * encoded per call by the host over (head_dim, seq, heads, batch), 128-byte swizzled in
     * boxes of 64 columns x BLOCK_M (q) or BLOCK_N (k, v) positions; unused (zero) otherwise. */
    CUtensorMap q_map, k_map, v_map;
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
    float scale;                 /* softmax scale */
    float scale_log2;            /* scale * log2(e): exponents are taken base 2 */
} tile_attention_kernel_args;

#endif
