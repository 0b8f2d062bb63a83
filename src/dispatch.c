/* Dispatch: eligibility by arch and shape predicate, then the tuned table for the arch
 * (exact bucket, then nearest), then a cost heuristic. */
#define _GNU_SOURCE /* getline */
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "tuning_parse.h"

int32_t tile_arch_smem_limit(int32_t arch) {
    /* CUDA's per-block opt-in limits: sm_86, sm_89 and sm_12x have 99 KiB. */
    if (arch == 80 || arch == 87) return 163 * 1024;
    if (arch >= 90 && arch < 120) return 227 * 1024;
    return 99 * 1024;
}

/* ---------------------------------------------------------------- run-time tuned table */
/* FUSEDOPS_TUNING_FILE names a table (same format as autotune_results/) loaded once; within each
 * set of lines dispatch weighs (tile_dispatch) its entries win ties with the compiled ones. A
 * malformed file fails every call that dispatches, with file:line in the message, rather than
 * being ignored. */
static pthread_once_t runtime_table_once = PTHREAD_ONCE_INIT;
static tile_tuned_entry *runtime_table;
static int32_t runtime_table_count;
static tile_status runtime_table_status = TILE_STATUS_SUCCESS;
static char runtime_table_message[384];

/* The registry index of `name`, the line's winner or (runner_up) its runner-up, when it is a
 * variant of the line's op (or of a table op's variant op) and dtype; else -1, with the reason
 * in err. */
static int32_t line_variant(const tuning_line *t, const char *name, int runner_up, char *err,
                            size_t err_size) {
    const int32_t v = tile_variant_find(name);
    const char *op = tuning_variant_op(t->op);
    if (v >= 0 && !strcmp(tile_registry[v].op, op) && (int)tile_registry[v].dtype == t->dtype)
        return v;
    const char *role = runner_up ? "runner-up" : "variant";
    if (v < 0 && !runner_up) snprintf(err, err_size, "unknown variant '%s'", name);
    else
        snprintf(err, err_size, "%s '%s' is not a %s %s variant", role, name, op,
                 tile_dtype_string((tile_dtype)t->dtype));
    return -1;
}

static void runtime_table_load(void) {
    const char *path = getenv("FUSEDOPS_TUNING_FILE");
    if (!path || !*path) return;
    FILE *f = fopen(path, "r");
    if (!f) {
        runtime_table_status = TILE_STATUS_INVALID_ARGUMENT;
        snprintf(runtime_table_message, sizeof runtime_table_message,
                 "FUSEDOPS_TUNING_FILE=%s cannot be opened", path);
        return;
    }
    char *line = NULL;
    size_t cap = 0;
    int line_no = 0, capacity = 0;
    while (getline(&line, &cap, f) >= 0) {
        line_no++;
        tuning_line t;
        char err[256];
        int r = tuning_parse_line(line, &t, err, sizeof err);
        if (r == 0) continue;
        int32_t v = r > 0 ? line_variant(&t, t.variant, 0, err, sizeof err) : -1;
        const int has_runner_up = v >= 0 && t.runner_up;
        const int32_t runner_up =
            has_runner_up ? line_variant(&t, t.runner_up, 1, err, sizeof err) : -1;
        if (has_runner_up && runner_up < 0) v = -1;
        if (v < 0) {
            runtime_table_status = TILE_STATUS_INVALID_ARGUMENT;
            snprintf(runtime_table_message, sizeof runtime_table_message,
                     "FUSEDOPS_TUNING_FILE %s:%d: %s", path, line_no, err);
            break;
        }
        if (runtime_table_count == capacity) {
            capacity = capacity ? capacity * 2 : 64;
            tile_tuned_entry *grown = realloc(runtime_table, (size_t)capacity * sizeof *grown);
            if (!grown) {
                runtime_table_status = TILE_STATUS_INTERNAL;
                snprintf(runtime_table_message, sizeof runtime_table_message, "out of memory");
                break;
            }
            runtime_table = grown;
        }
        /* op points at the registry's string (or the table op's), which outlives the file's
         * buffer */
        const tuning_table_op *table_op = tuning_table_op_find(t.op);
        runtime_table[runtime_table_count++] = (tile_tuned_entry){
            t.arch,      table_op ? table_op->name : tile_registry[v].op,
            (tile_dtype)t.dtype,     t.rows_log2, t.cols_step,
            v,           (float)t.time_us,    runner_up,               (float)t.runner_up_us,
            t.bandwidth_gbs};
    }
    free(line);
    fclose(f);
}

void tile_decision_append(tile_decision *decision, const char *fmt, ...) {
    const size_t used = strlen(decision->reason);
    va_list args;
    va_start(args, fmt);
    vsnprintf(decision->reason + used, sizeof decision->reason - used, fmt, args);
    va_end(args);
}

int tile_problem_splits_keys(const tile_problem *p) {
    const int64_t sms = p->sm_count > 0 ? p->sm_count : 132;
    return p->key_split_blocks > 0 && 2 * p->key_split_blocks <= sms;
}

/* Whether an attention call is bound by the bytes of K and V in flight an SM: it splits its
 * keys (a split a program), or each block streams its own K and V for few rows (decode). */
static int streams_keys(const tile_problem *p) {
    return p->streams_keys || tile_problem_splits_keys(p);
}

/* The row-wise ops (softmax, norm: a program is a block of rows, and column tiles of them): the
 * ops whose launch and waves follow p->rows alone. */
static int row_op(const tile_problem *p) {
    return !strcmp(p->op, "softmax") || !strcmp(p->op, "norm");
}

int tile_variant_eligible(const tile_variant *v, const tile_problem *p, const char **why) {
    const char *reason = NULL;
    if (strcmp(v->op, p->op) || v->dtype != p->dtype) reason = "another op or dtype";
    /* arch first: a variant the device cannot run is refused as such (ARCH_MISMATCH, forced
     * or dispatched) whatever else the call asks of it */
    else if (p->arch < v->arch_min || (v->arch_max && p->arch > v->arch_max))
        reason = "arch";
    else if (v->smem_bytes > p->smem_limit) reason = "shared memory"; /* 128 KiB on sm_86/89 */
    else if ((v->features & p->features) != p->features) reason = "features";
    else if (p->no_tensor_maps && tile_variant_uses_tensor_maps(v))
        reason = "tensor maps";
    else if (v->persistent && tile_problem_splits_keys(p)) reason = "key splits";
    else if (v->column_tile && !p->pointwise) reason = "row statistics";
    else if (v->max_cols && p->cols > v->max_cols) reason = "cols";
    else if (p->align % v->align_bytes) reason = "alignment";
    else if (v->lean && (p->cols != v->max_cols || p->optional_inputs)) reason = "lean";
    /* a row op's launch of a program a row block (and column tile), cluster blocks each: over
     * the grid limit, a variant of taller blocks or a persistent one takes the call */
    else if (!v->persistent && row_op(p) &&
             tile_row_programs(v, p->rows, p->cols) > INT32_MAX / v->cluster)
        reason = "grid";
    if (why) *why = reason;
    return reason == NULL;
}

