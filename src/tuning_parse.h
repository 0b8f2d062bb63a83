/* One line of a tuned table (autotune_results/ARCH.tsv, FUSEDOPS_TUNING_FILE; docs/tuning.md):
 * arch, op, dtype, bucket, variant, time_us, runner_up, runner_up_us, tab-separated. Shared by
 * the generator (which compiles the tables in) and the library (which loads one at run time). */
#ifndef FUSEDOPS_TUNING_PARSE_H
#define FUSEDOPS_TUNING_PARSE_H

#include <stddef.h>
#include <stdint.h>

typedef struct tuning_line {
    int32_t arch;            /* 90 for sm_90 */
    const char *op;          /* points into the line */
    int32_t dtype;           /* tile_dtype */
    int32_t rows_log2, cols_log2;
    const char *variant;     /* points into the line */
} tuning_line;

/* Parses `line` in place (tabs become NULs). Returns 1 for an entry, 0 for a line to skip
 * (blank, '#' comment, the header), -1 with a message in err for a malformed line. */
int tuning_parse_line(char *line, tuning_line *out, char *err, size_t err_size);

#endif
