/* One line of a tuned table (autotune_results/ARCH.tsv, FUSEDOPS_TUNING_FILE; docs/tuning.md):
 * arch, op, dtype, bucket, variant, time_us, runner_up, runner_up_us, tab-separated. Shared by
 * the generator (which compiles the tables in) and the library (which loads one at run time). */
#ifndef FUSEDOPS_TUNING_PARSE_H
#define FUSEDOPS_TUNING_PARSE_H

#include <stddef.h>
#include <stdint.h>

typedef struct tuning_line {
    int32_t arch;            /* 90 for sm_90 */
    int32_t bandwidth_gbs;   /* sm_90@4814: the line holds on devices of about this peak memory
                              * bandwidth alone (tuning_bandwidth_matches); 0 (plain sm_90): on
                              * every device of the arch */
    const char *op;          /* points into the line */
    int32_t dtype;           /* tile_dtype */
    int32_t rows_log2;       /* rows bucket 2^rows_log2 */
    int32_t cols_step;       /* cols bucket tuning_cols_of_step(cols_step) */
    const char *variant;     /* points into the line */
    /* From columns 6 to 8 when the line has them (0, NULL, 0 otherwise): the winner's time,
     * the runner-up (NULL for "-") and its time, in microseconds. Dispatch weighs the two by
     * waves (docs/tuning.md). */
    double time_us;
    const char *runner_up;   /* points into the line */
    double runner_up_us;
} tuning_line;

/* Column buckets: the powers of two and the values halfway between them in log scale, rounded
 * to 3 * 2^(k-1) (3, 6, 12, ..., 768, 1536, ...), numbered in half-power steps: step 2k is 2^k,
 * step 2k + 1 is 3 * 2^(k-1) (k >= 1; step 1 does not exist). A one-pass row tile's capacity
 * is a power of two, but whether a two-pass loop beats it depends on how full the tile is, so
 * rows are tuned at the midpoints too. */
int64_t tuning_cols_of_step(int32_t step); /* -1 outside steps 0 to 125 */
/* The step of a bucket value, or -1 when `cols` is not one. */
int32_t tuning_cols_step_exact(long long cols);
/* The step of the smallest bucket holding `cols` (>= 1) columns (125 for cols over 3 x 2^61,
 * the last bucket). */
int32_t tuning_cols_step_up(int64_t cols);

/* A table op that is not a variant op: one kind of call whose winners a table lists apart from
 * the other calls its variants serve. "residual_dropout": norm variants timed on norm-less calls
 * (s = residual + dropout(x + bias), one pass, no row statistics), where other tiles win than
 * for the dropout + norm whose `norm` lines they share (docs/tuning.md). */
typedef struct tuning_table_op {
    const char *name;       /* the table's op column */
    const char *variant_op; /* the op of the variants its lines name */
} tuning_table_op;

/* The table op `name`, or NULL where `name` is not one (a variant op, or unknown). */
const tuning_table_op *tuning_table_op_find(const char *name);

/* The op of the variants a line of op column `op` names: a table op's variant op, else `op`. */
const char *tuning_variant_op(const char *op);

/* 1 when a line of bandwidth tag `line_gbs` holds on a device whose peak memory bandwidth is
 * `device_gbs` (0: unknown, as in explain for a named arch): untagged lines hold everywhere,
 * tagged ones within 10% of their tag. Winners move with the memory system: an H200 (sm_90,
 * 4.9 TB/s) ran rows faster on other tiles than the H100 (3.4 TB/s) the table was tuned on. */
int tuning_bandwidth_matches(int32_t line_gbs, int32_t device_gbs);

/* A device's peak memory bandwidth in GB/s (the tag sm_90@GBPS compares against) from the
 * driver's memory clock (kHz) and bus width (bits): double data rate, two transfers of
 * bus_bits / 8 bytes a clock. 0 where either is unknown (0). One formula for the library and
 * the tools that write tags. */
static inline int32_t tuning_peak_bandwidth_gbs(int mem_clock_khz, int bus_bits) {
    const double gbs = 2.0 * (double)mem_clock_khz * 1e3 * (double)bus_bits / 8.0 / 1e9;
    return gbs >= 1.0 && gbs <= 1e6 ? (int32_t)(gbs + 0.5) : 0;
}

/* Parses `line` in place (tabs become NULs). Returns 1 for an entry, 0 for a line to skip
 * (blank, '#' comment, the header), -1 with a message in err for a malformed line. */
int tuning_parse_line(char *line, tuning_line *out, char *err, size_t err_size);

#endif