static int32_t floor_log2(int64_t x) {
    int32_t k = 0;
    while (x > 1) {
        x >>= 1;
        k++;
    }
    return k;
}

/* The tuned table's bucket of a shape: rows to the nearest power of two (in log scale), cols up
 * to the next column bucket (a power of two or 3 times one, tuning_parse.h). */
static void shape_bucket(const tile_problem *p, int32_t *rows_log2, int32_t *cols_step) {
    int32_t k = floor_log2(p->rows);
    /* rows > 2^(k + 1/2)  <=>  rows^2 > 2^(2k + 1); rows < 2^62 here */
    double r = (double)p->rows;
    *rows_log2 = r * r > (double)(1LL << k) * (double)(1LL << k) * 2.0 ? k + 1 : k;
    *cols_step = tuning_cols_step_up(p->cols);
}

/* Best entry of `table` for p (a variant with exactly the call's features): distance rows
 * buckets + 2 * cols half-power steps (4 per power of two), at most 3 rows buckets and 2 steps
 * away; on equal distance the one with more rows (throughput-bound shapes are the costly
 * ones), then more cols (a tile that holds the row), then the first listed: tune lists a
 * bucket's winner first and then, for each narrower alignment, the fastest variant that takes
 * it, so an entry the call's alignment rules out leaves the next one. */
static void nearest_entry(const tile_tuned_entry *table, int32_t count, const tile_problem *p,
                          const char *table_op, int tagged, int32_t rows_log2,
                          int32_t cols_step, const tile_tuned_entry **best,
                          int32_t *best_distance) {
    for (int32_t i = 0; i < count; i++) {
        const tile_tuned_entry *e = &table[i];
        /* the cheap tests first: most entries are another shape's */
        int32_t dr = e->rows_log2 - rows_log2, dc = e->cols_step - cols_step;
        int32_t adr = dr < 0 ? -dr : dr, adc = dc < 0 ? -dc : dc;
        if (adc > 2 || adr > 3) continue;
        int32_t distance = adr + 2 * adc;
        if (distance > *best_distance) continue;
        if (e->arch != p->arch || e->dtype != p->dtype || strcmp(e->op, table_op)) continue;
        /* the device's own lines (tagged with its memory bandwidth), or the arch's */
        if ((e->bandwidth_gbs != 0) != tagged ||
            !tuning_bandwidth_matches(e->bandwidth_gbs, p->mem_bandwidth_gbs))
            continue;
        /* Winners were timed on calls with their features: a dropout variant's entry is for
         * dropout calls, not for the plain ones it could also run (more slowly). */
        if (tile_registry[e->variant].features != p->features) continue;
        if (!tile_variant_eligible(&tile_registry[e->variant], p, NULL)) continue;
        if (distance < *best_distance ||
            (distance == *best_distance && *best &&
             (e->rows_log2 > (*best)->rows_log2 ||
              (e->rows_log2 == (*best)->rows_log2 && e->cols_step > (*best)->cols_step)))) {
            *best_distance = distance;
            *best = e;
        }
    }
}

int64_t tile_variant_param(const tile_variant *v, const char *key) {
    const size_t len = strlen(key);
    for (const char *p = v->params; p && *p;) {
        if (!strncmp(p, key, len) && p[len] == '=') {
            char *end;
            const long long value = strtoll(p + len + 1, &end, 10);
            return end != p + len + 1 && (*end == ' ' || *end == '\0') && value > 0 ? value : 0;
        }
        p = strchr(p, ' ');
        if (p) p++;
    }
    return 0;
}

/* The programs a row of `cols` columns takes: its column tiles where v splits rows, else 1. */
static int64_t row_column_tiles(const tile_variant *v, int64_t cols) {
    return v->column_tile ? (cols + v->column_tile - 1) / v->column_tile : 1;
}

int64_t tile_row_programs(const tile_variant *v, int64_t rows, int64_t cols) {
    return (rows + v->rows_per_program - 1) / v->rows_per_program * row_column_tiles(v, cols);
}

void tile_problem_on_device(tile_problem *p, const tile_device *device) {
    p->arch = device->arch;
    p->sm_count = device->sm_count;
    p->mem_bandwidth_gbs = device->mem_bandwidth_gbs;
    p->smem_limit = device->smem_limit;
    p->blocks_per_sm = device->blocks_per_sm;
}

/* The time of `rows` rows on variant `index` in units of one full wave of resident thread
 * blocks (its row blocks, `cluster` thread blocks each, over what the device holds at once);
 * 0 when the occupancy is unknown. With at most 2 blocks resident per SM a partial last wave
 * leaves SMs idle for a whole program, so it costs a full wave (ceil); with more, the blocks
 * of a partial wave overlap those still running and the time follows the work, but never
 * below one wave (an underfilled GPU is bound by a program's latency, not by the bytes). */
static double waves(int32_t index, const tile_problem *p, int64_t rows) {
    const tile_variant *v = &tile_registry[index];
    const int32_t per_sm = p->blocks_per_sm[index];
    const int64_t resident = (int64_t)p->sm_count * per_sm;
    if (resident < 1) return 0.0;
    /* in double: a tuned line's rows bucket may be as large as 2^62 (blocks past int64) */
    const double w =
        (double)tile_row_programs(v, rows, p->cols) * v->cluster / (double)resident;
    if (per_sm <= 2) return ceil(w);
    return w > 1.0 ? w : 1.0;
}

/* A bucket's winner and runner-up were timed at the bucket's rows. Where the call's rows take
 * the two a different number of waves than those did, their order may not hold (a tile of one
 * program per SM takes 256 rows in 2 waves on 132 SMs, 300 rows in 3; a variant of four per SM
 * takes both in 1): each time is scaled by its variant's waves at the call's rows over those
 * at the bucket's rows, and the runner-up is taken where that predicts it over 10% faster.
 * Row-wise ops only (a program is a block of rows; attention's and the grouped matmul's
 * programs are not a function of p->rows alone), and only with the device's occupancy.
 * Returns the variant, with both predictions in *winner_us and *runner_up_us (0 where not
 * weighed). */
