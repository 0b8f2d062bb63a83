/* tile_softmax, tile_log_softmax: validate, dispatch, launch. */
#include "internal.h"

static const char softmax_op[] = "softmax";

static tile_status softmax_launch(const tile_device *device, int32_t variant, int log_softmax,
                                  void *y, const void *x, int64_t rows, int64_t cols, int64_t ld_y,
                                  int64_t ld_x, tile_stream stream) {
    const tile_variant *v = &tile_registry[variant];
    int32_t log_flag = log_softmax ? 1 : 0;
    void *args[] = {&y, (void *)&x, &rows, &cols, &ld_y, &ld_x, &log_flag};
    return tile_launch(device, variant, tile_row_programs(v, rows, cols), stream, args);
}

static tile_status softmax_dispatch(const char *op, int log_softmax, tile_dtype dtype, void *y,
                                    const void *x, int64_t rows, int64_t cols, int64_t ld_y,
                                    int64_t ld_x, tile_stream stream) {
    tile_begin_call();
    int32_t align;
    tile_status s = tile_check_rowwise(op, dtype, y, x, rows, cols, ld_y, ld_x, &align);
    if (s != TILE_STATUS_SUCCESS) return s;
    const tile_device *device;
    if ((s = tile_current_device(&device)) != TILE_STATUS_SUCCESS) return s;
    tile_problem p = {
        .op = softmax_op, .dtype = dtype, .rows = rows, .cols = cols, .align = align};
    tile_problem_on_device(&p, device);
    int32_t variant;
    if ((s = tile_dispatch_cached(&p, &variant)) != TILE_STATUS_SUCCESS) return s;
    return softmax_launch(device, variant, log_softmax, y, x, rows, cols, ld_y, ld_x, stream);
}

tile_status tile_softmax(tile_dtype dtype, void *y, const void *x, int64_t rows, int64_t cols,
                         int64_t ld_y, int64_t ld_x, tile_stream stream) {
    return softmax_dispatch("tile_softmax", 0, dtype, y, x, rows, cols, ld_y, ld_x, stream);
}

tile_status tile_log_softmax(tile_dtype dtype, void *y, const void *x, int64_t rows, int64_t cols,
                             int64_t ld_y, int64_t ld_x, tile_stream stream) {
    return softmax_dispatch("tile_log_softmax", 1, dtype, y, x, rows, cols, ld_y, ld_x, stream);
}

tile_status tile_softmax_variant(int32_t variant, int32_t log_softmax, tile_dtype dtype, void *y,
                                 const void *x, int64_t rows, int64_t cols, int64_t ld_y,
                                 int64_t ld_x, tile_stream stream) {
    tile_begin_call();
    int32_t align;
    tile_status s = tile_check_rowwise("tile_softmax_variant", dtype, y, x, rows, cols, ld_y, ld_x,
                                       &align);
    if (s != TILE_STATUS_SUCCESS) return s;
    if ((s = tile_check_variant_index("tile_softmax_variant", variant, softmax_op, dtype)) !=
        TILE_STATUS_SUCCESS)
        return s;
    const tile_device *device;
    if ((s = tile_current_device(&device)) != TILE_STATUS_SUCCESS) return s;
    tile_problem p = {
        .op = softmax_op, .dtype = dtype, .rows = rows, .cols = cols, .align = align};
    tile_problem_on_device(&p, device);
    if ((s = tile_check_variant("tile_softmax_variant", variant, &p)) != TILE_STATUS_SUCCESS)
        return s;
    return softmax_launch(device, variant, log_softmax, y, x, rows, cols, ld_y, ld_x, stream);
}

tile_status tile_softmax_explain(tile_dtype dtype, int64_t rows, int64_t cols, int64_t ld_y,
                                 int64_t ld_x, int32_t pointer_align, int32_t arch,
                                 tile_decision *decision) {
    return tile_explain_rowwise("tile_softmax_explain", softmax_op, dtype, rows, cols, ld_y, ld_x,
                                pointer_align, arch, decision);
}
