/* Prints the layout of the public parameter structs as this C compiler lays them out, one line a
 * field: "struct field offset size", then "struct sizeof size". tests/python/test_ctypes_layout.py
 * compares it with the ctypes mirrors in python/fusedops/_lib.py. */
#include <stddef.h>
#include <stdio.h>

#include "fusedops.h"

#define FIELD(s, f) printf("%s %s %zu %zu\n", #s, #f, offsetof(s, f), sizeof(((s *)0)->f))
#define SIZE(s) printf("%s sizeof %zu\n", #s, sizeof(s))

int main(void) {
    FIELD(tile_variant_info, struct_size);
    FIELD(tile_variant_info, name);
    FIELD(tile_variant_info, op);
    FIELD(tile_variant_info, dtype);
    FIELD(tile_variant_info, arch_min);
    FIELD(tile_variant_info, arch_max);
    FIELD(tile_variant_info, threads);
    FIELD(tile_variant_info, cluster);
    FIELD(tile_variant_info, smem_bytes);
    FIELD(tile_variant_info, max_cols);
    FIELD(tile_variant_info, align_bytes);
    FIELD(tile_variant_info, params);
    SIZE(tile_variant_info);

    FIELD(tile_decision, struct_size);
    FIELD(tile_decision, variant);
    FIELD(tile_decision, rule);
    FIELD(tile_decision, eligible);
    FIELD(tile_decision, arch);
    FIELD(tile_decision, reason);
    SIZE(tile_decision);

    FIELD(tile_add_norm_args, struct_size);
    FIELD(tile_add_norm_args, dtype);
    FIELD(tile_add_norm_args, norm);
    FIELD(tile_add_norm_args, rows);
    FIELD(tile_add_norm_args, cols);
    FIELD(tile_add_norm_args, y);
    FIELD(tile_add_norm_args, ld_y);
    FIELD(tile_add_norm_args, s);
    FIELD(tile_add_norm_args, ld_s);
    FIELD(tile_add_norm_args, x);
    FIELD(tile_add_norm_args, ld_x);
    FIELD(tile_add_norm_args, residual);
    FIELD(tile_add_norm_args, ld_residual);
    FIELD(tile_add_norm_args, bias);
    FIELD(tile_add_norm_args, weight);
    FIELD(tile_add_norm_args, norm_bias);
    FIELD(tile_add_norm_args, eps);
    FIELD(tile_add_norm_args, p);
    FIELD(tile_add_norm_args, seed);
    FIELD(tile_add_norm_args, offset);
    FIELD(tile_add_norm_args, mask);
    FIELD(tile_add_norm_args, mean);
    FIELD(tile_add_norm_args, rstd);
    SIZE(tile_add_norm_args);

    FIELD(tile_flash_attention_args, struct_size);
    FIELD(tile_flash_attention_args, dtype);
    FIELD(tile_flash_attention_args, batch);
    FIELD(tile_flash_attention_args, heads_q);
    FIELD(tile_flash_attention_args, heads_kv);
    FIELD(tile_flash_attention_args, head_dim);
    FIELD(tile_flash_attention_args, causal);
    FIELD(tile_flash_attention_args, seqlen_q);
    FIELD(tile_flash_attention_args, seqlen_k);
    FIELD(tile_flash_attention_args, scale);
    FIELD(tile_flash_attention_args, o);
    FIELD(tile_flash_attention_args, q);
    FIELD(tile_flash_attention_args, k);
    FIELD(tile_flash_attention_args, v);
    FIELD(tile_flash_attention_args, q_batch_stride);
    FIELD(tile_flash_attention_args, q_seq_stride);
    FIELD(tile_flash_attention_args, q_head_stride);
    FIELD(tile_flash_attention_args, k_batch_stride);
    FIELD(tile_flash_attention_args, k_seq_stride);
    FIELD(tile_flash_attention_args, k_head_stride);
    FIELD(tile_flash_attention_args, v_batch_stride);
    FIELD(tile_flash_attention_args, v_seq_stride);
    FIELD(tile_flash_attention_args, v_head_stride);
    FIELD(tile_flash_attention_args, o_batch_stride);
    FIELD(tile_flash_attention_args, o_seq_stride);
    FIELD(tile_flash_attention_args, o_head_stride);
    FIELD(tile_flash_attention_args, cu_seqlens_q);
    FIELD(tile_flash_attention_args, cu_seqlens_k);
    FIELD(tile_flash_attention_args, total_q);
    FIELD(tile_flash_attention_args, total_k);
    FIELD(tile_flash_attention_args, lse);
    FIELD(tile_flash_attention_args, workspace);
    FIELD(tile_flash_attention_args, workspace_bytes);
    SIZE(tile_flash_attention_args);

    FIELD(tile_grouped_matmul_args, struct_size);
    FIELD(tile_grouped_matmul_args, dtype);
    FIELD(tile_grouped_matmul_args, groups);
    FIELD(tile_grouped_matmul_args, total_m);
    FIELD(tile_grouped_matmul_args, n);
    FIELD(tile_grouped_matmul_args, k);
    FIELD(tile_grouped_matmul_args, c);
    FIELD(tile_grouped_matmul_args, a);
    FIELD(tile_grouped_matmul_args, b);
    FIELD(tile_grouped_matmul_args, ldc);
    FIELD(tile_grouped_matmul_args, lda);
    FIELD(tile_grouped_matmul_args, b_group_stride);
    FIELD(tile_grouped_matmul_args, b_k_stride);
    FIELD(tile_grouped_matmul_args, b_n_stride);
    FIELD(tile_grouped_matmul_args, bias);
    FIELD(tile_grouped_matmul_args, bias_group_stride);
    FIELD(tile_grouped_matmul_args, offsets);
    FIELD(tile_grouped_matmul_args, workspace);
    SIZE(tile_grouped_matmul_args);
    return 0;
}
