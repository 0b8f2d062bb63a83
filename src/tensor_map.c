/* Tensor maps for the warp-specialized (tensor-memory-accelerator) variants of every op: the
 * one encoder and the one test of which variants need them. */
#include "internal.h"

int tile_variant_uses_tensor_maps(const tile_variant *v) {
    return tile_variant_param(v, "WARPGROUPS") >= 3;
}

int64_t tile_lone_axis_stride(int64_t stride, int64_t count, const int64_t *strides,
                              const int64_t *counts, int axes, int64_t inner) {
    if (count > 1) return stride;
    int64_t end = inner;
    for (int i = 0; i < axes; i++)
        if (counts[i] > 1 && strides[i] * counts[i] > end) end = strides[i] * counts[i];
    return (end + 7) / 8 * 8;
}

tile_status tile_encode_tensor_map(const char *fn, const char *what, CUtensorMap *map,
                                   tile_dtype dtype, const void *base, int rank,
                                   const int64_t *dims, const int64_t *strides,
                                   const uint32_t *box) {
    cuuint64_t dim[5], stride[4];
    cuuint32_t boxes[5], unit[5] = {1, 1, 1, 1, 1};
    if (rank < 1 || rank > 5)
        return tile_fail(TILE_STATUS_INTERNAL, "%s: a tensor map of rank %d for %s", fn, rank, what);
    for (int i = 0; i < rank; i++) {
        dim[i] = (cuuint64_t)dims[i];
        boxes[i] = box[i];
        if (i) stride[i - 1] = (cuuint64_t)strides[i - 1] * tile_dtype_size(dtype);
    }
    const CUresult r = tile_driver_get(NULL)->cuTensorMapEncodeTiled(
        map, dtype == TILE_DTYPE_BF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
        (cuuint32_t)rank, (void *)(uintptr_t)base, dim, stride, boxes, unit,
        CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
        CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS)
        return tile_fail(TILE_STATUS_NOT_SUPPORTED,
                         "%s: the tensor map of %s cannot describe this layout (%s); a variant "
                         "without tensor maps can run it",
                         fn, what, tile_driver_error_name(r));
    return TILE_STATUS_SUCCESS;
}

int32_t tile_tensor_map_fallback(const tile_problem *p, int32_t variant, int forced,
                                 tile_status status) {
    if (status != TILE_STATUS_NOT_SUPPORTED || forced ||
        !tile_variant_uses_tensor_maps(&tile_registry[variant]))
        return -1;
    tile_problem without = *p; /* the same call, tensor-map variants not eligible */
    without.no_tensor_maps = 1;
    const int32_t other = tile_cheapest_variant(&without, NULL);
    if (other >= 0) tile_begin_call(); /* the retry is a call of its own: no stale message */
    return other;
}
