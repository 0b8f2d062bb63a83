/* The argument block of the grouped matmul kernels (kernels/grouped_matmul.tile), passed by
 * value: written by the host (src/grouped_matmul.c, C11) and read by the device (C++), so plain
 * C with fixed-width types and one definition for both. Strides are in elements. */
#ifndef FUSEDOPS_GEMM_ARGS_H
#define FUSEDOPS_GEMM_ARGS_H

#include <cuda.h> /* CUtensorMap */
#include <stdint.h>

typedef struct tile_gemm_kernel_args {
    /* Tensor maps of the warp-specialized variants (copies by the tensor memory accelerator),
     * encoded per call by the host; unused (zero) for the others. a_map: A [total_m, k] in
     * boxes of 64 k x BLOCK_M rows. b_map: B [groups, n, k] in boxes of 64 k x BLOCK_N (K-major) or
     * [groups, k, n] in boxes of 64 n x 64 k (N-major). 128-byte swizzled, as wgmma reads.
     * c_map: C [total_m, n] in boxes of 64 n x 64 rows, as the epilogue's staging is laid out;
     * encoded only where C allows it (c_by_map 1): 16-byte aligned, rows and n 16-byte
     * multiples (a store stops at n in whole 16 bytes). a_rows_map: A in boxes of 64 k x 8 rows,
     * for half tiles (rows past the group come from past A's end: zeros). */
    CUtensorMap a_map, b_map, c_map, a_rows_map;
    void *c;
    const void *a, *b;
    const void *bias;          /* [groups, n] rows bias_group apart, or NULL */
    const int32_t *offsets;    /* [groups] cumulative row ends (device), clamped on use */
    int64_t lda, ldc;          /* row strides of A and C */
    int64_t b_group;           /* stride between the groups' B matrices */
    int64_t b_ld;              /* B's non-unit stride: of k when b_kmajor == 0, of n when 1 */
    int64_t bias_group;
    int64_t total_m;
    int32_t n, k;
    int32_t groups;
    int32_t b_kmajor;          /* 1: B_g is [n, k] with k contiguous; 0: [k, n], n contiguous */
    int32_t c_by_map;          /* 1: full 64-row tile halves go out through c_map */
    int32_t half_tiles;        /* 1: a tile of 64 rows or fewer is split by columns (where the
                                * host asks: wants_half_tiles, perf-notes G10, G11) */
    /* The caller's workspace, or NULL: [0] tiles taken past the grid's first, [1] programs
     * done; the last program out zeroes both. The warp-specialized variants take tiles from
     * it as they finish (perf-notes G11); the others never touch it. */
    unsigned long long *tile_counter;
} tile_gemm_kernel_args;


#endif
