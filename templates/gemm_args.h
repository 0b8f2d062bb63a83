/* The argument block of the grouped matmul kernels (kernels/grouped_matmul.tile), passed by
 * value: written by the host (src/grouped_matmul.c, C11) and read by the device (C++), so plain
 * C with fixed-width types and one definition for both. Strides are in elements. */
#ifndef FUSEDOPS_GEMM_ARGS_H
#define FUSEDOPS_GEMM_ARGS_H

#include <stdint.h>

typedef struct tile_gemm_kernel_args {
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
} tile_gemm_kernel_args;


#endif
