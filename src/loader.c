/* Loading: the embedded fatbinary once per process (context-independent CUlibrary), kernel
 * handles once, and per-device facts and kernel attributes once per device. Nothing here runs
 * inside a launch after the first call on a device. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* The fatbinary, embedded by fatbin.S (.incbin). */
extern const unsigned char tile_fatbin_start[];

#define TILE_MAX_DEVICES 64

static pthread_once_t library_once = PTHREAD_ONCE_INIT;
static tile_status library_status = TILE_STATUS_INTERNAL;
static char library_message[256] = "library not loaded";
static CUlibrary library;
static CUkernel *kernels; /* one per registry entry */

typedef struct device_slot {
    atomic_int ready;
    tile_device device;
} device_slot;
static device_slot slots[TILE_MAX_DEVICES];
static pthread_mutex_t device_setup_lock = PTHREAD_MUTEX_INITIALIZER;

/* A load that failed after cuLibraryLoadData succeeded holds nothing: the failure is
 * permanent for the process, so the library and the kernel table would never be used. The
 * first failure's status and message stay; a failed unload only adds to the message. */
static void library_unload_after_failure(const tile_driver *d) {
    free(kernels);
    kernels = NULL;
    const CUresult r = d->cuLibraryUnload(library);
    library = NULL;
    if (r != CUDA_SUCCESS) {
        const size_t used = strlen(library_message);
        snprintf(library_message + used, sizeof library_message - used,
                 "; cuLibraryUnload then failed with %s", tile_driver_error_name(r));
    }
}

static void library_load(void) {
    const char *why = NULL;
    const tile_driver *d = tile_driver_get(&why);
    if (!d) {
        library_status = TILE_STATUS_NO_DEVICE;
        snprintf(library_message, sizeof library_message, "%s", why);
        return;
    }
    /* The image is static and outlives the library handle: let the driver keep a pointer. */
    CUlibraryOption option = CU_LIBRARY_BINARY_IS_PRESERVED;
    void *option_value = (void *)(uintptr_t)1;
    CUresult r = d->cuLibraryLoadData(&library, tile_fatbin_start, NULL, NULL, 0, &option,
                                      &option_value, 1);
    if (r != CUDA_SUCCESS) {
        library_status = TILE_STATUS_CUDA_ERROR;
        snprintf(library_message, sizeof library_message,
                 "cuLibraryLoadData failed with %s: the embedded kernels do not load on this "
                 "driver",
                 tile_driver_error_name(r));
        return;
    }
    kernels = calloc((size_t)tile_registry_count, sizeof *kernels);
    if (!kernels) {
        library_status = TILE_STATUS_INTERNAL;
        snprintf(library_message, sizeof library_message, "out of host memory");
        library_unload_after_failure(d);
        return;
    }
    for (int32_t i = 0; i < tile_registry_count; i++) {
        r = d->cuLibraryGetKernel(&kernels[i], library, tile_registry[i].name);
        if (r != CUDA_SUCCESS) {
            library_status = TILE_STATUS_INTERNAL;
            snprintf(library_message, sizeof library_message,
                     "kernel %s is in the registry but not in the fatbinary (%s)",
                     tile_registry[i].name, tile_driver_error_name(r));
            library_unload_after_failure(d);
            return;
        }
    }
    library_status = TILE_STATUS_SUCCESS;
}