static int32_t weigh_waves(const tile_tuned_entry *e, const tile_problem *p, double *winner_us,
                           double *runner_up_us) {
    *winner_us = *runner_up_us = 0.0;
    if (!p->blocks_per_sm || p->sm_count < 1 || e->runner_up < 0 || !(e->time_us > 0.0f) ||
        !(e->runner_up_us > 0.0f) || !row_op(p))
        return e->variant;
    const tile_variant *runner_up = &tile_registry[e->runner_up];
    if (!tile_variant_eligible(runner_up, p, NULL) || runner_up->features != p->features)
        return e->variant;
    const int64_t bucket_rows = (int64_t)1 << e->rows_log2;
    const double w_call = waves(e->variant, p, p->rows), w_bucket = waves(e->variant, p, bucket_rows);
    const double r_call = waves(e->runner_up, p, p->rows),
                 r_bucket = waves(e->runner_up, p, bucket_rows);
    if (!(w_call > 0.0 && w_bucket > 0.0 && r_call > 0.0 && r_bucket > 0.0)) return e->variant;
    *winner_us = e->time_us * w_call / w_bucket;
    *runner_up_us = e->runner_up_us * r_call / r_bucket;
    /* The model leaves out how much of a partial wave the memory system hides: trust it only
     * for a clear gain. */
    return *runner_up_us < 0.9 * *winner_us ? e->runner_up : e->variant;
}

/* Attention: a bucket's winner and runner-up were timed on the tune grid's shape of the bucket
 * (non-causal, with a workspace). The call may walk otherwise: causal blocks stop at the
 * diagonal, so a taller block computes more pairs past it; a call of few blocks a program
 * leaves some programs idle in its last round, more so for taller blocks or a fixed walk
 * (1 x 16 heads x 2048 x 64: 176 blocks of 192 rows take two rounds of 132 programs where
 * the grid's 352 took three, 256 of 128 rows two where 512 took four). So each time is scaled
 * by its variant's busiest program's work on the call over that on the grid shape
 * (tile_attention_walk_ratio), and the runner-up taken where that predicts it over 4% faster
 * (causal) or 7% (full). Only between variants the model was fitted on (persistent and
 * warp-specialized: tile_attention_walk_modelled). Perf-notes A34: on an H200 at head dim 64
 * this picked within 2% of the faster of two variants on 76 of 82 measured calls, bf16 and
 * f16 (mean loss 0.4%), where the pairs-only weighing lost 2.1% on average. Returns the
 * variant, with both predictions (0 where not weighed). */
static int32_t weigh_attention(const tile_tuned_entry *e, const tile_problem *p, double *winner_us,
                               double *runner_up_us, int *by_counter) {
    *winner_us = *runner_up_us = 0.0;
    *by_counter = 0;
    if (e->runner_up < 0 || !(e->time_us > 0.0f) || !(e->runner_up_us > 0.0f)) return e->variant;
    const tile_variant *winner = &tile_registry[e->variant], *runner_up = &tile_registry[e->runner_up];
    if (!tile_variant_eligible(runner_up, p, NULL) || runner_up->features != p->features)
        return e->variant;
    if (!tile_attention_walk_modelled(winner) || !tile_attention_walk_modelled(runner_up))
        return e->variant;
    /* A varlen call's blocks are as long as its sequences, device data the model cannot walk:
     * a ragged batch leaves a fixed walk's programs unequal shares, which a counter's walk
     * evens out. Causal, with a workspace, the variant that takes blocks from its counter goes
     * first, unweighed (perf-notes A35c: +19-36% on ragged head-64 batches, +3.5% at equal
     * lengths). Full calls stay weighed: there the counter's 128-row blocks gained 1.5-8% on
     * ragged batches and lost 8-11% at equal lengths. */
    if (p->varlen && p->block_counter && p->causal) {
        const int runner_up_counts = tile_attention_hands_blocks_over(runner_up);
        *by_counter = tile_attention_hands_blocks_over(winner) != runner_up_counts;
        if (*by_counter) return runner_up_counts ? e->runner_up : e->variant;
    }
    const double w = tile_attention_walk_ratio(e->variant, p, e->rows_log2),
                 r = tile_attention_walk_ratio(e->runner_up, p, e->rows_log2);
    if (!(w > 0.0 && r > 0.0)) return e->variant;
    *winner_us = e->time_us * w;
    *runner_up_us = e->runner_up_us * r;
    /* The lines' rates are noisy for this: timed on inputs out of L2, the two head-64 heights'
     * gap at 262144 rows is 4.8% in bf16 and 3.2% in f16, against 8.5% and 6% warm (A34). So
     * a flip must clear that: 4% where the pairs past a causal call's diagonal, which the
     * model counts, add to the rounds; 7% on the rounds alone (full calls). */
    return *runner_up_us < (p->causal ? 0.96 : 0.93) * *winner_us ? e->runner_up : e->variant;
}

/* Grouped matmul: a product, not a pass over rows, so none of the row-wise terms apply; p->rows
 * is the average group's rows and p->cols the columns of C. */
static double grouped_matmul_cost(const tile_variant *v, const tile_problem *p) {
    double cost = 1.0;
    /* Hopper's warpgroup products (the sm_90-only variants) against mma.sync, as for attention.
     * With the registry's tiles (sm_90: 128 x 128 and 128 x 256; mma.sync up to 128 x 128) the
     * terms below leave the cheapest sm_90 variant under 0.95 and every mma.sync one at 1 or
     * more, so the arch decides first (test_grouped_matmul_heuristic checks a made-up family). */
    if (v->arch_min >= 90) cost *= 0.25;
    /* A tile's size (BLOCK_M x BLOCK_N): a larger one reads each A and B element for more
     * products, and measured faster on every MoE shape of the bench, down to 64 rows a group
     * (perf-notes, G1); only tiny groups or a narrow C, where it pads and leaves SMs idle,
     * take smaller ones. */
    const double tile = (double)v->rows_per_program * (double)tile_variant_param(v, "BLOCK_N");
    if (p->rows >= 16 && p->cols >= 256) {
        /* 0.81x a doubling: the mma.sync tiles' measured step (perf-notes G25: 128 x 128
         * against 64 x 128 at 2048, 256 and 64 rows a group, with the padding below) */
        cost *= pow(16384.0 / (tile > 4096.0 ? tile : 4096.0), 0.3);
    } else {
        cost *= 1.0 + tile / (tile + 16384.0); /* in [1, 2), growing with the tile */
    }
    /* A group's last row block is half padding on average: rows over useful rows, by the
     * average group (p->rows), so short groups take short tiles (perf-notes, G2). Capped at
     * 2.5 (from under 43 rows a group for 128-row tiles), to keep the arch deciding first. */
    const double rows = (double)(p->rows > 0 ? p->rows : 1);
    const double padding = (rows + 0.5 * v->rows_per_program) / rows;
    cost *= padding < 2.5 ? padding : 2.5;
    return cost;
}

