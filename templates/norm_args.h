/* The argument block of the add-and-norm kernels (kernels/norm.tile), passed by value: written
 * by the host (src/norm.c, C11) and read by the device (C++), so plain C with fixed-width types
 * and one definition for both. */
#ifndef FUSEDOPS_NORM_ARGS_H
#define FUSEDOPS_NORM_ARGS_H

#include <stdint.h>

/* Optional work a variant implements (the grids' `set features`, the registry's `features`):
 * dispatch only gives a call to variants that have what it needs. */
#define TILE_FEATURE_DROPOUT 1 /* dropout (p > 0) or a keep mask */

typedef struct tile_norm_kernel_args {
    void *y;                /* norm output, or NULL (no norm) */
    void *s;                /* residual stream output, or NULL (s is x itself) */
    const void *x;
    const void *residual;   /* or NULL */
    const void *bias;       /* [cols] added to x, or NULL */
    const void *weight;     /* [cols] norm scale, or NULL */
    const void *norm_bias;  /* [cols] norm shift, or NULL */
    uint8_t *mask;          /* keep bytes, row stride cols, or NULL */
    float *mean, *rstd;     /* per-row statistics, or NULL */
    int64_t rows, cols;
    int64_t ld_y, ld_s, ld_x, ld_residual;
    uint64_t seed, offset;  /* dropout's Philox key and counter offset */
    uint32_t keep_threshold;/* keep element iff its 16-bit draw >= this; 0: no dropout */
    float keep_scale;       /* 1 / (1 - p) as fp32 */
    float eps;
    int32_t norm;           /* tile_norm_kind: 0 none, 1 LayerNorm, 2 RMSNorm */
} tile_norm_kernel_args;

#endif
