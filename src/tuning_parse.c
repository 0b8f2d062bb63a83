#include "tuning_parse.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int exact_log2(long long v) {
    int k = 0;
    if (v < 1) return -1;
    while ((v & 1) == 0) {
        v >>= 1;
        k++;
    }
    return v == 1 ? k : -1;
}

/* 0 when `s` is a whole finite number >= 0 (and below a day in microseconds). */
static int parse_time(const char *s, double *out) {
    char *end = NULL;
    const double v = strtod(s, &end);
    if (end == s || *end || !(v >= 0.0 && v < 8.64e10)) return -1;
    *out = v;
    return 0;
}

int64_t tuning_cols_of_step(int32_t step) {
    if (step < 0 || step > 125) return -1; /* no bucket: 3 x 2^61 (step 125) is the last */
    if (step == 1) return 2;                /* no bucket between 1 and 2: the next one */
    return step % 2 ? (int64_t)3 << ((step - 1) / 2 - 1) : (int64_t)1 << (step / 2);
}

int32_t tuning_cols_step_exact(long long cols) {
    const int k = exact_log2(cols);
    if (k >= 0) return 2 * k;
    const int h = cols % 3 ? -1 : exact_log2(cols / 3); /* 3 * 2^h = step 2h + 3 */
    return h >= 0 ? 2 * h + 3 : -1;
}

int32_t tuning_cols_step_up(int64_t cols) {
    int32_t step = 0;
    while (step < 125 && tuning_cols_of_step(step) < cols) step += step == 0 ? 2 : 1;
    return step;
}

int tuning_parse_line(char *line, tuning_line *out, char *err, size_t err_size) {
    static const char *const dtypes[] = {"f32", "f16", "bf16"};
    size_t n = strlen(line);
    while (n && (line[n - 1] == '\r' || line[n - 1] == '\n')) line[--n] = '\0';
    if (!n || line[0] == '#' || !strncmp(line, "arch\t", 5)) return 0;
    char *cols[8];
    int count = 0;
    for (char *c = line; c && count < 8;) {
        cols[count++] = c;
        c = strchr(c, '\t');
        if (c) *c++ = '\0';
    }
    if (count < 5) {
        snprintf(err, err_size, "expected at least 5 tab-separated columns, found %d", count);
        return -1;
    }
    long arch = 0, bandwidth = 0;
    char tail;
    /* strtol, not %d: an out-of-range number must not wrap into a valid arch */
    char *end = NULL;
    if (!strncmp(cols[0], "sm_", 3)) arch = strtol(cols[0] + 3, &end, 10);
    if (end && end != cols[0] + 3 && *end == '@' && end[1] >= '0' && end[1] <= '9') {
        char *number = end + 1;
        bandwidth = strtol(number, &end, 10);
        if (bandwidth < 1 || bandwidth > 1000000) end = number; /* reported below */
    }
    if (!end || *end || end == cols[0] + 3 || arch < 10 || arch > 10000) {
        snprintf(err, err_size,
                 "arch '%s' is not sm_NN or sm_NN@GBPS (a device's peak memory bandwidth, 1 to "
                 "1000000 GB/s)",
                 cols[0]);
        return -1;
    }
    int dtype = -1;
    for (int i = 0; i < 3; i++)
        if (!strcmp(cols[2], dtypes[i])) dtype = i;
    if (dtype < 0) {
        snprintf(err, err_size, "unknown dtype '%s' (f32, f16, bf16)", cols[2]);
        return -1;
    }
    long long rows = 0, colsv = 0;
    if (sscanf(cols[3], "%lldx%lld%c", &rows, &colsv, &tail) != 2 || exact_log2(rows) < 0 ||
        tuning_cols_step_exact(colsv) < 0) {
        snprintf(err, err_size,
                 "bucket '%s' is not ROWSxCOLS (rows a power of two, cols a power of two or 3 "
                 "times one)",
                 cols[3]);
        return -1;
    }
    out->arch = (int32_t)arch;
    out->bandwidth_gbs = (int32_t)bandwidth;
    out->op = cols[1];
    out->dtype = dtype;
    out->rows_log2 = exact_log2(rows);
    out->cols_step = tuning_cols_step_exact(colsv);
    out->variant = cols[4];
    out->time_us = 0.0;
    out->runner_up = NULL;
    out->runner_up_us = 0.0;
    if (count == 8) {
        if (parse_time(cols[5], &out->time_us) || parse_time(cols[7], &out->runner_up_us)) {
            snprintf(err, err_size, "time '%s' or '%s' is not a number of microseconds >= 0",
                     cols[5], cols[7]);
            return -1;
        }
        if (!cols[6][0]) {
            snprintf(err, err_size, "runner_up is empty (a variant name, or - for none)");
            return -1;
        }
        if (strcmp(cols[6], "-")) out->runner_up = cols[6];
    }
    return 1;
}

static const tuning_table_op table_ops[] = {{"residual_dropout", "norm"}};

const tuning_table_op *tuning_table_op_find(const char *name) {
    for (size_t i = 0; i < sizeof table_ops / sizeof *table_ops; i++)
        if (!strcmp(table_ops[i].name, name)) return &table_ops[i];
    return NULL;
}

const char *tuning_variant_op(const char *op) {
    const tuning_table_op *table_op = tuning_table_op_find(op);
    return table_op ? table_op->variant_op : op;
}

int tuning_bandwidth_matches(int32_t line_gbs, int32_t device_gbs) {
    if (!line_gbs) return 1;
    /* within 10% either way: one memory configuration (an H100 SXM reckons 3352, the lent H200
     * 4814 GB/s) */
    return device_gbs > 0 && (double)device_gbs >= 0.9 * line_gbs &&
           (double)device_gbs <= 1.1 * line_gbs;
}