/* Heuristic cost of a variant (lower is better), used only where no tuned entry applies. For
 * the row-wise ops (and attention): how many times the ideal traffic it moves, times how badly
 * it fills the GPU. */
double tile_heuristic_cost(const tile_variant *v, const tile_problem *p) {
    if (!strcmp(v->op, "grouped_matmul")) return grouped_matmul_cost(v, p);
    const int32_t sms = p->sm_count > 0 ? p->sm_count : 132;
    double cost;
    int64_t programs;
    if (v->column_tile) {
        /* One pass over column tiles: lanes past the row's last tile are wasted work. */
        cost = (double)(row_column_tiles(v, p->cols) * v->column_tile) / (double)p->cols;
        programs = tile_row_programs(v, p->rows, p->cols);
    } else if (v->max_cols) {
        /* One pass: lanes beyond cols are wasted work; clusters cost a little sync. */
        double capacity = (double)v->max_cols;
        double fill = (double)p->cols / capacity;
        cost = 1.0 / (fill < 1.0 ? fill : 1.0);
        if (v->cluster > 1) cost *= 1.05;
        programs = tile_row_programs(v, p->rows, p->cols) * v->cluster;
    } else {
        /* Two passes: the second read mostly hits L2; charge 30% more traffic. */
        cost = 1.3;
        programs = p->rows * v->cluster;
        /* Tile width beyond the row wastes lanes too. */
        int64_t tile = (int64_t)(v->threads * 8) * v->cluster;
        if (p->cols < tile) cost *= (double)tile / (double)p->cols;
    }
    if (programs < 2 * sms) cost *= 1.0 + (double)(2 * sms - programs) / (2.0 * sms);
    /* Attention: a warp with more query rows feeds more tensor-core products from each key and
     * value fragment it reads from shared memory (32 rows a warp measured ~1.5x faster than 16
     * at head dim 128 on an H100, docs/perf-notes.md). */
    if (!strcmp(v->op, "attention")) {
        const int tensor_maps = tile_variant_uses_tensor_maps(v);
        /* (warp-specialized variants: the producer warpgroup owns no rows) */
        const int32_t row_threads = v->threads - (tensor_maps ? 128 : 0);
        cost *= (double)row_threads / (2.0 * v->rows_per_program);
        /* Taller query blocks: each K/V tile read serves more queries (once the GPU is full;
         * below that, more and shorter blocks fill it). */
        if (programs >= 2 * sms) cost *= 1.0 + 64.0 / v->rows_per_program;
        /* Longer key tiles: fewer barriers and rescales per key (rows_per_program is BLOCK_M;
         * the smem size grows with BLOCK_N, which is all the registry records of it). */
        cost *= 1.0 + 2048.0 / (double)(v->smem_bytes > 0 ? v->smem_bytes : 1);
        /* A ring deeper than two stages (`wgmma3`) is for calls bound by the bytes of K and V
         * in flight (take_deep_ring); elsewhere it measured nothing (perf-notes) and takes
         * shared memory: never the pick, whatever the smem term above says. */
        if (tile_variant_param(v, "STAGES") > 2 && !streams_keys(p)) cost *= 1.1;
        /* ... up to 128 keys: wider ones lose at 2048 keys (perf-notes A36), so the pick stays
         * at 128 and a long call takes the 144-key twin after it (take_long_key_tile). */
        if (tile_variant_param(v, "BLOCK_N") > 128) cost *= 1.03;
        /* Hopper's warpgroup products (the sm_90-only variants) against mma.sync; copies by a
         * producer warpgroup and tensor maps measured 1.5x faster again once the GPU is full
         * (perf-notes, A9). */
        if (v->arch_min >= 90) cost *= 0.25;
        if (tensor_maps && programs >= sms) cost *= 0.66;
    }
    /* Prefer 16-byte accesses, then fewer threads per program (more loads in flight each). */
    cost *= 1.0 + 0.2 / v->align_bytes;
    cost *= 1.0 + v->threads / 65536.0;
    return cost;
}

/* The chosen variant's lean twin where the call allows it: the same program, compiled for rows
 * of exactly its width and without optional inputs, in fewer registers a thread (registry.h).
 * Tables and the heuristic pick among general variants (and weigh waves by their occupancy);
 * `fusedops tune` times a general variant through its twin at the twin's width (perf-notes
 * K12), and elsewhere the twin is taken as no slower: +0.4% to +14% where measured (K6, K10). */
static void take_lean_twin(const tile_problem *p, tile_decision *decision) {
    const int32_t twin = tile_registry[decision->variant].lean_twin;
    if (twin < 0 || !tile_variant_eligible(&tile_registry[twin], p, NULL)) return;
    decision->variant = twin;
    tile_decision_append(decision, "; its lean twin (rows of exactly %lld columns, no optional inputs)",
                         (long long)p->cols);
}

/* Attention's key tile by the call's keys: the chosen variant's twin of 144-key tiles, or of
 * 160, after a tuned line or the heuristic (which keeps to 128-key tiles, tile_heuristic_cost;
 * only `ws` at head dim 128 has such twins). A tuned line is timed at its grid shape's keys
 * (2048 at 262144 query rows), where the 128-key tile wins or ties. From 8192 keys a wider tile
 * pays a key tile's fixed costs (the output's rescale, the row statistics' shuffles, the
 * ping-pong's barriers) over more keys: +2.4% to +3.2% full, +0.1% to +1.2% causal on an H200
 * for 144 keys, which lose 3.5% at 2048 (perf-notes A36). From 2048 keys to 8192 a full call
 * takes the 160-key tiles (`ws160`, Q in shared memory): f16 +1.3% to +1.7% at 2048 and 4096
 * keys, bf16 level (perf-notes A65), with 2048 queries or more at head dim 128 as measured; at
 * 1024 keys it lost 3-5%, and a causal call keeps 128 (160 lost 2-7%: a block's last tile
 * holds more keys past its diagonal). A varlen call's lengths are device data: it keeps the line's.
 * (Other ops have no key length: nothing to do.) */
