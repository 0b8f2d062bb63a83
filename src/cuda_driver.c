#define _GNU_SOURCE
#include "cuda_driver.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static tile_driver driver;
static const tile_driver *driver_loaded;
static const char *driver_failure = "the CUDA driver was not loaded";
static char driver_failure_buf[256];
static pthread_once_t driver_once = PTHREAD_ONCE_INIT;

#define TILE_STR_(x) #x
#define TILE_STR(x) TILE_STR_(x)

/* An entry point by the name cuda.h gives it. cuda.h of CUDA 12.8 and later names
 * cuEventElapsedTime_v2 (new in 12.8); drivers 12.0 to 12.7 have only cuEventElapsedTime, of
 * the same signature. Demanding the new one refused those drivers as "too old" (NO_DEVICE),
 * though the library itself never times events (the tools do): take the first version. */
static void *driver_symbol(void *handle, const char *name) {
    void *f = dlsym(handle, name);
    if (!f && !strcmp(name, "cuEventElapsedTime_v2")) f = dlsym(handle, "cuEventElapsedTime");
    return f;
}

static void driver_load(void) {
    const char *path = getenv("FUSEDOPS_LIBCUDA");
    if (!path || !*path) path = "libcuda.so.1";
    void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        snprintf(driver_failure_buf, sizeof driver_failure_buf,
                 "no CUDA driver: cannot load %s (is an NVIDIA driver installed?)", path);
        driver_failure = driver_failure_buf;
        return;
    }
    /* The table's member names are the macro-expanded (versioned) symbol names. */
#define TILE_DRIVER_LOAD(name)                                                                \
    driver.name = (__typeof__(driver.name))driver_symbol(handle, TILE_STR(name));             \
    if (!driver.name) {                                                                       \
        snprintf(driver_failure_buf, sizeof driver_failure_buf,                               \
                 "the CUDA driver in %s is too old: it lacks %s (CUDA 12.0 or newer needed)", \
                 path, TILE_STR(name));                                                       \
        driver_failure = driver_failure_buf;                                                  \
        return;                                                                               \
    }
    TILE_DRIVER_FUNCTIONS(TILE_DRIVER_LOAD)
#undef TILE_DRIVER_LOAD
    CUresult r = driver.cuInit(0);
    if (r != CUDA_SUCCESS) {
        const char *name = NULL;
        driver.cuGetErrorName(r, &name);
        snprintf(driver_failure_buf, sizeof driver_failure_buf,
                 "cuInit failed with %s: no usable GPU", name ? name : "an unknown error");
        driver_failure = driver_failure_buf;
        return;
    }
    driver_loaded = &driver;
}

const tile_driver *tile_driver_get(const char **why) {
    pthread_once(&driver_once, driver_load);
    if (!driver_loaded && why) *why = driver_failure;
    return driver_loaded;
}

const char *tile_driver_error_name(CUresult result) {
    const char *name = NULL;
    const tile_driver *d = tile_driver_get(NULL);
    if (d && d->cuGetErrorName(result, &name) == CUDA_SUCCESS && name) return name;
    return "an unknown CUDA error";
}
