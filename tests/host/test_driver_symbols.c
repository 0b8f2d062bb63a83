/* The driver's entry points (src/cuda_driver.c): which drivers the library accepts by the
 * symbols they export. The library loads fake_cuda (FUSEDOPS_LIBCUDA), and this program
 * interposes dlsym, which the library resolves the entry points with, to play a driver that
 * lacks some of them. The driver is loaded once per process, so each case runs in a child of
 * its own, forked before this process ever calls the library. The cases are skipped with
 * cuda.h before 12.8 (below), and under AddressSanitizer or ThreadSanitizer, whose runtimes
 * look up functions with dlsym(RTLD_NEXT) before main, which an interposed dlsym cannot pass on
 * (RTLD_NEXT goes by the caller). */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cuda.h>

#include "fusedops.h"

/* The cases play drivers against the names cuda.h of CUDA 12.8 and later gives (before it,
 * cuEventElapsedTime has no _v2 and there is nothing to fall back from). */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__) || CUDA_VERSION < 12080
#define INTERPOSED 0
#else
#define INTERPOSED 1
/* The symbols the played driver lacks (NULL-terminated). The played driver exports
 * cuEventElapsedTime, the first version, as every driver does (the fake, built with cuda.h,
 * defines only cuEventElapsedTime_v2, which stands in for it). */
static const char *const *hidden;

void *dlsym(void *restrict handle, const char *restrict name) {
    static void *(*real_dlsym)(void *, const char *); /* the C library's: GLIBC_2.34 from
                                                       * glibc 2.34 on, libdl's before */
    static const char *const versions[] = {"GLIBC_2.34", "GLIBC_2.2.5", "GLIBC_2.17"};
    for (size_t i = 0; i < sizeof versions / sizeof *versions && !real_dlsym; i++)
        real_dlsym = (void *(*)(void *, const char *))dlvsym(RTLD_NEXT, "dlsym", versions[i]);
    if (!real_dlsym) abort();
    for (const char *const *h = hidden; h && *h; h++)
        if (!strcmp(name, *h)) return NULL;
    if (hidden && !strcmp(name, "cuEventElapsedTime"))
        return real_dlsym(handle, "cuEventElapsedTime_v2");
    return real_dlsym(handle, name);
}
#endif

/* Runs tile_device_arch twice in a child whose driver lacks `lacks`: 0 where both answer
 * `want` (sm_90, the fake's, on success) and, on failure, a message holding `message`. */
static int child(const char *const *lacks, tile_status want, const char *message) {
#if INTERPOSED
    hidden = lacks;
#endif
    for (int call = 0; call < 2; call++) { /* the second answers as the first: loaded once */
        int32_t arch = 0;
        const tile_status s = tile_device_arch(&arch);
        const char *e = tile_last_error();
        if (s != want || (s == TILE_STATUS_SUCCESS && arch != 90) ||
            (s != TILE_STATUS_SUCCESS && !strstr(e, message))) {
            fprintf(stderr, "lacking %s: call %d: %s (sm_%d) \"%s\"; want %s \"%s\"\n", lacks[0],
                    call, tile_status_string(s), arch, e, tile_status_string(want), message);
            return 1;
        }
    }
    return 0;
}

static void run_child(const char *const *lacks, tile_status want, const char *message) {
    if (!INTERPOSED) skip();
    fflush(NULL);
    const pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) _exit(child(lacks, want, message));
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

/* cuda.h of CUDA 12.8 and later names cuEventElapsedTime_v2, new in that driver; a 12.0 to
 * 12.7 driver has only cuEventElapsedTime (same signature), which the library takes: it once
 * answered NO_DEVICE there ("too old: it lacks cuEventElapsedTime_v2"). */
static void test_driver_before_12_8(void **state) {
    (void)state;
    static const char *const lacks[] = {"cuEventElapsedTime_v2", NULL};
    run_child(lacks, TILE_STATUS_SUCCESS, "");
}

/* Without either version the driver is refused, naming the one cuda.h asks for. */
static void test_driver_without_event_timing(void **state) {
    (void)state;
    static const char *const lacks[] = {"cuEventElapsedTime_v2", "cuEventElapsedTime", NULL};
    run_child(lacks, TILE_STATUS_NO_DEVICE, "too old: it lacks cuEventElapsedTime_v2");
}

/* A driver before CUDA 12.0 (no CUkernel launches): NO_DEVICE, naming the entry point. */
static void test_driver_before_12_0(void **state) {
    (void)state;
    static const char *const lacks[] = {"cuLibraryLoadData", NULL};
    run_child(lacks, TILE_STATUS_NO_DEVICE, "too old: it lacks cuLibraryLoadData");
}

int main(void) {
    if (setenv("FUSEDOPS_LIBCUDA", FAKE_CUDA, 1)) return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_driver_before_12_8),
        cmocka_unit_test(test_driver_without_event_timing),
        cmocka_unit_test(test_driver_before_12_0),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
