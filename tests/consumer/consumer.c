/* An out-of-tree program that uses an installed libfusedops the way a user's program does:
 * only <fusedops.h> and -lfusedops (found through find_package or pkg-config). Built by
 * tests/install/test_install.sh against a temporary install prefix, as C and as C++.
 *
 * It prints tile_version() and checks it against the header's TILE_VERSION, then calls
 * tile_softmax on a small f32 problem:
 *   - where a CUDA driver and a GPU are present (found by dlopen, as the library finds them),
 *     on device memory it allocates, expecting TILE_STATUS_SUCCESS and rows that sum to 1;
 *   - elsewhere, on stand-in pointers (never dereferenced), expecting TILE_STATUS_NO_DEVICE.
 * Any other status fails. Exit status 0 on success, 1 on failure.
 *
 * The program does not need the CUDA toolkit: it declares the few driver entry points it calls
 * itself. It is valid C11 and C++. */
#if !defined(__cplusplus) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <fusedops.h>

#ifndef CONSUMER_NAME
#define CONSUMER_NAME "consumer"
#endif

enum { ROWS = 4, COLS = 1000 };

/* The driver entry points used here (CUresult is an int, CUdeviceptr 64 bits). */
typedef int (*cu_init_fn)(unsigned);
typedef int (*cu_device_get_fn)(int *, int);
typedef int (*cu_ctx_retain_fn)(void **, int);
typedef int (*cu_ctx_release_fn)(int);
typedef int (*cu_ctx_set_fn)(void *);
typedef int (*cu_ctx_sync_fn)(void);
typedef int (*cu_alloc_fn)(unsigned long long *, size_t);
typedef int (*cu_free_fn)(unsigned long long);
typedef int (*cu_htod_fn)(unsigned long long, const void *, size_t);
typedef int (*cu_dtoh_fn)(void *, unsigned long long, size_t);

static void *symbol(void *lib, const char *name, void *fn, size_t size) {
    void *p = dlsym(lib, name);
    if (p) memcpy(fn, &p, size); /* a data pointer to a function pointer, without a cast */
    return p;
}
#define SYMBOL(lib, var, name) symbol(lib, name, &var, sizeof var)

/* Runs tile_softmax on the GPU. Returns 1 when it ran (*ok says whether it passed), 0 when
 * there is no usable driver or GPU here. */
static int run_on_gpu(int *ok) {
    const char *path = getenv("FUSEDOPS_LIBCUDA"); /* the library honours it; so do we */
    void *lib = dlopen(path && *path ? path : "libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return 0;
    cu_init_fn cu_init = NULL;
    cu_device_get_fn cu_device_get = NULL;
    cu_ctx_retain_fn cu_ctx_retain = NULL;
    cu_ctx_release_fn cu_ctx_release = NULL;
    cu_ctx_set_fn cu_ctx_set = NULL;
    cu_ctx_sync_fn cu_ctx_sync = NULL;
    cu_alloc_fn cu_alloc = NULL;
    cu_free_fn cu_free = NULL;
    cu_htod_fn cu_htod = NULL;
    cu_dtoh_fn cu_dtoh = NULL;
    int device = 0;
    if (!SYMBOL(lib, cu_init, "cuInit") || cu_init(0) != 0 ||
        !SYMBOL(lib, cu_device_get, "cuDeviceGet") || cu_device_get(&device, 0) != 0) {
        dlclose(lib);
        return 0; /* a driver without a GPU: the library says NO_DEVICE too */
    }
    *ok = 0;
    if (!SYMBOL(lib, cu_ctx_retain, "cuDevicePrimaryCtxRetain") ||
        !SYMBOL(lib, cu_ctx_release, "cuDevicePrimaryCtxRelease_v2") ||
        !SYMBOL(lib, cu_ctx_set, "cuCtxSetCurrent") ||
        !SYMBOL(lib, cu_ctx_sync, "cuCtxSynchronize") || !SYMBOL(lib, cu_alloc, "cuMemAlloc_v2") ||
        !SYMBOL(lib, cu_free, "cuMemFree_v2") || !SYMBOL(lib, cu_htod, "cuMemcpyHtoD_v2") ||
        !SYMBOL(lib, cu_dtoh, "cuMemcpyDtoH_v2")) {
        fprintf(stderr, CONSUMER_NAME ": the driver lacks an entry point\n");
        return 1;
    }
    static float host[ROWS * COLS];
    for (int i = 0; i < ROWS * COLS; i++) host[i] = (float)((i * 37) % 101) / 10.0f;
    void *ctx = NULL;
    unsigned long long x = 0, y = 0;
    if (cu_ctx_retain(&ctx, device) || cu_ctx_set(ctx) || cu_alloc(&x, sizeof host) ||
        cu_alloc(&y, sizeof host) || cu_htod(x, host, sizeof host)) {
        fprintf(stderr, CONSUMER_NAME ": CUDA setup failed\n");
        return 1;
    }
    tile_status s = tile_softmax(TILE_DTYPE_F32, (void *)(uintptr_t)y, (const void *)(uintptr_t)x,
                                 ROWS, COLS, COLS, COLS, NULL);
    printf(CONSUMER_NAME ": GPU: tile_softmax -> %d (%s)%s%s\n", (int)s, tile_status_string(s),
           *tile_last_error() ? ": " : "", tile_last_error());
    if (s == TILE_STATUS_SUCCESS && cu_ctx_sync() == 0 && cu_dtoh(host, y, sizeof host) == 0) {
        *ok = 1;
        for (int r = 0; r < ROWS; r++) {
            double sum = 0;
            for (int c = 0; c < COLS; c++) sum += host[r * COLS + c];
            if (fabs(sum - 1.0) > 1e-4) {
                fprintf(stderr, CONSUMER_NAME ": row %d sums to %.6f, not 1\n", r, sum);
                *ok = 0;
            }
        }
    }
    cu_free(x);
    cu_free(y);
    cu_ctx_release(device);
    return 1;
}

int main(void) {
    int32_t v = tile_version();
    printf(CONSUMER_NAME ": tile_version() = %d (%d.%d.%d), header TILE_VERSION = %d\n", (int)v,
           (int)(v / 10000), (int)(v / 100 % 100), (int)(v % 100), TILE_VERSION);
    if (v != TILE_VERSION) {
        fprintf(stderr, CONSUMER_NAME ": the library loaded is not the header's version\n");
        return 1;
    }

    int ok = 0;
    if (run_on_gpu(&ok)) return ok ? 0 : 1;

    /* No GPU here: stand-in device addresses, aligned as cudaMalloc's are. */
    void *y = (void *)(uintptr_t)0x7f0000100000ull;
    const void *x = (const void *)(uintptr_t)0x7f0000200000ull;
    tile_status s = tile_softmax(TILE_DTYPE_F32, y, x, ROWS, COLS, COLS, COLS, NULL);
    printf(CONSUMER_NAME ": no GPU: tile_softmax -> %d (%s): %s\n", (int)s, tile_status_string(s),
           tile_last_error());
    if (s != TILE_STATUS_NO_DEVICE) {
        fprintf(stderr, CONSUMER_NAME ": expected %d (%s) without a GPU\n",
                (int)TILE_STATUS_NO_DEVICE, tile_status_string(TILE_STATUS_NO_DEVICE));
        return 1;
    }
    return 0;
}
