/* Introspection of the compiled variants. */
#include <string.h>

#include "internal.h"

int32_t tile_variant_count(void) { return tile_registry_count; }

tile_status tile_variant_get(int32_t index, tile_variant_info *info) {
    tile_begin_call();
    if (!info) return tile_fail(TILE_STATUS_INVALID_ARGUMENT, "info is NULL");
    if (info->struct_size < TILE_VARIANT_INFO_V1_SIZE)
        return tile_fail(TILE_STATUS_INVALID_ARGUMENT,
                         "info->struct_size is %zu; set it to sizeof(tile_variant_info) (%zu)",
                         info->struct_size, sizeof(tile_variant_info));
    if (index < 0 || index >= tile_registry_count)
        return tile_fail(TILE_STATUS_INVALID_ARGUMENT, "index %d is outside [0, %d)", index,
                         tile_registry_count);
    /* Fields appended after version 1 are written only when info->struct_size covers them. */
    const tile_variant *v = &tile_registry[index];
    info->name = v->name;
    info->op = v->op;
    info->dtype = v->dtype;
    info->arch_min = v->arch_min;
    info->arch_max = v->arch_max;
    info->threads = v->threads;
    info->cluster = v->cluster;
    info->smem_bytes = v->smem_bytes;
    info->max_cols = v->max_cols;
    info->align_bytes = v->align_bytes;
    info->params = v->params;
    return TILE_STATUS_SUCCESS;
}

int32_t tile_variant_find(const char *name) {
    if (!name) return -1;
    for (int32_t i = 0; i < tile_registry_count; i++)
        if (!strcmp(tile_registry[i].name, name)) return i;
    return -1;
}

tile_status tile_device_arch(int32_t *arch) {
    tile_begin_call();
    if (!arch) return tile_fail(TILE_STATUS_INVALID_ARGUMENT, "arch is NULL");
    const tile_device *device;
    tile_status s = tile_current_device(&device);
    if (s == TILE_STATUS_SUCCESS) *arch = device->arch;
    return s;
}
