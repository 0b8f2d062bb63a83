/* bench_gpu: see bench_gpu.h. */
#include "bench_gpu.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support.h"

static support_gpu gpu;
static CUevent ev_start, ev_stop;

#define CHECK(call) SUPPORT_CHECK(&gpu, (call))

static void *bench_malloc(size_t bytes) {
    void *p = malloc(bytes);
    if (!p) {
        fprintf(stderr, "bench: out of host memory\n");
        exit(1);
    }
    return p;
}

int bench_gpu_open(bench_gpu_info *info, const char **why) {
    memset(info, 0, sizeof *info);
    if (support_gpu_open(&gpu, why) != 0) return -1;
    const tile_driver *d = gpu.drv;
    snprintf(info->name, sizeof info->name, "%s", gpu.name);
    info->arch = gpu.arch;
    info->sm_count = gpu.sm_count;
    int driver = 0, l2 = 0, mem_khz = 0;
    CHECK(d->cuDriverGetVersion(&driver));
    CHECK(d->cuDeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, gpu.device));
    info->driver_version = driver;
    info->l2_bytes = l2;
    /* the library's figure (0 where the driver does not report the clock or the bus) */
    info->dram_nominal_gbps = gpu.mem_bandwidth_gbs;
    if (d->cuDeviceGetAttribute(&mem_khz, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, gpu.device) ==
        CUDA_SUCCESS)
        info->mem_clock_mhz = mem_khz / 1000;
    int sm_khz = 0;
    if (d->cuDeviceGetAttribute(&sm_khz, CU_DEVICE_ATTRIBUTE_CLOCK_RATE, gpu.device) == CUDA_SUCCESS)
        info->sm_clock_mhz = sm_khz / 1000;
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
    /* in chunks: a 512 MiB input needs no 512 MiB float staging copy */
    support_random_stored(dtype, dst, n, seed, lo, hi);
}

void bench_unpack(tile_dtype dtype, float *dst, const void *src, size_t n) {
    support_unpack(dtype, dst, src, n);
}

int64_t bench_check_row(tile_dtype dtype, int log_softmax, const float *x, const void *y,
                        int64_t cols, const char *label, double *max_err) {
    float *got = bench_malloc((size_t)cols * sizeof *got);
    double *want = bench_malloc((size_t)cols * sizeof *want);
    support_unpack(dtype, got, y, (size_t)cols);
    support_softmax_reference(want, x, 1, cols, cols, log_softmax);
    double atol, rtol;
    support_tolerance(dtype, log_softmax, &atol, &rtol);
    const int64_t bad = support_compare(label, got, cols, want, 1, cols, atol, rtol, max_err);
    free(got);
    free(want);
    return bad;
}

int64_t bench_check_norm_row(const bench_norm_check *c, const char *label, double *max_err) {
    const size_t n = (size_t)c->cols;
    float *x = bench_malloc(n * sizeof *x), *got = bench_malloc(n * sizeof *got);
    float *s_want = bench_malloc(n * sizeof *s_want);
    double *y_want = bench_malloc(n * sizeof *y_want);
    /* support_add_norm_reference numbers dropout's rows from its first row, so it cannot start
     * at row c->row: this row's bias and dropout are applied here, with the reference's own fp32
     * roundings in its order (t = x; t += bias; t = kept ? t * scale : 0), and the result goes
     * in as x with no bias and p = 0, where the reference only adds residual and rounds. */
    const float scale = support_dropout_scale(c->p);
    for (size_t k = 0; k < n; k++) {
        float t = c->x[k];
        if (c->bias) t = t + c->bias[k];
        if (c->p > 0.0f) {
            if (support_dropout_keep(c->p, c->seed, c->offset, c->row, (int64_t)k)) t = t * scale;
            else t = 0.0f;
        }
        x[k] = t;
    }
    const support_add_norm_ref_args ref = {
        .dtype = c->dtype, .norm = c->norm, .rows = 1, .cols = c->cols, .x = x, .ld_x = c->cols,
        .residual = c->residual, .ld_residual = c->cols, .weight = c->weight,
        .norm_bias = c->norm_bias, .eps = c->eps, .p = 0.0f, .s = s_want,
        .y = c->norm == TILE_NORM_NONE ? NULL : y_want};
    support_add_norm_reference(&ref);

    int64_t bad = 0;
    double worst = 0;
    if (c->s) { /* the residual stream: bit for bit */
        support_unpack(c->dtype, got, c->s, n);
        bad += support_compare_exact(label, got, c->cols, s_want, c->cols, 1, c->cols);
        for (size_t k = 0; k < n; k++) {
            const double e = fabs((double)got[k] - (double)s_want[k]);
            if (!isnan(e) && e > worst) worst = e;
        }
    }
    if (c->y && c->norm != TILE_NORM_NONE) {
        double atol, rtol, err = 0;
        support_norm_tolerance(c->dtype, 0, &atol, &rtol);
        support_unpack(c->dtype, got, c->y, n);
        bad += support_compare(label, got, c->cols, y_want, 1, c->cols, atol, rtol, &err);
        if (err > worst) worst = err;
    }
    if (max_err) *max_err = worst;
    free(x);
    free(got);
    free(s_want);
    free(y_want);
    return bad;
}

