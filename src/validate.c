/* Argument checks shared by the ops. Each failure names the argument and its value. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

static int extent_overflows(int64_t rows, int64_t cols, int64_t ld, size_t elem) {
    /* Last element's byte offset: ((rows - 1) * ld + cols) * elem must fit in int64. */
    int64_t limit = INT64_MAX / (int64_t)elem;
    if (rows - 1 > 0 && ld > (limit - cols) / (rows - 1)) return 1;
    return (rows - 1) * ld + cols > limit;
}

/* Alignment a launch may rely on for one rows x cols operand: its pointer's, and (more than one
 * row) its row stride's in bytes. */
static int32_t operand_alignment(const void *p, int64_t rows, int64_t ld, size_t elem) {
    int32_t a = tile_alignment_of((uintptr_t)p);
    int32_t b = tile_alignment_of((uint64_t)ld * elem);
    return rows == 1 || a < b ? a : b; /* a single row has no stride to respect */
}

tile_status tile_check_operand(const char *op, const char *name, const char *ld_name,
                               const void *p, int64_t rows, int64_t cols, int64_t ld, size_t elem,
                               int32_t *align) {
    if (!p) return tile_fail(TILE_STATUS_INVALID_ARGUMENT, "%s: %s is NULL", op, name);
    if (ld < cols)
        return tile_fail(TILE_STATUS_INVALID_ARGUMENT, "%s: %s is %lld; it must be >= cols (%lld)",
                         op, ld_name, (long long)ld, (long long)cols);
    if (extent_overflows(rows, cols, ld, elem))
        return tile_fail(TILE_STATUS_INVALID_ARGUMENT,
                         "%s: rows %lld x %s %lld elements of %zu bytes overflow int64", op,
                         (long long)rows, ld_name, (long long)ld, elem);
    if ((uintptr_t)p % elem)
        return tile_fail(TILE_STATUS_MISALIGNED, "%s: %s (%p) is not aligned to its %zu-byte elements",
                         op, name, p, elem);
    const int32_t a = operand_alignment(p, rows, ld, elem);
    if (a < *align) *align = a;
    return TILE_STATUS_SUCCESS;
}

tile_status tile_check_vector(const char *op, const char *name, const void *p, int64_t n,
                              size_t elem, int32_t *align) {
    if (!p) return TILE_STATUS_SUCCESS;
    return tile_check_operand(op, name, name, p, 1, n, n, elem, align);
}