#define LONG_KEYS 8192
#define WIDE_KEYS 2048
/* Whether two variants' params ("KEY=VALUE ..." in the grid's order) differ at most in `key`
 * and `free_key` ("BLOCK_N=": the key and its equals sign; free_key may be NULL). */
static int same_params_but(const char *a, const char *b, const char *key, const char *free_key) {
    const size_t lk = strlen(key), lf = free_key ? strlen(free_key) : 0;
    while (*a || *b) {
        const size_t la = strcspn(a, " "), lb = strcspn(b, " ");
        const int both_key = !strncmp(a, key, lk) && !strncmp(b, key, lk);
        const int both_free = free_key && !strncmp(a, free_key, lf) && !strncmp(b, free_key, lf);
        if (!both_key && !both_free && (la != lb || strncmp(a, b, la))) return 0;
        a += la + (a[la] == ' ');
        b += lb + (b[lb] == ' ');
    }
    return 1;
}
/* The variant of v's op and dtype, eligible for p, whose params are v's but for `key`, which
 * is `value` ("BLOCK_N", 144: v's twin of 144-key tiles), and `free_key` (NULL, or a param
 * that may differ too); -1 where none. */
static int32_t twin_with(const tile_variant *v, const tile_problem *p, const char *key,
                         int64_t value, const char *free_key) {
    char prefix[32], free_prefix[32];
    snprintf(prefix, sizeof prefix, "%s=", key);
    if (free_key) snprintf(free_prefix, sizeof free_prefix, "%s=", free_key);
    if (!v->params) return -1;
    for (int32_t i = 0; i < tile_registry_count; i++) {
        const tile_variant *t = &tile_registry[i];
        if (t->dtype == v->dtype && !strcmp(t->op, v->op) && tile_variant_param(t, key) == value &&
            t->params &&
            same_params_but(t->params, v->params, prefix, free_key ? free_prefix : NULL) &&
            tile_variant_eligible(t, p, NULL))
            return i;
    }
    return -1;
}
static void take_long_key_tile(const tile_problem *p, tile_decision *decision) {
    const tile_variant *v = &tile_registry[decision->variant];
    const int64_t block_n = tile_variant_param(v, "BLOCK_N");
    if (p->varlen || (block_n != 128 && block_n != 144)) return;
    if (p->seqlen_k >= LONG_KEYS) {
        if (block_n == 144) return;
        const int32_t twin = twin_with(v, p, "BLOCK_N", 144, NULL);
        if (twin < 0) return;
        decision->variant = twin;
        tile_decision_append(decision, "; its twin of 144-key tiles (%d keys or more)", LONG_KEYS);
    } else if (!p->causal && p->seqlen_k >= WIDE_KEYS && p->seqlen_q >= WIDE_KEYS &&
               p->cols == 128) {
        /* (from 128 keys, or 144 where a nearest line timed at 8192 keys named them: GQA 4 x
         * 32 x 4096 full ran 1.4-1.6% faster on 160 than 144, perf-notes A65b); only where
         * measured: as many queries as keys, head dim 128 (96 runs these kernels padded) */
        const int32_t twin = twin_with(v, p, "BLOCK_N", 160, "QREG");
        if (twin < 0) return;
        decision->variant = twin;
        tile_decision_append(decision, "; its twin of 160-key tiles (full, %d to %d keys)",
                             WIDE_KEYS, LONG_KEYS - 1);
    }
}

/* A call bound by the bytes of K and V in flight (streams_keys) takes the chosen variant's twin
 * of one more stage (family `wgmma3`: two key tiles of copies ahead, not one): 9-11% faster on
 * an H200 where splits fill the GPU (perf-notes A46), 10-19% on decode calls whose blocks fill
 * it unsplit (A48). */
static void take_deep_ring(const tile_problem *p, tile_decision *decision) {
    const tile_variant *v = &tile_registry[decision->variant];
    const int64_t stages = tile_variant_param(v, "STAGES");
    if (!streams_keys(p) || stages < 2) return;
    const int32_t twin = twin_with(v, p, "STAGES", stages + 1, NULL);
    if (twin < 0) return;
    decision->variant = twin;
    tile_decision_append(decision, "; its twin of %lld stages (K and V streamed)",
                         (long long)(stages + 1));
}

