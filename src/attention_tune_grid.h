/* The shapes `fusedops tune --op attention` times (cli/fusedops.c), one a bucket: non-causal,
 * seqlen_k = seqlen_q, dense BSHD, {batch, heads_q, heads_kv, seqlen}, at each head dim. Their
 * query rows (batch * heads_q * seqlen) are powers of two, so each is its own bucket, and
 * dispatch knows the shape a tuned attention line was timed on (tile_attention_walk_ratio,
 * src/attention.c). */
#ifndef FUSEDOPS_ATTENTION_TUNE_GRID_H
#define FUSEDOPS_ATTENTION_TUNE_GRID_H

#include <stddef.h>
#include <stdint.h>

static const int64_t attention_tune_grid[][4] = {{1, 8, 2, 128},   {1, 8, 2, 512},
                                                 {1, 16, 4, 1024}, {2, 16, 4, 2048},
                                                 {4, 32, 8, 2048}, {4, 32, 8, 8192}};
static const int64_t attention_tune_head_dims[] = {64, 128};

/* The grid's shape of `rows` query rows, or NULL where none has that many. */
static inline const int64_t *attention_tune_shape(int64_t rows) {
    for (size_t i = 0; i < sizeof attention_tune_grid / sizeof *attention_tune_grid; i++) {
        const int64_t *shape = attention_tune_grid[i];
        if (shape[0] * shape[1] * shape[3] == rows) return shape;
    }
    return NULL;
}

#endif
