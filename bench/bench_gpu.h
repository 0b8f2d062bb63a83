/* bench_gpu: the GPU and host helpers the C++ benches need, behind a C interface. It exists
 * because src/cuda_driver.h, and so support/support.h, compiles only as C (in C++ each member
 * `__typeof__(&cuX) cuX;` of the driver table "changes meaning" of cuX). Device pointers are
 * CUdeviceptr values as uint64_t; work goes to the legacy default stream; a failing driver call
 * exits with file:line and the driver's error name (SUPPORT_CHECK). */
#ifndef FUSEDOPS_BENCH_GPU_H
#define FUSEDOPS_BENCH_GPU_H

#include <stddef.h>
#include <stdint.h>

#include "fusedops.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct bench_gpu_info {
    char name[128];
    int32_t arch;              /* 10*major+minor */
    int32_t sm_count;
    int32_t driver_version;    /* cuDriverGetVersion: 1000*major+10*minor */
    int64_t l2_bytes;
    double dram_nominal_gbps;  /* from the memory clock and bus width; 0 if not reported */
} bench_gpu_info;

/* Opens GPU 0 (primary context, made current) and the timing events. Returns 0, or -1 with
 * the reason in *why. */
int bench_gpu_open(bench_gpu_info *info, const char **why);
void bench_gpu_close(void);

uint64_t bench_alloc(size_t bytes);
void bench_free(uint64_t ptr);
void bench_upload(uint64_t dst, const void *src, size_t bytes);
void bench_download(void *dst, uint64_t src, size_t bytes);
void bench_copy(uint64_t dst, uint64_t src, size_t bytes);
void bench_memset(uint64_t dst, unsigned char value, size_t bytes);
void bench_sync(void);

/* An event pair on the legacy default stream: start, then stop waits for it and returns ms. */
void bench_timer_start(void);
float bench_timer_stop(void);

/* Device-to-device copy bandwidth in GB/s (1e9 bytes), bytes read plus bytes written: median
 * of 20 cuMemcpyDtoD of 1 GiB (halved until both buffers fit). *bytes gets the size used. */
double bench_copy_gbps(size_t *bytes);

size_t bench_dtype_size(tile_dtype dtype);
/* n uniform values in [lo, hi) from seed (support_fill_uniform), stored as dtype at dst. */
void bench_random(tile_dtype dtype, void *dst, size_t n, uint64_t seed, float lo, float hi);
void bench_unpack(tile_dtype dtype, float *dst, const void *src, size_t n);
/* Checks one row y (dtype storage) of softmax or log-softmax of x (cols floats, as the GPU saw
 * them) against the float64 reference, within support_tolerance. Prints up to 5 mismatches
 * under `label`; returns their count and the largest error in *max_err. */
int64_t bench_check_row(tile_dtype dtype, int log_softmax, const float *x, const void *y,
                        int64_t cols, const char *label, double *max_err);

#ifdef __cplusplus
}
#endif

#endif
