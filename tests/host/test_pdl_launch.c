/* Programmatic dependent launch (PDL): the loader decides once per device whether launches may
 * overlap the grid ahead of them in the stream (src/loader.c, device_setup: a driver of CUDA
 * 12.3 or newer, FUSEDOPS_PDL not "0", every kernel set up loaded an image of PTX 9.0 or
 * newer, a failed query counting as not), and tile_launch_programs then gives every launch
 * CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION, beside a cluster variant's
 * CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION. Here the library loads fake_cuda (FUSEDOPS_LIBCUDA),
 * a stand-in driver that plays one GPU and records each launch instead of running it, and the
 * test reads what cuLaunchKernelEx was given.
 *
 * Device setup happens once per process, so each scenario is a run of its own
 * (tests/CMakeLists.txt): the environment sets the GPU the fake plays (FAKE_CUDA_CC,
 * FAKE_CUDA_DRIVER, FAKE_CUDA_PTX; fake_cuda.h) and FUSEDOPS_PDL, and EXPECT_PDL says what
 * every launch must carry: 1 (the default) the PDL attribute, 0 none. */
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

#define ROWS 4096
#define COLS 4096
/* Stand-in device addresses, 256-byte aligned as cuMemAlloc's, and a stream: never
 * dereferenced (the fake runs nothing), only passed through. */
#define Y_ADDR ((void *)(uintptr_t)0x7f0000000000u)
#define X_ADDR ((const void *)(uintptr_t)0x7f0010000000u)
#define STREAM ((tile_stream)(uintptr_t)0x5000u)

static int expect_pdl = 1;
static int32_t arch;
static void *fake;
static fake_cuda_last_launch_fn *last_launch;

static fake_cuda_launch recorded(void) {
    fake_cuda_launch l;
    last_launch(&l);
    return l;
}

static void assert_status(tile_status got, tile_status want) {
    if (got != want) {
        print_error("got %s, want %s: %s\n", tile_status_string(got), tile_status_string(want),
                    tile_last_error());
        fail();
    }
}

