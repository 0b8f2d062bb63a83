/* Argument checks shared by the ops. Each failure names the argument and its value. */
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
