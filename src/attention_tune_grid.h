/* The shapes `fusedops tune --op attention` times (cli/fusedops.c), one a bucket: non-causal,
 * seqlen_k = seqlen_q, dense BSHD, {batch, heads_q, heads_kv, seqlen}, at each head dim. Their
 * query rows (batch * heads_q * seqlen) are powers of two, so each is its own bucket, and
 * dispatch knows the shape a tuned attention line was timed on (tile_attention_walk_ratio,
 * src/attention.c). */
#ifndef FUSEDOPS_ATTENTION_TUNE_GRID_H
#define FUSEDOPS_ATTENTION_TUNE_GRID_H

#include <stdint.h>

static const int64_t attention_tune_grid[][4] = {{1, 8, 2, 128},   {1, 8, 2, 512},
                                                 {1, 16, 4, 1024}, {2, 16, 4, 2048},
                                                 {4, 32, 8, 2048}, {4, 32, 8, 8192}};
static const int64_t attention_tune_head_dims[] = {64, 128};

#endif