int64_t bench_check_attention_row(tile_dtype dtype, int64_t head_dim, int64_t keys, double scale,
                                  const void *q, const void *k, int64_t ld_k, const void *v,
                                  int64_t ld_v, const void *o, const char *label,
                                  double *max_err) {
    const size_t d = (size_t)head_dim, elem = support_dtype_size(dtype);
    float *qf = bench_malloc(d * sizeof *qf), *row = bench_malloc(d * sizeof *row);
    float *got = bench_malloc(d * sizeof *got);
    double *want = bench_malloc(d * sizeof *want);
    double *score = bench_malloc((keys > 0 ? (size_t)keys : 1) * sizeof *score);
    support_unpack(dtype, qf, q, d);
    support_unpack(dtype, got, o, d);
    double top = -INFINITY;
    for (int64_t j = 0; j < keys; j++) {
        support_unpack(dtype, row, (const unsigned char *)k + (size_t)(j * ld_k) * elem, d);
        double dot = 0;
        for (size_t c = 0; c < d; c++) dot += (double)qf[c] * (double)row[c];
        score[j] = scale * dot;
        if (score[j] > top) top = score[j];
    }
    double sum = 0;
    for (size_t c = 0; c < d; c++) want[c] = 0;
    for (int64_t j = 0; j < keys; j++) {
        const double p = exp(score[j] - top);
        sum += p;
        support_unpack(dtype, row, (const unsigned char *)v + (size_t)(j * ld_v) * elem, d);
        for (size_t c = 0; c < d; c++) want[c] += p * (double)row[c];
    }
    for (size_t c = 0; c < d; c++) want[c] = sum > 0 ? want[c] / sum : 0.0; /* no key: 0 */
    double atol, rtol;
    support_tolerance(dtype, 0, &atol, &rtol);
    atol = dtype == TILE_DTYPE_BF16 ? 1.6e-2 : 2e-3;
    const int64_t bad = support_compare(label, got, head_dim, want, 1, head_dim, atol, rtol,
                                        max_err);
    free(qf);
    free(row);
    free(got);
    free(want);
    free(score);
    return bad;
}

void bench_skewed_group_ends(int32_t groups, int64_t rows, double alpha, uint64_t seed,
                             int32_t *ends) {
    support_skewed_group_ends(groups, rows, alpha, seed, ends);
}

int64_t bench_check_grouped_matmul_row(tile_dtype dtype, int64_t k, int64_t n, const void *a_row,
                                       const void *b_group, int64_t b_k_stride,
                                       int64_t b_n_stride, const void *bias_row,
                                       const void *c_row, int64_t ncols, const char *label,
                                       double *max_err, double *max_err_lp) {
    if (ncols > n) ncols = n;
    const size_t elem = support_dtype_size(dtype), nc = (size_t)ncols;
    int64_t *cols = bench_malloc(nc * sizeof *cols);
    for (int64_t j = 0; j < ncols; j++) cols[j] = ncols > 1 ? j * (n - 1) / (ncols - 1) : 0;
    /* The sampled columns of B_g, bias and C gathered into a one-row, one-group problem: the
     * reference then reads only floats of what is checked. */
    float *a = bench_malloc((size_t)k * sizeof *a), *b = bench_malloc((size_t)k * nc * sizeof *b);
    float *bias = bench_malloc(nc * sizeof *bias), *got = bench_malloc(nc * sizeof *got);
    const unsigned char *bg = b_group, *br = bias_row, *cr = c_row;
    support_unpack(dtype, a, a_row, (size_t)k);
    for (int64_t j = 0; j < ncols; j++) {
        for (int64_t kk = 0; kk < k; kk++)
            support_unpack(dtype, b + kk * ncols + j,
                           bg + (size_t)(kk * b_k_stride + cols[j] * b_n_stride) * elem, 1);
        if (br) support_unpack(dtype, bias + j, br + (size_t)cols[j] * elem, 1);
        support_unpack(dtype, got + j, cr + (size_t)cols[j] * elem, 1);
    }
    const int32_t one_row = 1;
    const tile_grouped_matmul_args ref = {
        .struct_size = sizeof ref, .dtype = dtype, .groups = 1, .total_m = 1, .n = ncols, .k = k,
        .a = a, .b = b, .lda = k, .ldc = ncols, .b_k_stride = ncols, .b_n_stride = 1,
        .bias = br ? bias : NULL, .bias_group_stride = ncols, .offsets = &one_row};
    support_grouped_matmul_errors e = {0};
    support_grouped_matmul_check_row(&ref, 0, NULL, ncols, got, &e);
    const double allowed = support_grouped_matmul_allowed(dtype, &e);
    const int failed = !(e.err <= allowed);
    if (failed)
        fprintf(stderr, "%s: max error %.3g over %lld columns exceeds %.3g (2 x the "
                        "fp32-accumulated reference's %.3g + slack)\n",
                label, e.err, (long long)ncols, allowed, e.err_lp);
    if (max_err) *max_err = e.err;
    if (max_err_lp) *max_err_lp = e.err_lp;
    void *done[] = {cols, a, b, bias, got};
    for (size_t i = 0; i < sizeof done / sizeof *done; i++) free(done[i]);
    return failed;
}