tile_status tile_check_rowwise_named(const char *op, const char *y_name, const char *ld_y_name,
                                     tile_dtype dtype, const void *y, const void *x, int64_t rows,
                                     int64_t cols, int64_t ld_y, int64_t ld_x, int32_t *align) {
    if ((unsigned)dtype >= TILE_DTYPE_COUNT_)
        return tile_fail(TILE_STATUS_UNSUPPORTED_DTYPE,
                         "%s: dtype %d is not one of TILE_DTYPE_F32, _F16, _BF16", op, (int)dtype);
    if (!y) return tile_fail(TILE_STATUS_INVALID_ARGUMENT, "%s: %s is NULL", op, y_name);
    if (!x) return tile_fail(TILE_STATUS_INVALID_ARGUMENT, "%s: x is NULL", op);
    if (rows < 1)
        return tile_fail(TILE_STATUS_INVALID_ARGUMENT, "%s: rows is %lld; it must be >= 1", op,
                         (long long)rows);
    if (cols < 1)
        return tile_fail(TILE_STATUS_INVALID_ARGUMENT, "%s: cols is %lld; it must be >= 1", op,
                         (long long)cols);
    if (ld_y < cols)
        return tile_fail(TILE_STATUS_INVALID_ARGUMENT, "%s: %s is %lld; it must be >= cols (%lld)",
                         op, ld_y_name, (long long)ld_y, (long long)cols);
    if (ld_x < cols)
        return tile_fail(TILE_STATUS_INVALID_ARGUMENT, "%s: ld_x is %lld; it must be >= cols (%lld)",
                         op, (long long)ld_x, (long long)cols);
    const size_t elem = tile_dtype_size(dtype);
    if (extent_overflows(rows, cols, ld_y, elem))
        return tile_fail(TILE_STATUS_INVALID_ARGUMENT,
                         "%s: rows %lld x %s %lld elements of %zu bytes overflow int64", op,
                         (long long)rows, ld_y_name, (long long)ld_y, elem);
    if (extent_overflows(rows, cols, ld_x, elem))
        return tile_fail(TILE_STATUS_INVALID_ARGUMENT,
                         "%s: rows %lld x ld_x %lld elements of %zu bytes overflow int64", op,
                         (long long)rows, (long long)ld_x, elem);
    if ((uintptr_t)y % elem)
        return tile_fail(TILE_STATUS_MISALIGNED, "%s: %s (%p) is not aligned to its %zu-byte elements",
                         op, y_name, y, elem);
    if ((uintptr_t)x % elem)
        return tile_fail(TILE_STATUS_MISALIGNED, "%s: x (%p) is not aligned to its %zu-byte elements",
                         op, x, elem);
    if (y == x && ld_y != ld_x)
        return tile_fail(TILE_STATUS_INVALID_ARGUMENT,
                         "%s: %s == x (in place) needs %s == ld_x, got %lld and %lld", op,
                         y_name, ld_y_name, (long long)ld_y, (long long)ld_x);
    const int32_t a = operand_alignment(y, rows, ld_y, elem);
    const int32_t b = operand_alignment(x, rows, ld_x, elem);
    *align = a < b ? a : b;
    return TILE_STATUS_SUCCESS;
}

tile_status tile_check_rowwise(const char *op, tile_dtype dtype, const void *y, const void *x,
                               int64_t rows, int64_t cols, int64_t ld_y, int64_t ld_x,
                               int32_t *align) {
    return tile_check_rowwise_named(op, "y", "ld_y", dtype, y, x, rows, cols, ld_y, ld_x, align);
}

tile_status tile_init_versioned(const char *fn, void *args, size_t struct_size, size_t v1_size,
                                const char *type, size_t size) {
    if (!args) return tile_fail(TILE_STATUS_INVALID_ARGUMENT, "%s: args is NULL", fn);
    if (struct_size < v1_size)
        return tile_fail(TILE_STATUS_INVALID_ARGUMENT,
                         "%s: struct_size is %zu; pass sizeof(%s) (%zu)", fn, struct_size, type,
                         size);
    memset(args, 0, struct_size);
    memcpy(args, &struct_size, sizeof struct_size); /* the struct_size member comes first */
    return TILE_STATUS_SUCCESS;
}

tile_status tile_copy_versioned(const char *fn, const void *args, size_t v1_size,
                                const char *type, void *out, size_t size) {
    if (!args) return tile_fail(TILE_STATUS_INVALID_ARGUMENT, "%s: args is NULL", fn);
    size_t struct_size;
    memcpy(&struct_size, args, sizeof struct_size);
    if (struct_size < v1_size)
        return tile_fail(TILE_STATUS_INVALID_ARGUMENT,
                         "%s: args->struct_size is %zu; set it to sizeof(%s) (%zu)", fn,
                         struct_size, type, size);
    memset(out, 0, size);
    /* Every version's size is a multiple of 8 (the structs hold 8-byte members; asserted where
     * each is defined), so a struct_size between two ends inside a field: that field reads as
     * zero, as one past the struct does, not as its first bytes (a workspace address's low
     * bytes). */
    const size_t whole = (struct_size < size ? struct_size : size) / 8 * 8;
    memcpy(out, args, whole);
    return TILE_STATUS_SUCCESS;
}

