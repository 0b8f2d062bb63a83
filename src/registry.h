/* The variant registry and tuned tables, as the generator writes them (build/gen/registry.c). */
#ifndef FUSEDOPS_REGISTRY_H
#define FUSEDOPS_REGISTRY_H

#include <stdint.h>

#include "fusedops.h"

typedef struct tile_variant {
    const char *name; /* kernel symbol, registry key, tuning key, bench and test label */
    const char *op;
    tile_dtype dtype;
    int32_t threads;
    int32_t rows_per_program;
    int32_t cluster;
    int32_t smem_bytes;
    int64_t max_cols; /* 0: any width */
    int32_t align_bytes;
    int32_t arch_min;
    int32_t arch_max; /* 0: open */
    int32_t persistent; /* programs loop over row blocks: launch at most SMs x occupancy */
    int32_t features;   /* optional work it implements (TILE_FEATURE_* bits, norm_args.h) */
    int32_t lean;       /* 1: compiled for rows of exactly max_cols columns and calls without
                         * optional inputs (tile_problem.optional_inputs) */
    int32_t lean_twin;  /* index of this variant's lean twin, or -1: dispatch takes the twin
                         * in its place wherever the call allows */
    int32_t column_tile; /* > 0: a program takes one tile of this many columns of a row, and
                          * launches count rows x column tiles; only for calls that need no
                          * row statistics (tile_problem.pointwise) */
    const char *params;
} tile_variant;

extern const tile_variant tile_registry[];
extern const int32_t tile_registry_count;

/* A tuned winner: for (arch, op, dtype) and the shape bucket (2^rows_log2,
 * tuning_cols_of_step(cols_step)). */
typedef struct tile_tuned_entry {
    int32_t arch;
    const char *op;
    tile_dtype dtype;
    int32_t rows_log2;
    int32_t cols_step;
    int32_t variant; /* index into tile_registry */
    /* The tuned times (0 where the table has none) and the runner-up (-1: none), which
     * dispatch weighs against the winner by waves at the call's rows. */
    float time_us;
    int32_t runner_up; /* index into tile_registry, or -1 */
    float runner_up_us;
    int32_t bandwidth_gbs; /* holds on devices of about this peak memory bandwidth alone (an
                            * arch column sm_90@4814); 0: every device of the arch */
} tile_tuned_entry;

extern const tile_tuned_entry tile_tuned_table[];
extern const int32_t tile_tuned_count;

#endif
