/* Status strings, the thread-local last error, version and dtype helpers. */
#include <stdarg.h>
#include <stdio.h>

#include "internal.h"

static _Thread_local char last_error[512];

tile_status tile_fail(tile_status status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return status;
}

void tile_begin_call(void) { last_error[0] = '\0'; }

const char *tile_last_error(void) { return last_error; }

int32_t tile_version(void) { return TILE_VERSION; }

static const char *const status_strings[] = {
    "success",        "invalid argument", "misaligned operand", "unsupported dtype",
    "not supported",  "architecture mismatch", "no CUDA device", "no current CUDA context",
    "CUDA error",     "internal error",
};
_Static_assert(sizeof status_strings / sizeof *status_strings == TILE_STATUS_COUNT_,
               "one string per status");

const char *tile_status_string(tile_status status) {
    return (unsigned)status < TILE_STATUS_COUNT_ ? status_strings[status] : "unknown";
}

static const char *const dtype_names[] = {"f32", "f16", "bf16"};
static const size_t dtype_sizes[] = {4, 2, 2};
_Static_assert(sizeof dtype_names / sizeof *dtype_names == TILE_DTYPE_COUNT_, "one per dtype");
_Static_assert(sizeof dtype_sizes / sizeof *dtype_sizes == TILE_DTYPE_COUNT_, "one per dtype");

const char *tile_dtype_string(tile_dtype dtype) {
    return (unsigned)dtype < TILE_DTYPE_COUNT_ ? dtype_names[dtype] : "unknown";
}
size_t tile_dtype_size(tile_dtype dtype) {
    return (unsigned)dtype < TILE_DTYPE_COUNT_ ? dtype_sizes[dtype] : 0;
}

static const char *const rule_strings[] = {"tuned", "nearest", "heuristic"};
_Static_assert(sizeof rule_strings / sizeof *rule_strings == TILE_RULE_COUNT_, "one per rule");

const char *tile_rule_string(tile_rule rule) {
    return (unsigned)rule < TILE_RULE_COUNT_ ? rule_strings[rule] : "unknown";
}

int32_t tile_alignment_of(uint64_t x) {
    int32_t a = 1;
    while (a < 256 && x % (uint64_t)(a * 2) == 0) a *= 2;
    return a;
}