void tile_lower_alignment(tile_alignment *al, uint64_t value, const char *fmt, ...) {
    const int32_t a = tile_alignment_of(value);
    if (a >= al->bytes) return;
    al->bytes = a;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(al->what, sizeof al->what, fmt, ap);
    va_end(ap);
}

tile_status tile_name_misaligned(const char *fn, tile_status s, const tile_alignment *al) {
    if (s != TILE_STATUS_MISALIGNED) return s;
    char detail[512];
    snprintf(detail, sizeof detail, "%s", tile_last_error());
    const int named = !strncmp(detail, fn, strlen(fn));
    return tile_fail(s, "%s%s%s; the least aligned argument is %s", named ? "" : fn,
                     named ? "" : ": ", detail, al->what);
}

/* Distinct elements: taken in increasing order, each stride (over an axis of more than one
 * position) is at least the span of the contiguous run and the axes before it. */
static tile_status check_distinct(const char *fn, const tile_tensor *t) {
    int order[3], n = 0; /* the innermost axis (the last) first: ties keep that order */
    for (int i = t->axes - 1; i >= 0; i--)
        if (t->counts[i] > 1) order[n++] = i;
    for (int i = 1; i < n; i++) /* insertion sort by stride */
        for (int j = i; j > 0 && t->strides[order[j]] < t->strides[order[j - 1]]; j--) {
            const int tmp = order[j];
            order[j] = order[j - 1];
            order[j - 1] = tmp;
        }
    int64_t span = t->inner; /* no overflow: the extent check bounds the sum */
    for (int i = 0; i < n; i++) {
        const int x = order[i];
        if (t->strides[x] < span)
            return tile_fail(TILE_STATUS_INVALID_ARGUMENT,
                             "%s: %s is %lld; it must be >= %lld (%s %lld and the axes of "
                             "smaller stride), or %s's positions overlap",
                             fn, t->stride_names[x], (long long)t->strides[x], (long long)span,
                             t->inner_name, (long long)t->inner, t->name);
        span += (t->counts[x] - 1) * t->strides[x];
    }
    return TILE_STATUS_SUCCESS;
}

tile_status tile_check_tensor(const char *fn, const tile_tensor *t, size_t elem,
                              tile_alignment *al) {
    if (!t->p) return tile_fail(TILE_STATUS_INVALID_ARGUMENT, "%s: %s is NULL", fn, t->name);
    int64_t last = t->inner; /* elements up to the last one, + 1 */
    const int64_t limit = INT64_MAX / (int64_t)elem;
    for (int i = 0; i < t->axes; i++) {
        const int64_t stride = t->strides[i], count = t->counts[i];
        if (stride < 0)
            return tile_fail(TILE_STATUS_INVALID_ARGUMENT, "%s: %s is %lld; strides must be >= 0",
                             fn, t->stride_names[i], (long long)stride);
        if (count > 1 && stride > 0) {
            if (stride > (limit - last) / (count - 1))
                return tile_fail(TILE_STATUS_INVALID_ARGUMENT,
                                 "%s: %s's extent (%lld x %s %lld) in %zu-byte elements "
                                 "overflows int64",
                                 fn, t->name, (long long)count, t->stride_names[i],
                                 (long long)stride, elem);
            last += (count - 1) * stride;
        }
        if (count > 1)
            tile_lower_alignment(al, (uint64_t)stride * elem, "%s %lld (%llu bytes)",
                                 t->stride_names[i], (long long)stride,
                                 (unsigned long long)stride * elem);
    }
    if (t->distinct) {
        tile_status s = check_distinct(fn, t);
        if (s != TILE_STATUS_SUCCESS) return s;
    }
    if ((uintptr_t)t->p % elem)
        return tile_fail(TILE_STATUS_MISALIGNED, "%s: %s (%p) is not aligned to its %zu-byte elements",
                         fn, t->name, t->p, elem);
    tile_lower_alignment(al, (uintptr_t)t->p, "%s (%p)", t->name, t->p);
    return TILE_STATUS_SUCCESS;
}