static tile_status device_setup(const tile_driver *d, CUdevice ordinal, tile_device *out) {
    int major = 0, minor = 0, sms = 0;
    CUresult r = d->cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                                         ordinal);
    if (r == CUDA_SUCCESS)
        r = d->cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                                    ordinal);
    if (r == CUDA_SUCCESS)
        r = d->cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, ordinal);
    int smem_limit = 0;
    if (r == CUDA_SUCCESS)
        r = d->cuDeviceGetAttribute(&smem_limit,
                                    CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, ordinal);
    if (r != CUDA_SUCCESS)
        return tile_fail(TILE_STATUS_CUDA_ERROR, "cuDeviceGetAttribute failed with %s",
                         tile_driver_error_name(r));
    out->ordinal = ordinal;
    out->arch = major * 10 + minor;
    out->sm_count = sms;
    out->smem_limit = smem_limit;
    /* for tuned lines kept to one memory system (dispatch.c) */
    out->mem_bandwidth_gbs = tile_driver_peak_bandwidth_gbs(d, ordinal);
    /* Programmatic dependent launch (a launch may start while the grid ahead of it in the
     * stream finishes) is safe only if every kernel that can run here waits for that grid
     * first (tile::grid_dependency_sync): images built for compute_90 and up do, the sm_80
     * SASS and compute_80 PTX do not. So it is allowed only where every kernel set up below
     * loaded such an image (its PTX version, from the driver: the image that really runs,
     * whatever targets the build chose), on drivers that capture it into graphs (CUDA 12.3).
     * FUSEDOPS_PDL=0 turns it off (to time a kernel alone, or to rule it out). */
    const char *pdl = getenv("FUSEDOPS_PDL");
    int driver_version = 0;
    int dependent_launch = d->cuDriverGetVersion(&driver_version) == CUDA_SUCCESS &&
                           driver_version >= 12030 && !(pdl && strcmp(pdl, "0") == 0);
    if (!out->blocks_per_sm) out->blocks_per_sm = calloc((size_t)tile_registry_count, sizeof(int32_t));
    if (!out->blocks_per_sm) return tile_fail(TILE_STATUS_INTERNAL, "out of host memory");
    for (int32_t i = 0; i < tile_registry_count; i++) {
        const tile_variant *v = &tile_registry[i];
        /* Variants outside the arch range, or wanting more shared memory than this GPU has,
         * are never dispatched here (tile_variant_eligible): nothing to set up. */
        if (out->arch < v->arch_min || (v->arch_max && out->arch > v->arch_max) ||
            v->smem_bytes > smem_limit)
            continue;
        /* Load the kernel into the current context now rather than at its first launch, which
         * may happen inside a stream capture (older drivers cannot load there). */
        CUfunction function;
        r = d->cuKernelGetFunction(&function, kernels[i]);
        if (r != CUDA_SUCCESS)
            return tile_fail(TILE_STATUS_CUDA_ERROR, "cuKernelGetFunction(%s) failed with %s",
                             v->name, tile_driver_error_name(r));
        int ptx_version = 0; /* 10 * major + minor; a failed query counts as no wait */
        if (d->cuKernelGetAttribute(&ptx_version, CU_FUNC_ATTRIBUTE_PTX_VERSION, kernels[i],
                                    ordinal) != CUDA_SUCCESS ||
            ptx_version < 90)
            dependent_launch = 0;
        /* Opt in to the variant's dynamic shared memory (before the occupancy query, which
         * depends on it): without it a block gets 48 KiB in all, static shared memory
         * included, so 48 KiB of dynamic memory beside a kernel's own reduction buffers
         * already needs it. */
        if (v->smem_bytes > 0) {
            r = d->cuKernelSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                        v->smem_bytes, kernels[i], ordinal);
            if (r != CUDA_SUCCESS)
                return tile_fail(TILE_STATUS_CUDA_ERROR,
                                 "cuKernelSetAttribute(%s, %d bytes of shared memory) failed "
                                 "with %s",
                                 v->name, v->smem_bytes, tile_driver_error_name(r));
        }
        /* Resident thread blocks per SM: persistent variants launch that many programs a
         * SM, and dispatch weighs tuned winners by the waves it implies. */
        int blocks = 0;
        r = d->cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, function, v->threads,
                                                           (size_t)v->smem_bytes);
        if (r != CUDA_SUCCESS)
            return tile_fail(TILE_STATUS_CUDA_ERROR, "occupancy of %s: %s", v->name,
                             tile_driver_error_name(r));
        if (blocks < 1 && v->persistent) /* (any other launch fails on its own, clearly) */
            return tile_fail(TILE_STATUS_INTERNAL,
                             "%s cannot have one program resident per SM on sm_%d", v->name,
                             out->arch);
        out->blocks_per_sm[i] = blocks;
    }
    out->dependent_launch = dependent_launch;
    return TILE_STATUS_SUCCESS;
}

