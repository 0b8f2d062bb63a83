/* tile_softmax, tile_log_softmax: validate, dispatch, launch. */
#include <string.h>

#include "internal.h"

static const char softmax_op[] = "softmax";

static tile_status softmax_launch(const tile_device *device, int32_t variant, int log_softmax,
                                  void *y, const void *x, int64_t rows, int64_t cols, int64_t ld_y,
                                  int64_t ld_x, tile_stream stream) {
    const tile_variant *v = &tile_registry[variant];
    int32_t log_flag = log_softmax ? 1 : 0;
    void *args[] = {&y, (void *)&x, &rows, &cols, &ld_y, &ld_x, &log_flag};
    int64_t programs = (rows + v->rows_per_program - 1) / v->rows_per_program;
    return tile_launch(device, variant, programs, stream, args);
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
    tile_problem p = {softmax_op, dtype, rows, cols, align, device->arch, device->sm_count,
                      device->smem_limit};
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
    if (variant < 0 || variant >= tile_registry_count)
        return tile_fail(TILE_STATUS_INVALID_ARGUMENT,
                         "tile_softmax_variant: variant %d is outside [0, %d)", variant,
                         tile_registry_count);
    const tile_device *device;
    if ((s = tile_current_device(&device)) != TILE_STATUS_SUCCESS) return s;
    const tile_variant *v = &tile_registry[variant];
    tile_problem p = {softmax_op, dtype, rows, cols, align, device->arch, device->sm_count,
                      device->smem_limit};
    const char *why = NULL;
    if (!tile_variant_eligible(v, &p, &why)) {
        if (!strcmp(why, "shared memory"))
            return tile_fail(TILE_STATUS_ARCH_MISMATCH,
                             "tile_softmax_variant: %s needs %d bytes of shared memory per "
                             "program; this device allows %d",
                             v->name, v->smem_bytes, device->smem_limit);
        if (!strcmp(why, "arch"))
            return tile_fail(TILE_STATUS_ARCH_MISMATCH,
                             "tile_softmax_variant: %s runs on sm_%d to sm_%d (0: any newer), "
                             "this device is sm_%d",
                             v->name, v->arch_min, v->arch_max, device->arch);
        if (!strcmp(why, "alignment"))
            return tile_fail(TILE_STATUS_MISALIGNED,
                             "tile_softmax_variant: %s needs %d-byte aligned pointers and row "
                             "strides; these are aligned to %d",
                             v->name, v->align_bytes, align);
        if (!strcmp(why, "cols"))
            return tile_fail(TILE_STATUS_NOT_SUPPORTED,
                             "tile_softmax_variant: %s takes at most %lld columns, got cols %lld",
                             v->name, (long long)v->max_cols, (long long)cols);
        return tile_fail(TILE_STATUS_NOT_SUPPORTED,
                         "tile_softmax_variant: %s is a %s %s variant, not softmax %s", v->name,
                         v->op, tile_dtype_string(v->dtype), tile_dtype_string(dtype));
    }
    return softmax_launch(device, variant, log_softmax, y, x, rows, cols, ld_y, ld_x, stream);
}

tile_status tile_softmax_explain(tile_dtype dtype, int64_t rows, int64_t cols, int64_t ld_y,
                                 int64_t ld_x, int32_t pointer_align, int32_t arch,
                                 tile_decision *decision) {
    tile_begin_call();
    if (!decision) return tile_fail(TILE_STATUS_INVALID_ARGUMENT, "tile_softmax_explain: decision is NULL");
    if (decision->struct_size < TILE_DECISION_V1_SIZE)
        return tile_fail(TILE_STATUS_INVALID_ARGUMENT,
                         "tile_softmax_explain: decision->struct_size is %zu; set it to "
                         "sizeof(tile_decision) (%zu)",
                         decision->struct_size, sizeof(tile_decision));
    if (pointer_align < 1 || (pointer_align & (pointer_align - 1)))
        return tile_fail(TILE_STATUS_INVALID_ARGUMENT,
                         "tile_softmax_explain: pointer_align is %d; it must be a power of two",
                         pointer_align);
    /* Stand-in pointers aligned to pointer_align (at least the element size, at most 256) let
     * the shared checks run unchanged and in the ops' order; they are never dereferenced. A
     * pointer_align below the element size is reported where the ops report misalignment. */
    const size_t elem = tile_dtype_size(dtype) ? tile_dtype_size(dtype) : 1;
    const uintptr_t fake = (uintptr_t)(pointer_align >= 256 ? 256
                                       : (size_t)pointer_align < elem ? elem : (size_t)pointer_align);
    int32_t align;
    tile_status s = tile_check_rowwise("tile_softmax_explain", dtype, (const void *)(fake * 3),
                                       (const void *)fake, rows, cols, ld_y, ld_x, &align);
    if (s == TILE_STATUS_SUCCESS && (size_t)pointer_align < elem)
        return tile_fail(TILE_STATUS_MISALIGNED,
                         "tile_softmax_explain: pointer_align is %d; %s pointers are aligned to "
                         "at least their %zu-byte elements",
                         pointer_align, tile_dtype_string(dtype), elem);
    if (s != TILE_STATUS_SUCCESS) return s;
    int32_t sm_count = 0, smem_limit = tile_arch_smem_limit(arch);
    if (arch == 0) {
        const tile_device *device;
        if ((s = tile_current_device(&device)) != TILE_STATUS_SUCCESS) return s;
        arch = device->arch;
        sm_count = device->sm_count;
        smem_limit = device->smem_limit;
    } else if (arch < 10) {
        return tile_fail(TILE_STATUS_INVALID_ARGUMENT,
                         "tile_softmax_explain: arch is %d; give 10*major+minor (90 = sm_90) or 0",
                         arch);
    }
    tile_problem p = {softmax_op, dtype, rows, cols, align, arch, sm_count, smem_limit};
    tile_decision d = {.struct_size = sizeof d};
    if ((s = tile_dispatch(&p, &d)) != TILE_STATUS_SUCCESS) return s;
    const size_t size = decision->struct_size; /* copy only what the caller's struct holds */
    memcpy(decision, &d, size < sizeof d ? size : sizeof d);
    decision->struct_size = size;
    return TILE_STATUS_SUCCESS;
}