#define EXPECT(cond)                                                                      \
    do {                                                                                  \
        if (!(cond)) {                                                                    \
            print_error("%s launched as %s, grid %u block %u smem %u, %u attrs, pdl %d, " \
                        "cluster %u: expected %s\n",                                      \
                        info->name, l->kernel, l->grid[0], l->block[0], l->shared_bytes,  \
                        l->num_attrs, l->pdl, l->cluster[0], #cond);                      \
            fail();                                                                       \
        }                                                                                 \
    } while (0)

/* The launch just recorded is variant `info` over ROWS rows, on STREAM, with the PDL attribute
 * as the scenario expects and the cluster attribute exactly where the variant has clusters. */
static void check_launch(const fake_cuda_launch *l, const tile_variant_info *info) {
    EXPECT(!strcmp(l->kernel, info->name));
    EXPECT(l->block[0] == (unsigned)info->threads && l->block[1] == 1 && l->block[2] == 1);
    EXPECT(l->shared_bytes == (unsigned)info->smem_bytes);
    EXPECT(l->stream == (const void *)STREAM);
    /* one program (a cluster of them, if clustered) per ROWS= rows; a persistent variant
     * (not told apart by the public API) at most as many as stay resident */
    const char *rows_param = strstr(info->params, "ROWS=");
    EXPECT(rows_param);
    const unsigned rows_per_program = (unsigned)atoi(rows_param + 5);
    EXPECT(rows_per_program > 0);
    const unsigned programs = (ROWS + rows_per_program - 1) / rows_per_program;
    const unsigned resident = FAKE_CUDA_SM_COUNT * (unsigned)fake_cuda_blocks_per_sm(info->threads);
    const unsigned c = (unsigned)info->cluster;
    EXPECT(l->grid[0] == programs * c || (resident < programs && l->grid[0] == resident * c));
    EXPECT(l->grid[1] == 1 && l->grid[2] == 1);
    if (c > 1)
        EXPECT(l->cluster[0] == c && l->cluster[1] == 1 && l->cluster[2] == 1);
    else
        EXPECT(l->cluster[0] == 0);
    EXPECT(l->pdl == (expect_pdl ? 1 : -1));
    EXPECT(l->num_attrs == (c > 1 ? 1u : 0u) + (expect_pdl ? 1u : 0u));
}

/* The first call loads the driver: it must be the fake, on the device it plays. */
static int setup(void **state) {
    (void)state;
    const char *e = getenv("EXPECT_PDL");
    if (e && strcmp(e, "0") && strcmp(e, "1")) {
        fprintf(stderr, "EXPECT_PDL is \"%s\": 0 or 1\n", e);
        return -1;
    }
    expect_pdl = !e || !strcmp(e, "1");
    const tile_status s = tile_device_arch(&arch);
    if (s != TILE_STATUS_SUCCESS) {
        fprintf(stderr, "tile_device_arch: %s: %s\n", tile_status_string(s), tile_last_error());
        return -1;
    }
    const char *cc = getenv("FAKE_CUDA_CC");
    if (arch != (cc ? atoi(cc) : 90)) {
        fprintf(stderr, "device is sm_%d, FAKE_CUDA_CC %s\n", arch, cc ? cc : "unset (90)");
        return -1;
    }
    fake = dlopen(FAKE_CUDA, RTLD_NOW | RTLD_NOLOAD);
    last_launch = fake ? (fake_cuda_last_launch_fn *)dlsym(fake, FAKE_CUDA_LAST_LAUNCH) : NULL;
    if (!last_launch) {
        fprintf(stderr, "%s is not loaded, or lacks %s\n", FAKE_CUDA, FAKE_CUDA_LAST_LAUNCH);
        return -1;
    }
    printf("sm_%d, FAKE_CUDA_DRIVER %s, FAKE_CUDA_PTX %s, FUSEDOPS_PDL %s: expecting %s\n", arch,
           getenv("FAKE_CUDA_DRIVER") ? getenv("FAKE_CUDA_DRIVER") : "unset",
           getenv("FAKE_CUDA_PTX") ? getenv("FAKE_CUDA_PTX") : "unset",
           getenv("FUSEDOPS_PDL") ? getenv("FUSEDOPS_PDL") : "unset",
           expect_pdl ? "PDL" : "no PDL");
    return 0;
}

static int teardown(void **state) {
    (void)state;
    if (fake) dlclose(fake); /* our reference; the library keeps its own */
    return 0;
}

/* tile_softmax and tile_log_softmax, bf16 4096 x 4096: one launch each, of the variant
 * explain names for this device. */
static void test_dispatched(void **state) {
    (void)state;
    tile_decision d = {.struct_size = sizeof d};
    assert_status(tile_softmax_explain(TILE_DTYPE_BF16, ROWS, COLS, COLS, COLS, 256, 0, &d),
                  TILE_STATUS_SUCCESS);
    tile_variant_info v = {.struct_size = sizeof v};
    assert_status(tile_variant_get(d.variant, &v), TILE_STATUS_SUCCESS);
    const tile_variant_info *info = &v;
    for (int log_softmax = 0; log_softmax < 2; log_softmax++) {
        const int before = recorded().count;
        assert_status((log_softmax ? tile_log_softmax : tile_softmax)(
                          TILE_DTYPE_BF16, Y_ADDR, X_ADDR, ROWS, COLS, COLS, COLS, STREAM),
                      TILE_STATUS_SUCCESS);
        const fake_cuda_launch launch = recorded(), *l = &launch;
        EXPECT(l->count == before + 1);
        check_launch(l, info);
    }
    printf("dispatched: %s\n", v.name);
}

/* Every bf16 softmax variant, forced: those this device can run at 4096 columns launch with
 * the same attributes (a cluster variant's beside its cluster dimension); the others are
 * refused before anything is launched. */
static void test_forced(void **state) {
    (void)state;
    int launched = 0, clustered = 0;
    for (int32_t i = 0; i < tile_variant_count(); i++) {
        tile_variant_info v = {.struct_size = sizeof v};
        assert_status(tile_variant_get(i, &v), TILE_STATUS_SUCCESS);
        if (strcmp(v.op, "softmax") || v.dtype != TILE_DTYPE_BF16) continue;
        const tile_variant_info *info = &v;
        const int runs = arch >= v.arch_min && (!v.arch_max || arch <= v.arch_max) &&
                         v.smem_bytes <= FAKE_CUDA_SMEM_OPTIN &&
                         (!v.max_cols || v.max_cols >= COLS);
        const int before = recorded().count;
        const tile_status s = tile_softmax_variant(i, 0, TILE_DTYPE_BF16, Y_ADDR, X_ADDR, ROWS,
                                                   COLS, COLS, COLS, STREAM);
        const fake_cuda_launch launch = recorded(), *l = &launch;
        if (runs) {
            assert_status(s, TILE_STATUS_SUCCESS);
            EXPECT(l->count == before + 1);
            check_launch(l, info);
            launched++;
            clustered += v.cluster > 1;
        } else {
            if (s != TILE_STATUS_ARCH_MISMATCH) assert_status(s, TILE_STATUS_NOT_SUPPORTED);
            EXPECT(l->count == before);
        }
    }
    printf("forced: %d bf16 softmax variants launched, %d of them clustered\n", launched,
           clustered);
    assert_true(launched > 0);
    if (arch == 90) assert_true(clustered > 0); /* the sm_90 grid has cluster variants */
}

int main(void) {
    /* before any library call: the driver is loaded once per process */
    if (setenv("FUSEDOPS_LIBCUDA", FAKE_CUDA, 1)) return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dispatched),
        cmocka_unit_test(test_forced),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