tile_status tile_dispatch(const tile_problem *p, tile_decision *decision) {
    int32_t eligible = 0, arch_ok = 0, shape_ok = 0;
    for (int32_t i = 0; i < tile_registry_count; i++) {
        const tile_variant *v = &tile_registry[i];
        const char *why;
        if (tile_variant_eligible(v, p, &why)) eligible++;
        if (!strcmp(v->op, p->op) && v->dtype == p->dtype) {
            /* (eligibility refuses arch and shared memory before anything the call asks) */
            if (why == NULL || (strcmp(why, "arch") && strcmp(why, "shared memory"))) arch_ok++;
            /* refused for alignment: the call's shape fits only if the variant takes it once
             * aligned (alignment is tested before the lean rule and the grid limit) */
            if (why != NULL && !strcmp(why, "alignment")) {
                tile_problem aligned = *p;
                aligned.align = 256; /* (a multiple of every variant's align_bytes) */
                if (tile_variant_eligible(v, &aligned, NULL)) shape_ok++;
            }
        }
    }
    decision->variant = -1;
    decision->eligible = eligible;
    decision->arch = p->arch;
    decision->reason[0] = '\0';
    if (!eligible) {
        if (!arch_ok)
            return tile_fail(TILE_STATUS_ARCH_MISMATCH,
                             "no %s %s variant was compiled for sm_%d", p->op,
                             tile_dtype_string(p->dtype), p->arch);
        if (shape_ok)
            return tile_fail(TILE_STATUS_MISALIGNED,
                             "no %s %s variant takes pointers and strides aligned to only %d "
                             "bytes",
                             p->op, tile_dtype_string(p->dtype), p->align);
        return tile_fail(TILE_STATUS_NOT_SUPPORTED, "no %s %s variant covers %lldx%lld on sm_%d",
                         p->op, tile_dtype_string(p->dtype), (long long)p->rows,
                         (long long)p->cols, p->arch);
    }

    pthread_once(&runtime_table_once, runtime_table_load);
    if (runtime_table_status != TILE_STATUS_SUCCESS)
        return tile_fail(runtime_table_status, "%s", runtime_table_message);
    int32_t rows_log2, cols_step;
    shape_bucket(p, &rows_log2, &cols_step);
    /* Each table's nearest entry on its own (ties toward more rows); the run-time table's
     * stands unless the compiled one is strictly closer to the shape's bucket. Candidates in
     * order, each replacing the one before only where strictly closer: the lines tuned on a
     * device of this one's memory bandwidth, then the arch's, for the call's own table op where
     * it has one, then for the variants' op (a norm-less call of 100 columns takes the norm
     * line of its own bucket over a residual_dropout line two column steps away). */
    const tile_tuned_entry *best = NULL;
    int32_t best_distance = 1 << 30, best_is_runtime = 0;
    const char *table_ops[2] = {p->table_op ? p->table_op : p->op, p->op};
    /* Attention's lines were timed on sequences of 128 queries and more, as many as their keys
     * (the tune grid). A decode-shaped call's sequences hold fewer queries than a block's 64
     * rows (after the fold) against more keys, and each block reads K and V of its own: bound
     * by reading them, which no line measured, so the heuristic picks (perf-notes D1: 4-26%
     * faster than the lines' picks; at 64 queries, a full block, those stayed 2-19% ahead). */
    const int decode_shaped = p->streams_keys && p->seqlen_q < 64 && p->seqlen_k > p->seqlen_q;
    for (int c = 0; c < (p->table_op ? 4 : 2) && !decode_shaped; c++) {
        const char *table_op = table_ops[c / 2];
        const int tagged = c % 2 == 0;
        if (tagged && !p->mem_bandwidth_gbs) continue;
        const tile_tuned_entry *runtime_best = NULL, *compiled_best = NULL;
        int32_t runtime_distance = 1 << 30, compiled_distance = 1 << 30;
        nearest_entry(runtime_table, runtime_table_count, p, table_op, tagged, rows_log2,
                      cols_step, &runtime_best, &runtime_distance);
        nearest_entry(tile_tuned_table, tile_tuned_count, p, table_op, tagged, rows_log2,
                      cols_step, &compiled_best, &compiled_distance);
        const int compiled = compiled_best && compiled_distance < runtime_distance;
        const tile_tuned_entry *e = compiled ? compiled_best : runtime_best;
        const int32_t distance = compiled ? compiled_distance : runtime_distance;
        if (e && (!best || distance < best_distance)) {
            best = e;
            best_distance = distance;
            best_is_runtime = !compiled;
        }
    }
    if (best) {
        double winner_us, runner_up_us;
        int by_counter = 0; /* attention: a causal varlen call took the counter's walk */
        /* the row-wise ops are weighed by waves, attention (the only problems with sequence
         * lengths) by its walks */
        const int attention = p->seqlen_q > 0;
        decision->variant = attention ? weigh_attention(best, p, &winner_us, &runner_up_us, &by_counter)
                                      : weigh_waves(best, p, &winner_us, &runner_up_us);
        decision->rule = best_distance == 0 ? TILE_RULE_TUNED : TILE_RULE_NEAREST;
        char weighing_note[160] = "", at[64];
        if (attention)
            snprintf(at, sizeof at, "%s at %lld queries x %lld keys",
                     p->causal ? "causal" : "walked", (long long)p->seqlen_q,
                     (long long)p->seqlen_k);
        else
            snprintf(at, sizeof at, "by waves at %lld rows", (long long)p->rows);
        const int took_winner = decision->variant == best->variant;
        if (by_counter)
            snprintf(weighing_note, sizeof weighing_note,
                     "; causal varlen with a workspace: the %s, which takes blocks from its counter",
                     took_winner ? "winner" : "runner-up");
        else if (winner_us > 0.0) /* the variant taken first */
            snprintf(weighing_note, sizeof weighing_note, "; %s, %s %.2f us against %s %.2f us", at,
                     took_winner ? "winner" : "runner-up",
                     took_winner ? winner_us : runner_up_us, took_winner ? "runner-up" : "winner",
                     took_winner ? runner_up_us : winner_us);
        char tag[24] = ""; /* a line of this device's memory bandwidth */
        if (best->bandwidth_gbs) snprintf(tag, sizeof tag, "@%d", (int)best->bandwidth_gbs);
        snprintf(decision->reason, sizeof decision->reason,
                 "%s: %s table for sm_%d%s, %s%sbucket %lldx%lld%s%s",
                 tile_rule_string(decision->rule),
                 best_is_runtime ? "FUSEDOPS_TUNING_FILE" : "compiled", p->arch, tag,
                 strcmp(best->op, p->op) ? best->op : "", strcmp(best->op, p->op) ? " " : "",
                 1LL << best->rows_log2, (long long)tuning_cols_of_step(best->cols_step),
                 best_distance == 0 ? "" : " (nearest to this shape's bucket)", weighing_note);
        take_lean_twin(p, decision);
        take_long_key_tile(p, decision);
        take_deep_ring(p, decision);
        return TILE_STATUS_SUCCESS;
    }

    double best_cost = 0;
    decision->variant = tile_cheapest_variant(p, &best_cost);
    decision->rule = TILE_RULE_HEURISTIC;
    if (decode_shaped)
        snprintf(decision->reason, sizeof decision->reason,
                 "heuristic: decode-shaped (seqlen_q %lld against seqlen_k %lld), which no tuned "
                 "line was timed on",
                 (long long)p->seqlen_q, (long long)p->seqlen_k);
    else
        snprintf(decision->reason, sizeof decision->reason,
                 "heuristic: no tuned entry for sm_%d near bucket %lldx%lld", p->arch,
                 1LL << rows_log2, (long long)tuning_cols_of_step(cols_step));
    tile_decision_append(decision, "; lowest estimated cost %.2f among %d eligible", best_cost,
                         eligible);
    take_lean_twin(p, decision);
    take_long_key_tile(p, decision);
    take_deep_ring(p, decision);
    return TILE_STATUS_SUCCESS;
}

int32_t tile_cheapest_variant(const tile_problem *p, double *cost) {
    int32_t best = -1;
    double best_cost = 0;
    for (int32_t i = 0; i < tile_registry_count; i++) {
        if (!tile_variant_eligible(&tile_registry[i], p, NULL)) continue;
        const double c = tile_heuristic_cost(&tile_registry[i], p);
        if (best < 0 || c < best_cost) {
            best = i;
            best_cost = c;
        }
    }
    if (cost) *cost = best_cost;
    return best;
}

