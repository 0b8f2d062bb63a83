/* The one-time load failing after the driver loaded the library (src/loader.c, library_load):
 * a registry kernel missing from the fatbinary. The library loads fake_cuda (FUSEDOPS_LIBCUDA)
 * with FAKE_CUDA_MISSING_KERNEL naming a registry entry from the middle of the registry (so
 * some kernels were resolved before it): every call that needs the device answers
 * TILE_STATUS_INTERNAL naming that kernel, and the library was unloaded exactly once. With
 * FAKE_CUDA_UNLOAD=fail (test_loader_failure_unload_fails) the unload fails: the message
 * still says which kernel is missing first, then that the unload failed.
 *
 * The library loads once per process, so this is a program of its own (one ctest entry per
 * setting) that sets the environment before its first call that needs the driver. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_cuda.h"
#include "fusedops.h"

static _Alignas(256) float ybuf[64], xbuf[64]; /* never touched: the load fails first */
static char expected_message[512];
static int unload_fails;

static fake_cuda_library library_calls(void) {
    void *fake = dlopen(FAKE_CUDA, RTLD_NOW | RTLD_NOLOAD);
    fake_cuda_library_fn *calls =
        fake ? (fake_cuda_library_fn *)dlsym(fake, FAKE_CUDA_LIBRARY_CALLS) : NULL;
    if (!calls) {
        print_error("%s is not loaded, or lacks %s\n", FAKE_CUDA, FAKE_CUDA_LIBRARY_CALLS);
        fail();
    }
    fake_cuda_library record;
    calls(&record);
    dlclose(fake); /* our reference; the library keeps its own */
    return record;
}

static void assert_load_failure(tile_status got) {
    if (got != TILE_STATUS_INTERNAL || strcmp(tile_last_error(), expected_message)) {
        print_error("got %s \"%s\", want %s \"%s\"\n", tile_status_string(got), tile_last_error(),
                    tile_status_string(TILE_STATUS_INTERNAL), expected_message);
        fail();
    }
}

/* The first call loads and fails, and the library is given back; later calls answer the same
 * without loading or unloading again. */
static void test_failed_load_unloads_the_library(void **state) {
    (void)state;
    assert_load_failure(tile_softmax(TILE_DTYPE_F32, ybuf, xbuf, 4, 16, 16, 16, NULL));
    int32_t arch = -1;
    for (int call = 0; call < 2; call++) {
        assert_load_failure(tile_device_arch(&arch));
        assert_int_equal(arch, -1);
    }
    const fake_cuda_library record = library_calls();
    assert_int_equal(record.loads, 1);
    assert_int_equal(record.unloads, unload_fails ? 0 : 1);
    assert_int_equal(record.failed_unloads, unload_fails ? 1 : 0);
    assert_int_equal(record.stray_unloads, 0);
}

int main(void) {
    /* before the first call that needs the driver: it is loaded once per process */
    if (setenv("FUSEDOPS_LIBCUDA", FAKE_CUDA, 1)) return 1;
    const char *unload = getenv("FAKE_CUDA_UNLOAD");
    unload_fails = unload && !strcmp(unload, "fail");
    tile_variant_info missing = {.struct_size = sizeof missing};
    if (tile_variant_count() < 2 ||
        tile_variant_get(tile_variant_count() / 2, &missing) != TILE_STATUS_SUCCESS ||
        setenv("FAKE_CUDA_MISSING_KERNEL", missing.name, 1))
        return 1;
    snprintf(expected_message, sizeof expected_message,
             "kernel %s is in the registry but not in the fatbinary (CUDA_ERROR_NOT_FOUND)%s",
             missing.name,
             unload_fails ? "; cuLibraryUnload then failed with CUDA_ERROR_INVALID_VALUE" : "");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_failed_load_unloads_the_library),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
