/* Test helper: the first registry variant of an op and dtype (the *_variant entry points
 * check both, before the device). */
#ifndef FUSEDOPS_TEST_FIRST_VARIANT_H
#define FUSEDOPS_TEST_FIRST_VARIANT_H

#include <string.h>

#include "fusedops.h"

/* Its index, or -1 when the library has none. */
static inline int32_t first_variant_of(const char *op, tile_dtype dtype) {
    for (int32_t i = 0; i < tile_variant_count(); i++) {
        tile_variant_info info = {.struct_size = sizeof info};
        if (tile_variant_get(i, &info) == TILE_STATUS_SUCCESS && !strcmp(info.op, op) &&
            info.dtype == dtype)
            return i;
    }
    return -1;
}

#endif