/* A launch's decision depends only on these; a small per-thread cache keeps repeated calls
 * from rescanning the registry and tables (thread-local: no shared state on the hot path). */
typedef struct cached_decision {
    const char *op, *table_op;
    int64_t rows, cols;
    int32_t dtype, align, arch, variant;
    /* The device's, not only the arch's: the heuristic weighs the SM count, and devices of
     * one arch differ in it (SKUs, MIG slices) within one process and thread. */
    int32_t sm_count, smem_limit, features, optional_inputs, pointwise, no_tensor_maps, varlen,
        mem_bandwidth_gbs;
    const int32_t *blocks_per_sm;
    int64_t seqlen_q, seqlen_k; /* (one head's work a shape splits otherwise) */
    int64_t key_split_blocks;
    int32_t causal, block_counter, streams_keys;
} cached_decision;
static _Thread_local cached_decision decision_cache[16];

tile_status tile_dispatch_cached(const tile_problem *p, int32_t *variant) {
    uint64_t h = (uint64_t)p->rows * 0x9e3779b97f4a7c15ull ^ (uint64_t)p->cols * 0xc2b2ae3d27d4eb4full;
    h ^= (uint64_t)(p->dtype * 131 + p->align * 7 + p->arch);
    /* the same shape with and without dropout or optional inputs (a transformer block's
     * RMSNorm and its fused add-and-norm) must not take turns evicting each other */
    h ^= (uint64_t)(p->features * 0x3d + p->optional_inputs * 0x1f1) * 0x94d049bb133111ebull;
    /* nor residual_dropout beside residual_dropout_norm of one shape (same features and
     * inputs; a table op apart), nor two devices of one arch but other memory systems */
    h ^= (uint64_t)((p->table_op != NULL) + 2 * (uint32_t)p->mem_bandwidth_gbs) *
         0xff51afd7ed558ccdull;
    /* nor attention calls of one query count in other sequence lengths or walks */
    h ^= (uint64_t)p->seqlen_q * 0xd6e8feb86659fd93ull ^ (uint64_t)p->seqlen_k ^
         (uint64_t)(p->causal + 2 * p->block_counter + 4 * p->varlen) * 0xbf58476d1ce4e5b9ull ^
         (uint64_t)(p->key_split_blocks * 2 + p->streams_keys) * 0x94d049bb133111ebull;
    cached_decision *c = &decision_cache[(h ^ (h >> 29)) & 15];
    if (c->op == p->op && c->table_op == p->table_op && c->rows == p->rows && c->cols == p->cols && c->dtype == (int32_t)p->dtype &&
        c->align == p->align && c->arch == p->arch && c->sm_count == p->sm_count &&
        c->smem_limit == p->smem_limit && c->features == p->features &&
        c->optional_inputs == p->optional_inputs && c->pointwise == p->pointwise &&
        c->no_tensor_maps == p->no_tensor_maps && c->varlen == p->varlen &&
        c->mem_bandwidth_gbs == p->mem_bandwidth_gbs &&
        c->blocks_per_sm == p->blocks_per_sm && c->seqlen_q == p->seqlen_q &&
        c->seqlen_k == p->seqlen_k && c->causal == p->causal &&
        c->block_counter == p->block_counter && c->key_split_blocks == p->key_split_blocks &&
        c->streams_keys == p->streams_keys) {
        *variant = c->variant;
        return TILE_STATUS_SUCCESS;
    }
    tile_decision d;
    tile_status s = tile_dispatch(p, &d);
    if (s != TILE_STATUS_SUCCESS) return s;
    *c = (cached_decision){p->op,   p->table_op, p->rows,   p->cols,     (int32_t)p->dtype, p->align,
                           p->arch, d.variant, p->sm_count, p->smem_limit,     p->features,
                           p->optional_inputs, p->pointwise, p->no_tensor_maps, p->varlen,
                           p->mem_bandwidth_gbs,
                           p->blocks_per_sm,   p->seqlen_q, p->seqlen_k, p->key_split_blocks,
                           p->causal,          p->block_counter, p->streams_keys};
    *variant = d.variant;
    return TILE_STATUS_SUCCESS;
}

tile_status tile_check_variant_index(const char *fn, int32_t variant, const char *op,
                                     tile_dtype dtype) {
    if (variant < 0 || variant >= tile_registry_count)
        return tile_fail(TILE_STATUS_INVALID_ARGUMENT, "%s: variant %d is outside [0, %d)", fn,
                         variant, tile_registry_count);
    const tile_variant *v = &tile_registry[variant];
    if (strcmp(v->op, op) || v->dtype != dtype)
        return tile_fail(TILE_STATUS_NOT_SUPPORTED, "%s: variant %d (%s) is a %s %s variant, not %s %s",
                         fn, variant, v->name, v->op, tile_dtype_string(v->dtype), op,
                         tile_dtype_string(dtype));
    return TILE_STATUS_SUCCESS;
}

