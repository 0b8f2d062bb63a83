/* bench_gpu: see bench_gpu.h. */
#include "bench_gpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support.h"

static support_gpu gpu;
static CUevent ev_start, ev_stop;

#define CHECK(call) SUPPORT_CHECK(&gpu, (call))

int bench_gpu_open(bench_gpu_info *info, const char **why) {
    memset(info, 0, sizeof *info);
    if (support_gpu_open(&gpu, why) != 0) return -1;
    const tile_driver *d = gpu.drv;
    snprintf(info->name, sizeof info->name, "%s", gpu.name);
    info->arch = gpu.arch;
    info->sm_count = gpu.sm_count;
    int driver = 0, l2 = 0, mem_khz = 0, bus_bits = 0;
    CHECK(d->cuDriverGetVersion(&driver));
    CHECK(d->cuDeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, gpu.device));
    info->driver_version = driver;
    info->l2_bytes = l2;
    /* Two transfers per memory clock; newer drivers may stop reporting these. */
    if (d->cuDeviceGetAttribute(&mem_khz, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, gpu.device) ==
            CUDA_SUCCESS &&
        d->cuDeviceGetAttribute(&bus_bits, CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH,
                                gpu.device) == CUDA_SUCCESS)
        info->dram_nominal_gbps = 2.0 * mem_khz * 1e3 * (bus_bits / 8) / 1e9;
    CHECK(d->cuEventCreate(&ev_start, CU_EVENT_DEFAULT));
    CHECK(d->cuEventCreate(&ev_stop, CU_EVENT_DEFAULT));
    return 0;
}

void bench_gpu_close(void) {
    if (!gpu.drv) return;
    gpu.drv->cuEventDestroy(ev_start);
    gpu.drv->cuEventDestroy(ev_stop);
    support_gpu_close(&gpu);
}

uint64_t bench_alloc(size_t bytes) {
    CUdeviceptr p;
    CHECK(gpu.drv->cuMemAlloc(&p, bytes));
    return (uint64_t)p;
}

void bench_free(uint64_t ptr) { CHECK(gpu.drv->cuMemFree((CUdeviceptr)ptr)); }

void bench_upload(uint64_t dst, const void *src, size_t bytes) {
    CHECK(gpu.drv->cuMemcpyHtoD((CUdeviceptr)dst, src, bytes));
}

void bench_download(void *dst, uint64_t src, size_t bytes) {
    CHECK(gpu.drv->cuMemcpyDtoH(dst, (CUdeviceptr)src, bytes));
}

void bench_copy(uint64_t dst, uint64_t src, size_t bytes) {
    CHECK(gpu.drv->cuMemcpyDtoD((CUdeviceptr)dst, (CUdeviceptr)src, bytes));
}

void bench_memset(uint64_t dst, unsigned char value, size_t bytes) {
    CHECK(gpu.drv->cuMemsetD8((CUdeviceptr)dst, value, bytes));
}

void bench_sync(void) { CHECK(gpu.drv->cuCtxSynchronize()); }

void bench_timer_start(void) { CHECK(gpu.drv->cuEventRecord(ev_start, NULL)); }

float bench_timer_stop(void) {
    float ms = 0;
    CHECK(gpu.drv->cuEventRecord(ev_stop, NULL));
    CHECK(gpu.drv->cuEventSynchronize(ev_stop));
    CHECK(gpu.drv->cuEventElapsedTime(&ms, ev_start, ev_stop));
    return ms;
}

static int cmp_float(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

double bench_copy_gbps(size_t *bytes_out) {
    const tile_driver *d = gpu.drv;
    CUdeviceptr src = 0, dst = 0;
    size_t bytes = (size_t)1 << 30;
    for (;; bytes /= 2) {
        if (d->cuMemAlloc(&src, bytes) == CUDA_SUCCESS) {
            if (d->cuMemAlloc(&dst, bytes) == CUDA_SUCCESS) break;
            CHECK(d->cuMemFree(src));
        }
        if (bytes <= ((size_t)64 << 20)) {
            fprintf(stderr, "bench: cannot allocate 2 x %zu bytes to measure the copy ceiling\n",
                    bytes);
            exit(1);
        }
    }
    CHECK(d->cuMemsetD8(src, 0x3c, bytes));
    for (int i = 0; i < 3; i++) CHECK(d->cuMemcpyDtoD(dst, src, bytes));
    CHECK(d->cuCtxSynchronize());
    enum { N = 20 };
    float ms[N];
    for (int i = 0; i < N; i++) {
        bench_timer_start();
        CHECK(d->cuMemcpyDtoD(dst, src, bytes));
        ms[i] = bench_timer_stop();
    }
    qsort(ms, N, sizeof ms[0], cmp_float);
    const double median_ms = 0.5 * (ms[N / 2 - 1] + ms[N / 2]);
    CHECK(d->cuMemFree(src));
    CHECK(d->cuMemFree(dst));
    *bytes_out = bytes;
    return 2.0 * (double)bytes / (median_ms * 1e-3) / 1e9; /* reads bytes, writes bytes */
}

size_t bench_dtype_size(tile_dtype dtype) { return support_dtype_size(dtype); }

void bench_random(tile_dtype dtype, void *dst, size_t n, uint64_t seed, float lo, float hi) {
    /* In chunks, so a 512 MiB input needs no 512 MiB float staging copy. */
    enum { CHUNK = 1 << 20 };
    float *tmp = malloc(CHUNK * sizeof *tmp);
    if (!tmp) {
        fprintf(stderr, "bench: out of host memory\n");
        exit(1);
    }
    const size_t elem = support_dtype_size(dtype);
    for (size_t at = 0; at < n; at += CHUNK) {
        const size_t m = n - at < CHUNK ? n - at : CHUNK;
        /* support_fill_uniform hashes seed + golden * (index + 1): this offset makes the values
         * those of one call over all n. */
        support_fill_uniform(tmp, m, seed + 0x9e3779b97f4a7c15ull * at, lo, hi);
        support_pack(dtype, (unsigned char *)dst + at * elem, tmp, m);
    }
    free(tmp);
}

void bench_unpack(tile_dtype dtype, float *dst, const void *src, size_t n) {
    support_unpack(dtype, dst, src, n);
}

int64_t bench_check_row(tile_dtype dtype, int log_softmax, const float *x, const void *y,
                        int64_t cols, const char *label, double *max_err) {
    float *got = malloc((size_t)cols * sizeof *got);
    double *want = malloc((size_t)cols * sizeof *want);
    if (!got || !want) {
        fprintf(stderr, "bench: out of host memory\n");
        exit(1);
    }
    support_unpack(dtype, got, y, (size_t)cols);
    support_softmax_reference(want, x, 1, cols, cols, log_softmax);
    double atol, rtol;
    support_tolerance(dtype, log_softmax, &atol, &rtol);
    const int64_t bad = support_compare(label, got, cols, want, 1, cols, atol, rtol, max_err);
    free(got);
    free(want);
    return bad;
}
