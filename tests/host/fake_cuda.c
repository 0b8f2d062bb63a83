/* A stand-in CUDA driver for host tests (fake_cuda.h): a shared library the library loads
 * through FUSEDOPS_LIBCUDA in place of libcuda.so.1. It defines every entry point the loader
 * resolves (TILE_DRIVER_FUNCTIONS, src/cuda_driver.h) and plays one GPU with a current context:
 * enough for a call to pass device setup, dispatch and launch. cuLaunchKernelEx runs nothing;
 * it records what it was given. cuTensorMapEncodeTiled (the warp-specialized attention and
 * grouped matmul variants encode maps on the host before their launch) checks its arguments
 * against the driver's documented limits, zeroes the map and counts it (fake_cuda.h). It
 * counts library loads and unloads, and primary context references, which a program must
 * give back before it exits (fake_cuda.h). Memory,
 * streams, graphs and events answer CUDA_ERROR_NOT_SUPPORTED: no call of the tests reaches
 * them (nothing is read or written on the "device"), and a test that needs them should fail
 * loudly rather than pass on a pretence.
 *
 * cuda.h maps some names to versioned symbols (cuMemAlloc -> cuMemAlloc_v2, cuGraphInstantiate
 * -> cuGraphInstantiateWithFlags); defining the plain names under it gives the symbols the
 * loader looks up, with the signatures checked against cuda.h's declarations. Single-threaded,
 * as the tests that use it. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention_args.h"
#include "cuda_driver.h"
#include "fake_cuda.h"

/* The GPU, read from the environment by cuInit (fake_cuda.h). */
static int cc = 90, driver_version = 13000, ptx_version = 90, ptx_fails, unload_fails, name_fails;
static const char *missing_kernel; /* FAKE_CUDA_MISSING_KERNEL */

/* A kernel handle is the address of its slot here; the slot keeps the name the library looked
 * it up by (a string in the library's registry, which outlives this process's calls). */
#define MAX_KERNELS 4096
static const char *kernel_names[MAX_KERNELS];
static int kernel_count;

static fake_cuda_launch last;
static fake_cuda_library library_record;
static int primary_contexts_retained; /* references not yet released */

static char library_image, context; /* their addresses are the CUlibrary and CUcontext */

static int env_int(const char *name, int fallback) {
    const char *s = getenv(name);
    char *end;
    long v = s ? strtol(s, &end, 10) : 0;
    return s && *s && !*end ? (int)v : fallback;
}

/* Whether the knob `name` is set to "fail". */
static int env_fails(const char *name) {
    const char *s = getenv(name);
    return s && !strcmp(s, "fail");
}

/* Slot index of a kernel (or function) handle, or -1 when it is not one of ours. */
static int kernel_index(const void *handle) {
    const uintptr_t a = (uintptr_t)handle, base = (uintptr_t)kernel_names;
    if (a < base || a >= base + (uintptr_t)kernel_count * sizeof kernel_names[0]) return -1;
    return (int)((a - base) / sizeof kernel_names[0]);
}

/* Every entry point the library resolves, taken by address: with -Wl,--no-undefined (as
 * tests/CMakeLists.txt links this) one this file does not define fails the build, not a test. */
#define FAKE_CUDA_ENTRY(name) name,
__attribute__((used)) static const tile_driver entry_points = {
    TILE_DRIVER_FUNCTIONS(FAKE_CUDA_ENTRY)};

fake_cuda_last_launch_fn fake_cuda_last_launch;
void fake_cuda_last_launch(fake_cuda_launch *out) { *out = last; }

fake_cuda_library_fn fake_cuda_library_calls;
void fake_cuda_library_calls(fake_cuda_library *out) { *out = library_record; }

/* A program that exits still holding a primary context it retained leaked it (fake_cuda.h):
 * said on stderr, where a test of that program looks. */