tile_status tile_check_variant(const char *fn, int32_t variant, const tile_problem *p) {
    tile_status s = tile_check_variant_index(fn, variant, p->op, p->dtype);
    if (s != TILE_STATUS_SUCCESS) return s;
    const tile_variant *v = &tile_registry[variant];
    const char *why = NULL;
    if (tile_variant_eligible(v, p, &why)) return TILE_STATUS_SUCCESS;
    if (!strcmp(why, "shared memory"))
        return tile_fail(TILE_STATUS_ARCH_MISMATCH,
                         "%s: %s needs %d bytes of shared memory per program; this device "
                         "allows %d",
                         fn, v->name, v->smem_bytes, p->smem_limit);
    if (!strcmp(why, "arch"))
        return tile_fail(TILE_STATUS_ARCH_MISMATCH,
                         "%s: %s runs on sm_%d to sm_%d (0: any newer), this device is sm_%d", fn,
                         v->name, v->arch_min, v->arch_max, p->arch);
    if (!strcmp(why, "alignment"))
        return tile_fail(TILE_STATUS_MISALIGNED,
                         "%s: %s needs %d-byte aligned pointers and row strides; these are "
                         "aligned to %d",
                         fn, v->name, v->align_bytes, p->align);
    if (!strcmp(why, "features"))
        return tile_fail(TILE_STATUS_NOT_SUPPORTED,
                         "%s: %s lacks work this call needs (features 0x%x of 0x%x: 0x1 is "
                         "dropout or a keep mask)",
                         fn, v->name, (unsigned)v->features, (unsigned)p->features);
    if (!strcmp(why, "lean") && p->cols != v->max_cols)
        return tile_fail(TILE_STATUS_NOT_SUPPORTED,
                         "%s: %s is a lean variant: it takes rows of exactly %lld columns, got "
                         "cols %lld",
                         fn, v->name, (long long)v->max_cols, (long long)p->cols);
    /* Refusals whose message needs no figures: the variant's name, then why. */
    static const struct {
        const char *why, *text;
    } refusals[] = {
        {"lean", "is a lean variant: it takes no bias, residual or s (the norm of x alone); this "
                 "call passes one"},
        {"tensor maps", "copies by tensor maps, which this call cannot use (folded query "
                        "heads, rows past 2^31 - 1, or a layout the driver refused): the "
                        "other variants run it"},
        {"row statistics", "takes a tile of a row a program, without row statistics: it runs "
                           "norm-less calls (tile_residual_dropout) alone"},
    };
    for (size_t i = 0; i < sizeof refusals / sizeof *refusals; i++)
        if (!strcmp(why, refusals[i].why))
            return tile_fail(TILE_STATUS_NOT_SUPPORTED, "%s: %s %s", fn, v->name,
                             refusals[i].text);
    if (!strcmp(why, "grid"))
        return tile_fail(TILE_STATUS_NOT_SUPPORTED,
                         "%s: %s would launch %lld programs of %d thread blocks for %lldx%lld, "
                         "past the grid limit of %d blocks",
                         fn, v->name, (long long)tile_row_programs(v, p->rows, p->cols),
                         v->cluster, (long long)p->rows, (long long)p->cols, INT32_MAX);
    /* "cols": op and dtype were checked above */
    return tile_fail(TILE_STATUS_NOT_SUPPORTED, "%s: %s takes at most %lld columns, got cols %lld",
                     fn, v->name, (long long)v->max_cols, (long long)p->cols);
}

tile_status tile_choose_variant(const char *fn, int forced, int32_t *variant, tile_problem *p,
                                const tile_alignment *al, const tile_device **device) {
    tile_status s;
    if (forced && (s = tile_check_variant_index(fn, *variant, p->op, p->dtype))) return s;
    if ((s = tile_current_device(device)) != TILE_STATUS_SUCCESS) return s;
    tile_problem_on_device(p, *device);
    s = forced ? tile_check_variant(fn, *variant, p) : tile_dispatch_cached(p, variant);
    return al ? tile_name_misaligned(fn, s, al) : s;
}

tile_status tile_check_decision(const char *fn, const tile_decision *decision) {
    if (!decision) return tile_fail(TILE_STATUS_INVALID_ARGUMENT, "%s: decision is NULL", fn);
    if (decision->struct_size < TILE_DECISION_V1_SIZE)
        return tile_fail(TILE_STATUS_INVALID_ARGUMENT,
                         "%s: decision->struct_size is %zu; set it to sizeof(tile_decision) (%zu)",
                         fn, decision->struct_size, sizeof(tile_decision));
    return TILE_STATUS_SUCCESS;
}

tile_status tile_explain_problem(const char *fn, tile_problem *p, int32_t arch,
                                 tile_decision *decision) {
    tile_status s;
    if (arch == 0) {
        const tile_device *device;
        if ((s = tile_current_device(&device)) != TILE_STATUS_SUCCESS) return s;
        tile_problem_on_device(p, device);
    } else if (arch < 10) {
        return tile_fail(TILE_STATUS_INVALID_ARGUMENT,
                         "%s: arch is %d; give 10*major+minor (90 = sm_90) or 0", fn, arch);
    } else {
        /* another arch: no SM count, occupancy or memory bandwidth (the heuristic assumes 132
         * SMs; lines kept to one memory system are passed over) */
        p->arch = arch;
        p->sm_count = 0;
        p->mem_bandwidth_gbs = 0;
        p->smem_limit = tile_arch_smem_limit(arch);
        p->blocks_per_sm = NULL;
    }
    tile_decision d = {.struct_size = sizeof d};
    if ((s = tile_dispatch(p, &d)) != TILE_STATUS_SUCCESS) return s;
    const size_t size = decision->struct_size; /* copy only what the caller's struct holds */
    memcpy(decision, &d, size < sizeof d ? size : sizeof d);
    decision->struct_size = size;
    return TILE_STATUS_SUCCESS;
}

tile_status tile_explain_rowwise(const char *fn, const char *op, tile_dtype dtype, int64_t rows,
                                 int64_t cols, int64_t ld_y, int64_t ld_x, int32_t pointer_align,
                                 int32_t arch, tile_decision *decision) {
    tile_begin_call();
    tile_status s = tile_check_decision(fn, decision);
    if (s != TILE_STATUS_SUCCESS) return s;
    if (pointer_align < 1 || (pointer_align & (pointer_align - 1)))
        return tile_fail(TILE_STATUS_INVALID_ARGUMENT,
                         "%s: pointer_align is %d; it must be a power of two", fn, pointer_align);
    /* Stand-in pointers aligned to pointer_align (at least the element size, at most 256) let
     * the shared checks run unchanged and in the ops' order; they are never dereferenced. A
     * pointer_align below the element size is reported where the ops report misalignment. */
    const size_t elem = tile_dtype_size(dtype) ? tile_dtype_size(dtype) : 1;
    const uintptr_t fake = (uintptr_t)(pointer_align >= 256 ? 256
                                       : (size_t)pointer_align < elem ? elem : (size_t)pointer_align);
    int32_t align;
    s = tile_check_rowwise(fn, dtype, (const void *)(fake * 3), (const void *)fake, rows, cols,
                           ld_y, ld_x, &align);
    if (s == TILE_STATUS_SUCCESS && (size_t)pointer_align < elem)
        return tile_fail(TILE_STATUS_MISALIGNED,
                         "%s: pointer_align is %d; %s pointers are aligned to at least their "
                         "%zu-byte elements",
                         fn, pointer_align, tile_dtype_string(dtype), elem);
    if (s != TILE_STATUS_SUCCESS) return s;
    tile_problem p = {.op = op, .dtype = dtype, .rows = rows, .cols = cols, .align = align};
    return tile_explain_problem(fn, &p, arch, decision);
}