tile_status tile_current_device(const tile_device **device) {
    const char *why = NULL;
    const tile_driver *d = tile_driver_get(&why);
    if (!d) return tile_fail(TILE_STATUS_NO_DEVICE, "%s", why);
    pthread_once(&library_once, library_load);
    if (library_status != TILE_STATUS_SUCCESS)
        return tile_fail(library_status, "%s", library_message);
    CUdevice ordinal;
    CUresult r = d->cuCtxGetDevice(&ordinal);
    if (r == CUDA_ERROR_INVALID_CONTEXT || r == CUDA_ERROR_CONTEXT_IS_DESTROYED)
        return tile_fail(TILE_STATUS_NO_CONTEXT,
                         "no current CUDA context on this thread: call cudaSetDevice() or "
                         "cuCtxSetCurrent() first");
    if (r != CUDA_SUCCESS)
        return tile_fail(TILE_STATUS_CUDA_ERROR, "cuCtxGetDevice failed with %s",
                         tile_driver_error_name(r));
    if (ordinal < 0 || ordinal >= TILE_MAX_DEVICES)
        return tile_fail(TILE_STATUS_NOT_SUPPORTED, "device %d: at most %d devices are supported",
                         ordinal, TILE_MAX_DEVICES);
    device_slot *slot = &slots[ordinal];
    if (!atomic_load_explicit(&slot->ready, memory_order_acquire)) {
        pthread_mutex_lock(&device_setup_lock);
        tile_status s = TILE_STATUS_SUCCESS;
        if (!atomic_load_explicit(&slot->ready, memory_order_relaxed)) {
            s = device_setup(d, ordinal, &slot->device);
            if (s == TILE_STATUS_SUCCESS)
                atomic_store_explicit(&slot->ready, 1, memory_order_release);
        }
        pthread_mutex_unlock(&device_setup_lock);
        if (s != TILE_STATUS_SUCCESS) return s;
    }
    *device = &slot->device;
    return TILE_STATUS_SUCCESS;
}

int64_t tile_resident_programs(const tile_device *device, int32_t variant) {
    return (int64_t)device->sm_count * device->blocks_per_sm[variant];
}

tile_status tile_launch(const tile_device *device, int32_t variant, int64_t programs,
                        tile_stream stream, void **args) {
    return tile_launch_programs(device, variant, programs, 0, stream, args);
}

int64_t tile_launched_programs(const tile_device *device, int32_t variant, int64_t programs,
                               int all_programs) {
    if (tile_registry[variant].persistent && !all_programs) {
        const int64_t resident = tile_resident_programs(device, variant);
        if (programs > resident) programs = resident;
    }
    return programs;
}

tile_status tile_launch_programs(const tile_device *device, int32_t variant, int64_t programs,
                                 int all_programs, tile_stream stream, void **args) {
    const tile_variant *v = &tile_registry[variant];
    const tile_driver *d = tile_driver_get(NULL);
    programs = tile_launched_programs(device, variant, programs, all_programs);
    int64_t blocks = programs * v->cluster;
    if (programs < 1 || blocks > INT32_MAX)
        return tile_fail(TILE_STATUS_NOT_SUPPORTED,
                         "%s: %lld thread blocks exceed the grid limit of %d", v->name,
                         (long long)blocks, INT32_MAX);
    CUlaunchAttribute attrs[2];
    unsigned n_attrs = 0;
    if (v->cluster > 1) {
        attrs[n_attrs].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
        attrs[n_attrs].value.clusterDim.x = (unsigned)v->cluster;
        attrs[n_attrs].value.clusterDim.y = 1;
        attrs[n_attrs].value.clusterDim.z = 1;
        n_attrs++;
    }
    if (device->dependent_launch) {
        attrs[n_attrs].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
        attrs[n_attrs].value.programmaticStreamSerializationAllowed = 1;
        n_attrs++;
    }
    CUlaunchConfig config = {
        .gridDimX = (unsigned)blocks,
        .gridDimY = 1,
        .gridDimZ = 1,
        .blockDimX = (unsigned)v->threads,
        .blockDimY = 1,
        .blockDimZ = 1,
        .sharedMemBytes = (unsigned)v->smem_bytes,
        .hStream = (CUstream)stream,
        .attrs = n_attrs ? attrs : NULL,
        .numAttrs = n_attrs,
    };
    /* A CUkernel stands in for a CUfunction (device setup already loaded it into the context). */
    CUresult r = d->cuLaunchKernelEx(&config, (CUfunction)kernels[variant], args, NULL);
    if (r != CUDA_SUCCESS)
        return tile_fail(TILE_STATUS_CUDA_ERROR, "launching %s on device %d failed with %s",
                         v->name, device->ordinal, tile_driver_error_name(r));
    return TILE_STATUS_SUCCESS;
}
