/* The CUDA driver API, loaded with dlopen so that the library (and the tools and tests built
 * on this file) load on machines without a driver and answer TILE_STATUS_NO_DEVICE there. */
#ifndef FUSEDOPS_CUDA_DRIVER_H
#define FUSEDOPS_CUDA_DRIVER_H

#include <cuda.h>

#include "tuning_parse.h"

/* Every driver entry point used anywhere in the project. cuda.h maps some names to versioned
 * symbols (cuMemAlloc -> cuMemAlloc_v2); the table holds whatever the macro names. */
#define TILE_DRIVER_FUNCTIONS(X) \
    X(cuInit)                    \
    X(cuGetErrorName)            \
    X(cuDriverGetVersion)        \
    X(cuDeviceGet)               \
    X(cuDeviceGetCount)          \
    X(cuDeviceGetName)           \
    X(cuDeviceGetAttribute)      \
    X(cuDevicePrimaryCtxRetain)  \
    X(cuDevicePrimaryCtxRelease) \
    X(cuCtxGetDevice)            \
    X(cuCtxSetCurrent)           \
    X(cuCtxSynchronize)          \
    X(cuLibraryLoadData)         \
    X(cuLibraryGetKernel)        \
    X(cuLibraryUnload)           \
    X(cuKernelSetAttribute)      \
    X(cuKernelGetAttribute)      \
    X(cuKernelGetFunction)       \
    X(cuOccupancyMaxActiveBlocksPerMultiprocessor) \
    X(cuLaunchKernelEx)          \
    X(cuMemAlloc)                \
    X(cuMemFree)                 \
    X(cuMemcpyHtoD)              \
    X(cuMemcpyDtoH)              \
    X(cuMemcpyDtoD)              \
    X(cuMemsetD8)                \
    X(cuMemsetD8Async)           \
    X(cuStreamCreate)            \
    X(cuStreamDestroy)           \
    X(cuStreamSynchronize)       \
    X(cuStreamBeginCapture)      \
    X(cuStreamEndCapture)        \
    X(cuGraphInstantiate)        \
    X(cuGraphLaunch)             \
    X(cuGraphExecDestroy)        \
    X(cuGraphDestroy)            \
    X(cuEventCreate)             \
    X(cuEventRecord)             \
    X(cuEventSynchronize)        \
    X(cuEventElapsedTime)        \
    X(cuEventDestroy)            \
    X(cuTensorMapEncodeTiled)

/* In C++ a member may not reuse the name it is typed from; ::name names the function. */
#ifdef __cplusplus
#define TILE_DRIVER_MEMBER(name) decltype(&::name) name;
#else
#define TILE_DRIVER_MEMBER(name) __typeof__(&name) name;
#endif
typedef struct tile_driver {
    TILE_DRIVER_FUNCTIONS(TILE_DRIVER_MEMBER)
#undef TILE_DRIVER_MEMBER
} tile_driver;

/* The loaded driver with cuInit done, or NULL with the reason in *why (a static string).
 * Loaded once per process; thread-safe. FUSEDOPS_LIBCUDA names another library to load
 * (tests point it at a missing file to play a machine without a driver). */
const tile_driver *tile_driver_get(const char **why);

/* "CUDA_ERROR_..." for a driver result (needs the driver loaded; else "an unknown CUDA error"). */
const char *tile_driver_error_name(CUresult result);

/* The device's peak memory bandwidth in GB/s (tuning_peak_bandwidth_gbs of its memory clock and
 * bus width, which dispatch matches tagged table lines against), or 0 where the driver reports
 * either not: then it is unknown, which only passes over such lines. */
static inline int32_t tile_driver_peak_bandwidth_gbs(const tile_driver *d, CUdevice device) {
    int mem_clock_khz = 0, bus_bits = 0;
    if (d->cuDeviceGetAttribute(&mem_clock_khz, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, device) !=
            CUDA_SUCCESS ||
        d->cuDeviceGetAttribute(&bus_bits, CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, device) !=
            CUDA_SUCCESS)
        return 0;
    return tuning_peak_bandwidth_gbs(mem_clock_khz, bus_bits);
}

#endif