__attribute__((destructor)) static void report_retained_contexts(void) {
    if (primary_contexts_retained > 0)
        fprintf(stderr, FAKE_CUDA_RETAINED_AT_EXIT ": %d reference(s)\n",
                primary_contexts_retained);
}

/* ---------------------------------------------------------------- what a call goes through */

CUresult CUDAAPI cuInit(unsigned int flags) {
    if (flags) return CUDA_ERROR_INVALID_VALUE;
    cc = env_int("FAKE_CUDA_CC", 90);
    driver_version = env_int("FAKE_CUDA_DRIVER", 13000);
    ptx_fails = env_fails("FAKE_CUDA_PTX");
    ptx_version = env_int("FAKE_CUDA_PTX", cc);
    missing_kernel = getenv("FAKE_CUDA_MISSING_KERNEL");
    unload_fails = env_fails("FAKE_CUDA_UNLOAD");
    name_fails = env_fails("FAKE_CUDA_NAME");
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGetErrorName(CUresult error, const char **name) {
    switch (error) {
    case CUDA_SUCCESS: *name = "CUDA_SUCCESS"; return CUDA_SUCCESS;
    case CUDA_ERROR_INVALID_VALUE: *name = "CUDA_ERROR_INVALID_VALUE"; return CUDA_SUCCESS;
    case CUDA_ERROR_OUT_OF_MEMORY: *name = "CUDA_ERROR_OUT_OF_MEMORY"; return CUDA_SUCCESS;
    case CUDA_ERROR_INVALID_DEVICE: *name = "CUDA_ERROR_INVALID_DEVICE"; return CUDA_SUCCESS;
    case CUDA_ERROR_INVALID_HANDLE: *name = "CUDA_ERROR_INVALID_HANDLE"; return CUDA_SUCCESS;
    case CUDA_ERROR_NOT_SUPPORTED: *name = "CUDA_ERROR_NOT_SUPPORTED"; return CUDA_SUCCESS;
    case CUDA_ERROR_NOT_FOUND: *name = "CUDA_ERROR_NOT_FOUND"; return CUDA_SUCCESS;
    default: *name = NULL; return CUDA_ERROR_INVALID_VALUE; /* as the driver's, for others */
    }
}

CUresult CUDAAPI cuDriverGetVersion(int *version) {
    *version = driver_version;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGet(CUdevice *device, int ordinal) {
    if (ordinal != 0) return CUDA_ERROR_INVALID_DEVICE;
    *device = 0;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetCount(int *count) {
    *count = 1;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetName(char *name, int len, CUdevice dev) {
    if (dev != 0) return CUDA_ERROR_INVALID_DEVICE;
    if (name_fails) return CUDA_ERROR_NOT_SUPPORTED; /* FAKE_CUDA_NAME=fail */
    if (len > 0) snprintf(name, (size_t)len, "fake_cuda sm_%d", cc);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetAttribute(int *value, CUdevice_attribute attrib, CUdevice dev) {
    if (dev != 0) return CUDA_ERROR_INVALID_DEVICE;
    switch (attrib) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *value = cc / 10; return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *value = cc % 10; return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *value = FAKE_CUDA_SM_COUNT; return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
        *value = FAKE_CUDA_SMEM_OPTIN;
        return CUDA_SUCCESS;
    default: return CUDA_ERROR_INVALID_VALUE; /* one the library does not ask today */
    }
}

/* A context is always current, on device 0. */
CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice dev) {
    if (dev != 0) return CUDA_ERROR_INVALID_DEVICE;
    *ctx = (CUcontext)(void *)&context;
    primary_contexts_retained++;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice dev) {
    if (dev != 0) return CUDA_ERROR_INVALID_DEVICE;
    if (primary_contexts_retained == 0) return CUDA_ERROR_INVALID_CONTEXT; /* none retained */
    primary_contexts_retained--;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxGetDevice(CUdevice *device) {
    *device = 0;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxSetCurrent(CUcontext ctx) {
    return !ctx || ctx == (CUcontext)(void *)&context ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
CUresult CUDAAPI cuCtxSynchronize(void) { return CUDA_SUCCESS; } /* nothing ever runs */

/* Any image loads; every name is a kernel in it but FAKE_CUDA_MISSING_KERNEL. */
CUresult CUDAAPI cuLibraryLoadData(CUlibrary *library, const void *code, CUjit_option *jit_options,
                                   void **jit_option_values, unsigned int num_jit_options,
                                   CUlibraryOption *library_options,
                                   void **library_option_values, unsigned int num_library_options) {
    (void)jit_options, (void)jit_option_values, (void)library_options;
    (void)library_option_values, (void)num_jit_options, (void)num_library_options;
    if (!code) return CUDA_ERROR_INVALID_VALUE;
    *library = (CUlibrary)(void *)&library_image;
    library_record.loads++;
    return CUDA_SUCCESS;
}

static int library_is_loaded(CUlibrary library) {
    return library == (CUlibrary)(void *)&library_image &&
           library_record.loads > library_record.unloads;
}

CUresult CUDAAPI cuLibraryGetKernel(CUkernel *kernel, CUlibrary library, const char *name) {
    if (!library_is_loaded(library) || !name) return CUDA_ERROR_INVALID_HANDLE;
    if (missing_kernel && !strcmp(name, missing_kernel)) return CUDA_ERROR_NOT_FOUND;
    if (kernel_count == MAX_KERNELS) return CUDA_ERROR_OUT_OF_MEMORY; /* raise MAX_KERNELS */
    kernel_names[kernel_count] = name;
    *kernel = (CUkernel)(void *)&kernel_names[kernel_count++];
    return CUDA_SUCCESS;
}

/* FAKE_CUDA_UNLOAD=fail: the unload of the loaded library fails, and it stays loaded. */
CUresult CUDAAPI cuLibraryUnload(CUlibrary library) {
    if (!library_is_loaded(library)) {
        library_record.stray_unloads++;
        return CUDA_ERROR_INVALID_HANDLE;
    }
    if (unload_fails) {
        library_record.failed_unloads++;
        return CUDA_ERROR_INVALID_VALUE;
    }
    library_record.unloads++;
    return CUDA_SUCCESS;
}

/* A CUkernel and its CUfunction share a handle, as the library assumes at launch. */
CUresult CUDAAPI cuKernelGetFunction(CUfunction *function, CUkernel kernel) {
    if (kernel_index(kernel) < 0) return CUDA_ERROR_INVALID_HANDLE;
    *function = (CUfunction)(void *)kernel;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuKernelSetAttribute(CUfunction_attribute attrib, int value, CUkernel kernel,
                                      CUdevice dev) {
    if (kernel_index(kernel) < 0) return CUDA_ERROR_INVALID_HANDLE;
    if (dev != 0) return CUDA_ERROR_INVALID_DEVICE;
    if (attrib == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES &&
        (value < 0 || value > FAKE_CUDA_SMEM_OPTIN))
        return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

/* Only the PTX version (of the image the kernel loaded) is known; FAKE_CUDA_PTX=fail makes
 * even that query fail, as a driver that does not answer it would. */
CUresult CUDAAPI cuKernelGetAttribute(int *value, CUfunction_attribute attrib, CUkernel kernel,
                                      CUdevice dev) {
    if (kernel_index(kernel) < 0) return CUDA_ERROR_INVALID_HANDLE;
    if (dev != 0) return CUDA_ERROR_INVALID_DEVICE;
    if (attrib != CU_FUNC_ATTRIBUTE_PTX_VERSION || ptx_fails) return CUDA_ERROR_INVALID_VALUE;
    *value = ptx_version;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuOccupancyMaxActiveBlocksPerMultiprocessor(int *blocks, CUfunction function,
                                                             int block_size, size_t smem) {
    if (kernel_index(function) < 0) return CUDA_ERROR_INVALID_HANDLE;
    *blocks = smem > FAKE_CUDA_SMEM_OPTIN ? 0 : fake_cuda_blocks_per_sm(block_size);
    return CUDA_SUCCESS;
}

/* Records the launch; runs nothing. */
CUresult CUDAAPI cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **params,
                                  void **extra) {
    const int k = kernel_index(f);
    if (k < 0) return CUDA_ERROR_INVALID_HANDLE;
    if (!config || !params || extra) return CUDA_ERROR_INVALID_VALUE;
    /* (the attention kernels take their argument block as their one parameter) */
    const tile_attention_kernel_args *attention =
        strncmp(kernel_names[k], "attention_", 10) ? NULL : params[0];
    fake_cuda_launch l = {
        .count = last.count + 1,
        .kernel = kernel_names[k],
        .grid = {config->gridDimX, config->gridDimY, config->gridDimZ},
        .block = {config->blockDimX, config->blockDimY, config->blockDimZ},
        .shared_bytes = config->sharedMemBytes,
        .stream = config->hStream,
        .num_attrs = config->numAttrs,
        .pdl = -1,
        .blocks_fastest = attention ? attention->blocks_fastest : -1,
        .walk_programs = attention ? attention->programs_div.divisor : 0,
        .tensor_maps = last.tensor_maps,
    };
    memcpy(l.maps, last.maps, sizeof l.maps); /* (a running record, as tensor_maps) */
    for (unsigned i = 0; i < config->numAttrs; i++) {
        const CUlaunchAttribute *a = &config->attrs[i];
        if (a->id == CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION)
            l.pdl = a->value.programmaticStreamSerializationAllowed;
        if (a->id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) {
            l.cluster[0] = a->value.clusterDim.x;
            l.cluster[1] = a->value.clusterDim.y;
            l.cluster[2] = a->value.clusterDim.z;
        }
    }
    last = l;
    return CUDA_SUCCESS;
}

/* A tensor map within the documented limits (fake_cuda.h) is zeroed and counted; the fake
 * never reads it. */
CUresult CUDAAPI cuTensorMapEncodeTiled(CUtensorMap *map, CUtensorMapDataType type, cuuint32_t rank,
                                        void *address, const cuuint64_t *dims,
                                        const cuuint64_t *strides, const cuuint32_t *box,
                                        const cuuint32_t *element_strides,
                                        CUtensorMapInterleave interleave,
                                        CUtensorMapSwizzle swizzle,
                                        CUtensorMapL2promotion l2_promotion,
                                        CUtensorMapFloatOOBfill oob_fill) {
    (void)l2_promotion, (void)oob_fill;
    unsigned elem;
    switch (type) {
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT16:
    case CU_TENSOR_MAP_DATA_TYPE_BFLOAT16: elem = 2; break;
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT32: elem = 4; break;
    default: return CUDA_ERROR_NOT_SUPPORTED; /* one the library does not encode today */
    }
    if (!map || !dims || !box || !element_strides || (rank > 1 && !strides) || rank < 1 ||
        rank > 5 || !address || (uintptr_t)address % 16 ||
        interleave != CU_TENSOR_MAP_INTERLEAVE_NONE)
        return CUDA_ERROR_INVALID_VALUE;
    for (cuuint32_t i = 0; i < rank; i++) {
        if (dims[i] < 1 || dims[i] > ((cuuint64_t)1 << 32) || box[i] < 1 || box[i] > 256 ||
            element_strides[i] < 1 || element_strides[i] > 8)
            return CUDA_ERROR_INVALID_VALUE;
        if (i && (strides[i - 1] % 16 || strides[i - 1] >= ((cuuint64_t)1 << 40)))
            return CUDA_ERROR_INVALID_VALUE;
    }
    if (box[0] * elem % 16 || (swizzle == CU_TENSOR_MAP_SWIZZLE_128B && box[0] * elem > 128))
        return CUDA_ERROR_INVALID_VALUE;
    memset(map, 0, sizeof *map);
    const int slot = last.tensor_maps % FAKE_CUDA_MAPS;
    memset(&last.maps[slot], 0, sizeof last.maps[slot]);
    last.maps[slot].address = address;
    for (cuuint32_t i = 0; i < rank; i++) {
        last.maps[slot].dims[i] = dims[i];
        if (i) last.maps[slot].strides[i - 1] = strides[i - 1];
    }
    last.tensor_maps++;
    return CUDA_SUCCESS;
}

/* ---------------------------------------------------------------- not played (see the top) */

#pragma GCC diagnostic ignored "-Wunused-parameter"

CUresult CUDAAPI cuMemAlloc(CUdeviceptr *dptr, size_t bytes) { return CUDA_ERROR_NOT_SUPPORTED; }
CUresult CUDAAPI cuMemFree(CUdeviceptr dptr) { return CUDA_ERROR_NOT_SUPPORTED; }
CUresult CUDAAPI cuMemcpyHtoD(CUdeviceptr dst, const void *src, size_t bytes) {
    return CUDA_ERROR_NOT_SUPPORTED;
}
CUresult CUDAAPI cuMemcpyDtoH(void *dst, CUdeviceptr src, size_t bytes) {
    return CUDA_ERROR_NOT_SUPPORTED;
}
CUresult CUDAAPI cuMemcpyDtoD(CUdeviceptr dst, CUdeviceptr src, size_t bytes) {
    return CUDA_ERROR_NOT_SUPPORTED;
}
CUresult CUDAAPI cuMemsetD8(CUdeviceptr dst, unsigned char value, size_t n) {
    return CUDA_ERROR_NOT_SUPPORTED;
}
CUresult CUDAAPI cuMemsetD8Async(CUdeviceptr dst, unsigned char value, size_t n, CUstream stream) {
    return CUDA_ERROR_NOT_SUPPORTED;
}
CUresult CUDAAPI cuStreamCreate(CUstream *stream, unsigned int flags) {
    return CUDA_ERROR_NOT_SUPPORTED;
}
CUresult CUDAAPI cuStreamDestroy(CUstream stream) { return CUDA_ERROR_NOT_SUPPORTED; }
CUresult CUDAAPI cuStreamSynchronize(CUstream stream) { return CUDA_ERROR_NOT_SUPPORTED; }
CUresult CUDAAPI cuStreamBeginCapture(CUstream stream, CUstreamCaptureMode mode) {
    return CUDA_ERROR_NOT_SUPPORTED;
}
CUresult CUDAAPI cuStreamEndCapture(CUstream stream, CUgraph *graph) {
    return CUDA_ERROR_NOT_SUPPORTED;
}
CUresult CUDAAPI cuGraphInstantiate(CUgraphExec *exec, CUgraph graph, unsigned long long flags) {
    return CUDA_ERROR_NOT_SUPPORTED;
}
CUresult CUDAAPI cuGraphLaunch(CUgraphExec exec, CUstream stream) {
    return CUDA_ERROR_NOT_SUPPORTED;
}
CUresult CUDAAPI cuGraphExecDestroy(CUgraphExec exec) { return CUDA_ERROR_NOT_SUPPORTED; }
CUresult CUDAAPI cuGraphDestroy(CUgraph graph) { return CUDA_ERROR_NOT_SUPPORTED; }
CUresult CUDAAPI cuEventCreate(CUevent *event, unsigned int flags) {
    return CUDA_ERROR_NOT_SUPPORTED;
}
CUresult CUDAAPI cuEventRecord(CUevent event, CUstream stream) { return CUDA_ERROR_NOT_SUPPORTED; }
CUresult CUDAAPI cuEventSynchronize(CUevent event) { return CUDA_ERROR_NOT_SUPPORTED; }
CUresult CUDAAPI cuEventElapsedTime(float *ms, CUevent start, CUevent end) {
    return CUDA_ERROR_NOT_SUPPORTED;
}
CUresult CUDAAPI cuEventDestroy(CUevent event) { return CUDA_ERROR_NOT_SUPPORTED; }
