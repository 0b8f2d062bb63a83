#include "support.h"

#include <errno.h>
#include <fnmatch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int support_gpu_open(support_gpu *gpu, const char **why) {
    memset(gpu, 0, sizeof *gpu);
    gpu->drv = tile_driver_get(why);
    if (!gpu->drv) return -1;
    int count = 0;
    if (gpu->drv->cuDeviceGetCount(&count) != CUDA_SUCCESS || count < 1) {
        *why = "the CUDA driver is loaded but sees no GPU";
        return -1;
    }
    const tile_driver *d = gpu->drv;
    int major = 0, minor = 0;
    if (d->cuDeviceGet(&gpu->device, 0) != CUDA_SUCCESS ||
        d->cuDevicePrimaryCtxRetain(&gpu->context, gpu->device) != CUDA_SUCCESS) {
        gpu->context = NULL;
        *why = "could not open GPU 0 (primary context)";
        return -1;
    }
    if (d->cuCtxSetCurrent(gpu->context) != CUDA_SUCCESS ||
        d->cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                                gpu->device) != CUDA_SUCCESS ||
        d->cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                                gpu->device) != CUDA_SUCCESS ||
        d->cuDeviceGetAttribute(&gpu->sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                                gpu->device) != CUDA_SUCCESS ||
        d->cuDeviceGetAttribute(&gpu->smem_limit,
                                CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                                gpu->device) != CUDA_SUCCESS ||
        d->cuDeviceGetName(gpu->name, sizeof gpu->name, gpu->device) != CUDA_SUCCESS) {
        support_gpu_close(gpu); /* the context retained above */
        *why = "could not query GPU 0 (its attributes or name)";
        return -1;
    }
    gpu->arch = major * 10 + minor;
    gpu->mem_bandwidth_gbs = tile_driver_peak_bandwidth_gbs(d, gpu->device);
    return 0;
}

int support_variant_runs_here(const support_gpu *gpu, const tile_variant_info *info) {
    return gpu->arch >= info->arch_min && (!info->arch_max || gpu->arch <= info->arch_max) &&
           info->smem_bytes <= gpu->smem_limit;
}

int support_variant_selected(const char *name, const char *filter) {
    if (!filter || !*filter) return 1;
    if (strpbrk(filter, "*?[")) return fnmatch(filter, name, 0) == 0;
    return strstr(name, filter) != NULL;
}

int support_parse_max_rows(const char *text, int64_t *max_rows) {
    *max_rows = 0;
    if (!text || !*text) return 0;
    /* digits only: strtoll alone would take a sign, leading blanks and a hex prefix */
    for (const char *c = text; *c; c++)
        if (*c < '0' || *c > '9') return -1;
    errno = 0;
    const long long n = strtoll(text, NULL, 10);
    if (errno == ERANGE || n < 1) return -1;
    *max_rows = (int64_t)n;
    return 0;
}

int support_env_count(const char *name, int64_t fallback, int64_t *value) {
    const char *text = getenv(name);
    if (support_parse_max_rows(text, value)) {
        fprintf(stderr, "FAIL %s=%s: want a whole number, at least 1 (or unset)\n", name, text);
        return -1;
    }
    if (!*value) *value = fallback;
    return 0;
}

int support_test_max_rows(int64_t *max_rows) {
    if (support_env_count("FUSEDOPS_TEST_MAX_ROWS", 0, max_rows)) return -1;
    if (*max_rows)
        printf("FUSEDOPS_TEST_MAX_ROWS=%lld: per-variant cases of more than %lld rows run with "
               "%lld rows (same columns)\n",
               (long long)*max_rows, (long long)*max_rows, (long long)*max_rows);
    return 0;
}

int64_t support_cap_rows(int64_t rows, int64_t max_rows) {
    return max_rows > 0 && rows > max_rows ? max_rows : rows;
}

int support_is_persistent(const tile_variant_info *info) {
    return strstr(info->name, "_persistent_") != NULL || strstr(info->name, "_pipe_") != NULL ||
           strstr(info->name, "_streamed_") != NULL;
}

int support_is_lean(const tile_variant_info *info) {
    return strstr(info->params, "LEAN=1") != NULL;
}

int support_is_pointwise(const tile_variant_info *info) {
    return strstr(info->params, "POINTWISE=1") != NULL;
}

/* Whether params a and b ("K=V K=V ...") are the same sequence once MAXREG and LEAN are left out. */
static int same_params_but_lean(const char *a, const char *b) {
    for (;;) {
        while (*a == ' ' || !strncmp(a, "MAXREG=", 7) || !strncmp(a, "LEAN=", 5))
            a += *a == ' ' ? 1 : strcspn(a, " ");
        while (*b == ' ' || !strncmp(b, "MAXREG=", 7) || !strncmp(b, "LEAN=", 5))
            b += *b == ' ' ? 1 : strcspn(b, " ");
        const size_t la = strcspn(a, " "), lb = strcspn(b, " ");
        if (la != lb || strncmp(a, b, la)) return 0;
        if (!la) return 1; /* both ended */
        a += la;
        b += lb;
    }
}

int32_t support_lean_twin_of(int32_t index) {
    tile_variant_info v = {.struct_size = sizeof v};
    if (tile_variant_get(index, &v) != TILE_STATUS_SUCCESS || support_is_lean(&v)) return -1;
    for (int32_t i = 0; i < tile_variant_count(); i++) {
        tile_variant_info w = {.struct_size = sizeof w};
        if (tile_variant_get(i, &w) != TILE_STATUS_SUCCESS || !support_is_lean(&w)) continue;
        if (!strcmp(v.op, w.op) && v.dtype == w.dtype && v.threads == w.threads &&
            v.cluster == w.cluster && v.smem_bytes == w.smem_bytes && v.max_cols == w.max_cols &&
            v.align_bytes == w.align_bytes && same_params_but_lean(v.params, w.params))
            return i;
    }
    return -1;
}

int support_variant_uses_tensor_maps(const tile_variant_info *info) {
    /* as src/tensor_map.c: the warp-specialized families, WARPGROUPS of 3 or more */
    const char *w = info->params ? strstr(info->params, "WARPGROUPS=") : NULL;
    return w != NULL && atoi(w + strlen("WARPGROUPS=")) >= 3;
}

int32_t support_programs_per_sm_bound(const support_gpu *gpu, const tile_variant_info *info) {
    int blocks = 0, threads = 0, smem = 0;
    SUPPORT_CHECK(gpu, gpu->drv->cuDeviceGetAttribute(
                           &blocks, CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR, gpu->device));
    SUPPORT_CHECK(gpu, gpu->drv->cuDeviceGetAttribute(
                           &threads, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR,
                           gpu->device));
    SUPPORT_CHECK(gpu, gpu->drv->cuDeviceGetAttribute(
                           &smem, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR,
                           gpu->device));
    int32_t bound = blocks;
    if (info->threads > 0 && threads / info->threads < bound) bound = threads / info->threads;
    if (info->smem_bytes > 0 && smem / info->smem_bytes < bound) bound = smem / info->smem_bytes;
    return bound > 1 ? bound : 1; /* a variant that runs here has at least one resident */
}

int64_t support_persistent_walk_rows(const support_gpu *gpu, const tile_variant_info *info,
                                     int64_t walk_length) {
    return walk_length * gpu->sm_count * support_programs_per_sm_bound(gpu, info) + 7;
}

void support_gpu_close(support_gpu *gpu) {
    if (gpu->drv && gpu->context) {
        const CUresult r = gpu->drv->cuDevicePrimaryCtxRelease(gpu->device);
        if (r != CUDA_SUCCESS)
            fprintf(stderr, "cuDevicePrimaryCtxRelease failed with %s\n",
                    tile_driver_error_name(r));
    }
    gpu->context = NULL;
}

void support_check(const support_gpu *gpu, CUresult r, const char *what, const char *file,
                   int line) {
    (void)gpu; /* (the driver names any call's result) */
    if (r == CUDA_SUCCESS) return;
    fprintf(stderr, "%s:%d: %s failed with %s\n", file, line, what, tile_driver_error_name(r));
    exit(1);
}

uint16_t support_float_to_half(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u;
    int32_t exp = (int32_t)((x >> 23) & 0xff) - 127 + 15;
    uint32_t mant = x & 0x7fffffu;
    if (((x >> 23) & 0xff) == 0xff) return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u : 0));
    if (exp >= 31) return (uint16_t)(sign | 0x7c00u);
    if (exp <= 0) {
        if (exp < -10) return (uint16_t)sign;
        mant |= 0x800000u;
        uint32_t shift = (uint32_t)(14 - exp);
        uint32_t half = mant >> shift;
        uint32_t rem = mant & ((1u << shift) - 1), mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1))) half++;
        return (uint16_t)(sign | half);
    }
    uint32_t half = sign | ((uint32_t)exp << 10) | (mant >> 13);
    uint32_t rem = mant & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (half & 1))) half++;
    return (uint16_t)half;
}

float support_half_to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ffu;
    uint32_t x;
    if (exp == 0) {
        if (!mant) {
            x = sign;
        } else {
            int e = -1;
            do {
                e++;
                mant <<= 1;
            } while (!(mant & 0x400u));
            x = sign | ((uint32_t)(127 - 15 - e) << 23) | ((mant & 0x3ffu) << 13);
        }
    } else if (exp == 31) {
        x = sign | 0x7f800000u | (mant << 13);
    } else {
        x = sign | ((exp + 127 - 15) << 23) | (mant << 13);
    }
    float f;
    memcpy(&f, &x, 4);
    return f;
}

uint16_t support_float_to_bf16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

float support_bf16_to_float(uint16_t h) {
    uint32_t x = (uint32_t)h << 16;
    float f;
    memcpy(&f, &x, 4);
    return f;
}

size_t support_dtype_size(tile_dtype dtype) { return dtype == TILE_DTYPE_F32 ? 4 : 2; }

void support_pack(tile_dtype dtype, void *dst, const float *src, size_t n) {
    if (dtype == TILE_DTYPE_F32) {
        memcpy(dst, src, n * 4);
        return;
    }
    uint16_t *d = dst;
    for (size_t i = 0; i < n; i++)
        d[i] = dtype == TILE_DTYPE_F16 ? support_float_to_half(src[i])
                                       : support_float_to_bf16(src[i]);
}

void support_unpack(tile_dtype dtype, float *dst, const void *src, size_t n) {
    if (dtype == TILE_DTYPE_F32) {
        memcpy(dst, src, n * 4);
        return;
    }
    const uint16_t *s = src;
    for (size_t i = 0; i < n; i++)
        dst[i] = dtype == TILE_DTYPE_F16 ? support_half_to_float(s[i]) : support_bf16_to_float(s[i]);
}

/* splitmix64's output function of the i-th (from 1) state after seed. */
static uint64_t splitmix64(uint64_t seed, uint64_t i) {
    uint64_t z = seed + 0x9e3779b97f4a7c15ull * i;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void support_fill_uniform(float *dst, size_t n, uint64_t seed, float lo, float hi) {
    for (size_t i = 0; i < n; i++) {
        const uint64_t z = splitmix64(seed, i + 1);
        dst[i] = lo + (hi - lo) * (float)((double)(z >> 11) / 9007199254740992.0);
    }
}

void support_random_stored(tile_dtype dtype, void *dst, size_t n, uint64_t seed, float lo,
                           float hi) {
    enum { CHUNK = 1 << 20 };
    float *tmp = support_xmalloc(CHUNK * sizeof *tmp);
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

void support_softmax_reference(double *y, const float *x, int64_t rows, int64_t cols, int64_t ld,
                               int log_softmax) {
    for (int64_t r = 0; r < rows; r++) { /* reads rows*cols, writes rows*cols */
        const float *xr = x + r * ld;
        double m = -INFINITY, s = 0;
        for (int64_t c = 0; c < cols; c++) m = xr[c] > m ? xr[c] : m;
        for (int64_t c = 0; c < cols; c++) s += exp((double)xr[c] - m);
        for (int64_t c = 0; c < cols; c++)
            y[r * cols + c] = log_softmax ? (double)xr[c] - m - log(s) : exp((double)xr[c] - m) / s;
    }
}

void support_tolerance(tile_dtype dtype, int log_softmax, double *atol, double *rtol) {
    /* One rounding of the output plus fp32 math with approximate exp (~2^-21 relative). */
    double eps = dtype == TILE_DTYPE_F32 ? 1.0 / (1 << 23) : dtype == TILE_DTYPE_F16 ? 1.0 / (1 << 10)
                                                                                 : 1.0 / (1 << 7);
    *rtol = dtype == TILE_DTYPE_F32 ? 2e-5 : eps;
    /* log-softmax values are O(log cols): an fp32 absolute error near 1e-5 is rounding. */
    *atol = log_softmax ? (dtype == TILE_DTYPE_F32 ? 1e-5 : 2 * eps) : 1e-7;
}

int64_t support_compare(const char *label, const float *got, int64_t ld_got, const double *want,
                        int64_t rows, int64_t cols, double atol, double rtol, double *max_err) {
    int64_t bad = 0;
    double worst = 0;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++) {
            double g = got[r * ld_got + c], w = want[r * cols + c];
            double err = fabs(g - w);
            int ok = !isnan(g) && err <= atol + rtol * fabs(w);
            if (!isnan(err) && err > worst) worst = err;
            if (!ok) {
                if (bad < 5)
                    fprintf(stderr, "%s: mismatch at [%lld, %lld]: got %.8g, want %.8g\n", label,
                            (long long)r, (long long)c, g, w);
                bad++;
            }
        }
    if (max_err) *max_err = worst;
    return bad;
}

int64_t support_compare_exact(const char *label, const float *got, int64_t ld_got,
                              const float *want, int64_t ld_want, int64_t rows, int64_t cols) {
    int64_t bad = 0;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++) {
            const float g = got[r * ld_got + c], w = want[r * ld_want + c];
            if (memcmp(&g, &w, sizeof g) == 0) continue;
            if (bad < 5)
                fprintf(stderr, "%s: mismatch at [%lld, %lld]: got %.9g, want %.9g (exact)\n",
                        label, (long long)r, (long long)c, g, w);
            bad++;
        }
    return bad;
}

/* ---------------------------------------------------------------- dropout */

static uint32_t mulhilo32(uint32_t a, uint32_t b, uint32_t *hi) {
    const uint64_t prod = (uint64_t)a * b;
    *hi = (uint32_t)(prod >> 32);
    return (uint32_t)prod;
}

void support_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]) {
    uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3], k0 = key[0], k1 = key[1];
    for (int round = 0; round < 10; round++) {
        if (round) {
            k0 += 0x9E3779B9u;
            k1 += 0xBB67AE85u;
        }
        uint32_t hi0, hi1;
        const uint32_t lo0 = mulhilo32(0xD2511F53u, c0, &hi0);
        const uint32_t lo1 = mulhilo32(0xCD9E8D57u, c2, &hi1);
        c0 = hi1 ^ c1 ^ k0;
        c1 = lo1;
        c2 = hi0 ^ c3 ^ k1;
        c3 = lo0;
    }
    out[0] = c0;
    out[1] = c1;
    out[2] = c2;
    out[3] = c3;
}

/* The four words of columns 8*(col/8) .. 8*(col/8)+7 of row `row`. */
static void philox_group(uint64_t seed, uint64_t offset, int64_t row, int64_t col,
                         uint32_t out[4]) {
    const uint64_t r = (uint64_t)row, group = (uint64_t)col >> 3;
    const uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    const uint32_t ctr[4] = {(uint32_t)group, (uint32_t)r, (uint32_t)offset,
                             (uint32_t)(offset >> 32) ^ (uint32_t)(r >> 32) ^
                                 (uint32_t)(group >> 32)};
    support_philox4x32_10(ctr, key, out);
}

/* Element col's half of its group's words: half col % 2 (0: low) of word (col / 2) % 4. */
static uint32_t draw_of(const uint32_t words[4], int64_t col) {
    const uint32_t word = words[(col >> 1) & 3];
    return col & 1 ? word >> 16 : word & 0xffffu;
}

uint32_t support_dropout_draw(uint64_t seed, uint64_t offset, int64_t row, int64_t col) {
    uint32_t out[4];
    philox_group(seed, offset, row, col, out);
    return draw_of(out, col);
}

uint32_t support_dropout_threshold(float p) { return (uint32_t)((double)p * 65536.0); }

float support_dropout_scale(float p) {
    return support_dropout_threshold(p) ? 1.0f / (1.0f - p) : 1.0f; /* p < 2^-16: the identity */
}

int support_dropout_keep(float p, uint64_t seed, uint64_t offset, int64_t row, int64_t col) {
    return support_dropout_draw(seed, offset, row, col) >= support_dropout_threshold(p);
}

/* ---------------------------------------------------------------- add-and-norm */

void support_add_norm_reference(const support_add_norm_ref_args *a) {
    const int64_t cols = a->cols;
    const uint32_t threshold = support_dropout_threshold(a->p);
    const float scale = support_dropout_scale(a->p);
    float *s = malloc((size_t)cols * sizeof *s);
    void *stored = malloc((size_t)cols * support_dtype_size(a->dtype));
    if (!s || !stored) {
        fprintf(stderr, "support_add_norm_reference: out of host memory\n");
        exit(1);
    }
    for (int64_t r = 0; r < a->rows; r++) { /* reads rows*cols (x2 with residual), writes s, y */
        const float *x = a->x + r * a->ld_x;
        uint32_t words[4];
        /* fp32, one operation per statement: C11 (-std=c11) does not contract a * b + c into an
         * fma across statements, so this is the exact sequence of roundings the kernels do. */
        for (int64_t c = 0; c < cols; c++) {
            float t = x[c];
            if (a->bias) t = t + a->bias[c];
            int keep = 1;
            if (threshold > 0) {
                if (c == 0 || (c & 7) == 0) philox_group(a->seed, a->offset, r, c, words);
                keep = draw_of(words, c) >= threshold;
                if (keep) t = t * scale;
                else t = 0.0f;
            }
            if (a->residual) t = t + a->residual[r * a->ld_residual + c];
            s[c] = t;
            if (a->mask) a->mask[r * cols + c] = (uint8_t)keep;
        }
        support_pack(a->dtype, stored, s, (size_t)cols);
        support_unpack(a->dtype, s, stored, (size_t)cols);
        if (a->s) memcpy(a->s + r * cols, s, (size_t)cols * sizeof *s);
        if (a->norm != TILE_NORM_LAYER && a->norm != TILE_NORM_RMS) continue;

        double mean = 0, ms = 0;
        for (int64_t c = 0; c < cols; c++) mean += s[c];
        mean /= (double)cols;
        for (int64_t c = 0; c < cols; c++) {
            const double d = a->norm == TILE_NORM_LAYER ? s[c] - mean : s[c];
            ms += d * d;
        }
        const double rstd = 1.0 / sqrt(ms / (double)cols + (double)a->eps);
        const double shift = a->norm == TILE_NORM_LAYER ? mean : 0.0;
        if (a->mean && a->norm == TILE_NORM_LAYER) a->mean[r] = mean;
        if (a->rstd) a->rstd[r] = rstd;
        if (!a->y) continue;
        for (int64_t c = 0; c < cols; c++) {
            double v = ((double)s[c] - shift) * rstd;
            if (a->weight) v *= a->weight[c];
            if (a->norm_bias && a->norm == TILE_NORM_LAYER) v += a->norm_bias[c];
            a->y[r * cols + c] = v;
        }
    }
    free(s);
    free(stored);
}

void support_norm_tolerance(tile_dtype dtype, int stats, double *atol, double *rtol) {
    /* Twice the error of a naive fp32 implementation (one sequential sum per row, the worst
     * order) on rows of 65536 columns of the GPU test's data, measured on the host: rstd 2.6e-5
     * relative; y 2.1e-5 absolute where y nearly cancels against norm_bias (the statistics'
     * error times |(s - mean) * rstd * weight|, a few units). Blocked sums, as on the GPU, stay
     * near 2e-7. On top: one rounding of y to dtype (rtol). */
    if (stats) {
        *atol = 1e-5;
        *rtol = 5e-5;
        return;
    }
    *atol = 5e-5;
    *rtol = dtype == TILE_DTYPE_F32 ? 2e-5 : dtype == TILE_DTYPE_F16 ? 1.0 / (1 << 10)
                                                                   : 1.0 / (1 << 7);
}

static const char *variant_name(int32_t index) {
    tile_variant_info info = {.struct_size = sizeof info};
    return tile_variant_get(index, &info) == TILE_STATUS_SUCCESS ? info.name : "?";
}

int64_t support_softmax_run(const support_gpu *gpu, const support_softmax_case *c,
                            tile_status *status, double *max_err) {
    const tile_driver *d = gpu->drv;
    const size_t elem = support_dtype_size(c->dtype);
    const int64_t ld_x = c->cols + c->pad_x, ld_y = c->cols + c->pad_y;
    const size_t nx = (size_t)(c->rows * ld_x), ny = (size_t)(c->rows * ld_y);
    float *x = malloc(nx * sizeof *x), *y = malloc(ny * sizeof *y);
    void *x_store = malloc(nx * elem), *y_store = malloc(ny * elem);
    double *want = malloc((size_t)(c->rows * c->cols) * sizeof *want);
    if (!x || !y || !x_store || !y_store || !want) {
        fprintf(stderr, "support_softmax_run: out of host memory\n");
        exit(1);
    }
    support_fill_uniform(x, nx, c->seed, -8.0f, 8.0f);
    support_pack(c->dtype, x_store, x, nx);
    support_unpack(c->dtype, x, x_store, nx); /* the reference sees what the GPU sees */
    support_softmax_reference(want, x, c->rows, c->cols, ld_x, c->log_softmax);

    const size_t off = (size_t)c->offset * elem;
    CUdeviceptr dx, dy;
    SUPPORT_CHECK(gpu, d->cuMemAlloc(&dx, nx * elem + off + 256));
    SUPPORT_CHECK(gpu, d->cuMemAlloc(&dy, ny * elem + off + 256));
    SUPPORT_CHECK(gpu, d->cuMemcpyHtoD(dx + off, x_store, nx * elem));
    SUPPORT_CHECK(gpu, d->cuMemsetD8(dy, 0xff, ny * elem + off + 256)); /* NaN in every dtype */
    void *yp = (void *)(uintptr_t)(dy + off);
    const void *xp = (const void *)(uintptr_t)(dx + off);
    tile_status s = c->variant < 0
        ? (c->log_softmax ? tile_log_softmax : tile_softmax)(c->dtype, yp, xp, c->rows, c->cols,
                                                            ld_y, ld_x, NULL)
        : tile_softmax_variant(c->variant, c->log_softmax, c->dtype, yp, xp, c->rows, c->cols,
                               ld_y, ld_x, NULL);
    *status = s;
    int64_t bad = -1;
    if (s == TILE_STATUS_SUCCESS) {
        SUPPORT_CHECK(gpu, d->cuCtxSynchronize());
        SUPPORT_CHECK(gpu, d->cuMemcpyDtoH(y_store, dy + off, ny * elem));
        support_unpack(c->dtype, y, y_store, ny);
        double atol, rtol;
        support_tolerance(c->dtype, c->log_softmax, &atol, &rtol);
        char label[200];
        snprintf(label, sizeof label, "%s %s %lldx%lld", c->variant < 0 ? "dispatch"
                 : variant_name(c->variant), tile_dtype_string(c->dtype),
                 (long long)c->rows, (long long)c->cols);
        bad = support_compare(label, y, ld_y, want, c->rows, c->cols, atol, rtol, max_err);
        for (int64_t r = 0; r < c->rows; r++) /* row padding must stay poisoned */
            for (int64_t k = c->cols; k < ld_y; k++)
                if (!isnan(y[r * ld_y + k])) {
                    if (bad < 5) fprintf(stderr, "%s: wrote padding at [%lld, %lld]\n", label,
                                         (long long)r, (long long)k);
                    bad++;
                }
    }
    SUPPORT_CHECK(gpu, d->cuMemFree(dx));
    SUPPORT_CHECK(gpu, d->cuMemFree(dy));
    free(x);
    free(y);
    free(x_store);
    free(y_store);
    free(want);
    return bad;
}

void *support_xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "out of host memory\n");
        exit(1);
    }
    return p;
}

/* Waits for a setup's copies and memsets. They run on the legacy NULL stream and may return
 * before the device has done them (a copy from pageable memory, cuMemsetD8), and a caller's
 * non-blocking stream does not wait for that stream: without this, a late preset of an output
 * could land after a call's results (the stress test's graph check saw replays "differ" from
 * an eager call that way while other processes shared the GPU). */
static void setup_done(const support_gpu *gpu) {
    SUPPORT_CHECK(gpu, gpu->drv->cuCtxSynchronize());
}

CUdeviceptr support_zeroed_workspace(const support_gpu *gpu, size_t bytes) {
    CUdeviceptr ws;
    SUPPORT_CHECK(gpu, gpu->drv->cuMemAlloc(&ws, bytes));
    SUPPORT_CHECK(gpu, gpu->drv->cuMemsetD8(ws, 0, bytes));
    return ws;
}

int64_t support_workspace_not_zeroed(const support_gpu *gpu, const void *workspace, size_t bytes,
                                     const char *label) {
    if (!workspace) return 0;
    unsigned char *ws = support_xmalloc(bytes);
    SUPPORT_CHECK(gpu, gpu->drv->cuMemcpyDtoH(ws, (CUdeviceptr)(uintptr_t)workspace, bytes));
    int64_t bad = 0;
    for (size_t i = 0; i < bytes && !bad; i++)
        if (ws[i]) {
            fprintf(stderr, "%s: the workspace is not zero after the call (byte %zu: %u)\n", label,
                    i, ws[i]);
            bad = 1;
        }
    free(ws);
    return bad;
}

CUdeviceptr support_upload(const support_gpu *gpu, tile_dtype dtype, const float *v, size_t n,
                           size_t offset, CUdeviceptr *base) {
    const size_t elem = support_dtype_size(dtype);
    void *packed = support_xmalloc(n * elem);
    support_pack(dtype, packed, v, n);
    SUPPORT_CHECK(gpu, gpu->drv->cuMemAlloc(base, n * elem + offset * elem + 256));
    if (n) SUPPORT_CHECK(gpu, gpu->drv->cuMemcpyHtoD(*base + offset * elem, packed, n * elem));
    setup_done(gpu);
    free(packed);
    return *base + offset * elem;
}

float *support_stored_uniform(tile_dtype dtype, size_t n, uint64_t seed, float lo, float hi) {
    float *v = support_xmalloc(n * sizeof *v);
    void *tmp = support_xmalloc(n * support_dtype_size(dtype));
    support_fill_uniform(v, n, seed, lo, hi);
    support_pack(dtype, tmp, v, n);
    support_unpack(dtype, v, tmp, n);
    free(tmp);
    return v;
}

int64_t support_norm_run(const support_gpu *gpu, const support_norm_case *c, tile_status *status,
                         double *max_err) {
    const tile_driver *d = gpu->drv;
    const tile_dtype dt = c->dtype;
    const size_t elem = support_dtype_size(dt), off = (size_t)c->offset;
    const int64_t rows = c->rows, cols = c->cols, ld = cols + c->pad;
    const size_t n = (size_t)(rows * ld), dense = (size_t)(rows * cols);
    const int layer = c->norm == TILE_NORM_LAYER, has_norm = c->norm != TILE_NORM_NONE;
    float *x = support_stored_uniform(dt, n, c->seed, -4.0f, 4.0f);
    float *res = support_stored_uniform(dt, n, c->seed + 1, -4.0f, 4.0f);
    float *bias = support_stored_uniform(dt, (size_t)cols, c->seed + 2, -1.0f, 1.0f);
    float *weight = support_stored_uniform(dt, (size_t)cols, c->seed + 3, 0.5f, 1.5f);
    float *norm_bias = support_stored_uniform(dt, (size_t)cols, c->seed + 4, -1.0f, 1.0f);
    float *want_s = malloc(dense * sizeof(float)), *got = malloc(n * sizeof(float));
    double *want_y = malloc(dense * sizeof(double));
    uint8_t *want_mask = malloc(dense), *got_mask = malloc(dense);
    double *want_rstd = malloc((size_t)rows * sizeof(double));
    double *want_means = malloc((size_t)rows * sizeof(double));
    float *got_stats = malloc((size_t)rows * sizeof(float));
    void *store = malloc(n * elem);
    if (!want_s || !got || !want_y || !want_mask || !got_mask || !want_rstd || !want_means ||
        !got_stats || !store) {
        fprintf(stderr, "support_norm_run: out of host memory\n");
        exit(1);
    }
    support_add_norm_ref_args ref = {
        .dtype = dt, .norm = c->norm, .rows = rows, .cols = cols, .x = x, .ld_x = ld,
        .residual = res, .ld_residual = ld, .bias = bias, .weight = has_norm ? weight : NULL,
        .norm_bias = layer ? norm_bias : NULL, .eps = 1e-5f, .p = c->p, .seed = c->seed,
        .offset = c->seed * 3, .s = want_s, .y = has_norm ? want_y : NULL, .mask = want_mask,
        .mean = layer ? want_means : NULL, .rstd = has_norm ? want_rstd : NULL};
    if (c->plain) ref.residual = ref.bias = NULL;
    support_add_norm_reference(&ref);

    CUdeviceptr bx, br, bb, bw, bn, bs, by, bm, bmean, brstd;
    const CUdeviceptr dx = support_upload(gpu, dt, x, n, off, &bx);
    const CUdeviceptr dr = support_upload(gpu, dt, res, n, off, &br);
    const CUdeviceptr db = support_upload(gpu, dt, bias, (size_t)cols, off, &bb);
    const CUdeviceptr dw = support_upload(gpu, dt, weight, (size_t)cols, off, &bw);
    const CUdeviceptr dn = support_upload(gpu, dt, norm_bias, (size_t)cols, off, &bn);
    const size_t out_bytes = n * elem + off * elem + 256;
    SUPPORT_CHECK(gpu, d->cuMemAlloc(&bs, out_bytes));
    SUPPORT_CHECK(gpu, d->cuMemAlloc(&by, out_bytes));
    SUPPORT_CHECK(gpu, d->cuMemAlloc(&bm, dense));
    SUPPORT_CHECK(gpu, d->cuMemAlloc(&bmean, (size_t)rows * sizeof(float)));
    SUPPORT_CHECK(gpu, d->cuMemAlloc(&brstd, (size_t)rows * sizeof(float)));
    const CUdeviceptr poison[] = {bs, by};
    for (int i = 0; i < 2; i++) SUPPORT_CHECK(gpu, d->cuMemsetD8(poison[i], 0xff, out_bytes));
    SUPPORT_CHECK(gpu, d->cuMemsetD8(bm, 0xee, dense));
    SUPPORT_CHECK(gpu, d->cuMemsetD8(bmean, 0xff, (size_t)rows * sizeof(float)));
    SUPPORT_CHECK(gpu, d->cuMemsetD8(brstd, 0xff, (size_t)rows * sizeof(float)));
#define DP(p) ((void *)(uintptr_t)(p))
    tile_add_norm_args a = {
        .struct_size = sizeof a, .dtype = dt, .norm = c->norm, .rows = rows, .cols = cols,
        .y = has_norm ? DP(by + off * elem) : NULL, .ld_y = ld, .s = DP(bs + off * elem),
        .ld_s = ld, .x = DP(dx), .ld_x = ld, .residual = DP(dr), .ld_residual = ld,
        .bias = DP(db), .weight = has_norm ? DP(dw) : NULL, .norm_bias = layer ? DP(dn) : NULL,
        .eps = 1e-5f, .p = c->p, .seed = c->seed, .offset = c->seed * 3,
        .mask = c->p > 0.0f ? DP(bm) : NULL,
        .mean = layer ? DP(bmean) : NULL, .rstd = has_norm ? DP(brstd) : NULL};
    if (c->plain) {
        a.residual = a.bias = NULL;
        a.s = NULL;
    }
#undef DP
    tile_status st;
    if (c->variant >= 0) st = tile_add_norm_variant(c->variant, &a, NULL);
    else if (c->plain && layer)
        st = tile_layernorm(dt, a.y, a.x, a.weight, a.norm_bias, a.mean, a.rstd, rows, cols, ld,
                            ld, a.eps, NULL);
    else if (c->plain) st = tile_rmsnorm(dt, a.y, a.x, a.weight, a.rstd, rows, cols, ld, ld, a.eps, NULL);
    else if (has_norm) st = tile_residual_dropout_norm(&a, NULL);
    else st = tile_residual_dropout(dt, a.s, a.x, a.residual, a.bias, a.mask, rows, cols, ld, ld,
                                    ld, a.p, a.seed, a.offset, NULL);
    *status = st;
    int64_t bad = -1;
    if (st == TILE_STATUS_SUCCESS) {
        SUPPORT_CHECK(gpu, d->cuCtxSynchronize());
        char label[200];
        snprintf(label, sizeof label, "%s %s %s %lldx%lld",
                 c->variant < 0 ? "dispatch" : variant_name(c->variant), tile_dtype_string(dt),
                 c->norm == TILE_NORM_LAYER ? "layernorm" : c->norm == TILE_NORM_RMS ? "rmsnorm"
                                                                                      : "none",
                 (long long)rows, (long long)cols);
        SUPPORT_CHECK(gpu, d->cuMemcpyDtoH(store, bs + off * elem, n * elem));
        support_unpack(dt, got, store, n);
        bad = 0;
        if (!c->plain) bad = support_compare_exact(label, got, ld, want_s, cols, rows, cols);
        for (int64_t r = 0; r < rows; r++) /* row padding (plain: all of s) must stay poisoned */
            for (int64_t k = c->plain ? 0 : cols; k < ld; k++) bad += !isnan(got[r * ld + k]);
        if (c->p > 0.0f) {
            SUPPORT_CHECK(gpu, d->cuMemcpyDtoH(got_mask, bm, dense));
            for (size_t i = 0; i < dense; i++) bad += got_mask[i] != want_mask[i];
        }
        double atol, rtol, err = 0;
        if (has_norm) {
            SUPPORT_CHECK(gpu, d->cuMemcpyDtoH(store, by + off * elem, n * elem));
            support_unpack(dt, got, store, n);
            support_norm_tolerance(dt, 0, &atol, &rtol);
            bad += support_compare(label, got, ld, want_y, rows, cols, atol, rtol, max_err);
            for (int64_t r = 0; r < rows; r++)
                for (int64_t k = cols; k < ld; k++) bad += !isnan(got[r * ld + k]);
            support_norm_tolerance(dt, 1, &atol, &rtol);
            SUPPORT_CHECK(gpu, d->cuMemcpyDtoH(got_stats, brstd, (size_t)rows * sizeof(float)));
            bad += support_compare(label, got_stats, 1, want_rstd, rows, 1, atol, rtol, &err);
            if (layer) {
                SUPPORT_CHECK(gpu, d->cuMemcpyDtoH(got_stats, bmean, (size_t)rows * sizeof(float)));
                bad += support_compare(label, got_stats, 1, want_means, rows, 1, atol, rtol, &err);
            }
        }
    }
    const CUdeviceptr bufs[] = {bx, br, bb, bw, bn, bs, by, bm, bmean, brstd};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++) SUPPORT_CHECK(gpu, d->cuMemFree(bufs[i]));
    void *host[] = {x, res, bias, weight, norm_bias, want_s, got, want_y, want_mask, got_mask,
                    want_rstd, want_means, got_stats, store};
    for (size_t i = 0; i < sizeof host / sizeof *host; i++) free(host[i]);
    return bad;
}

void support_attention_reference(const tile_flash_attention_args *a, int32_t b, int32_t h,
                                 int64_t i, double *out, double *lse) {
    const int varlen = a->cu_seqlens_q != NULL;
    const int64_t q0 = varlen ? a->cu_seqlens_q[b] : 0, k0 = varlen ? a->cu_seqlens_k[b] : 0;
    const int64_t len_q = varlen ? a->cu_seqlens_q[b + 1] - q0 : a->seqlen_q;
    const int64_t len_k = varlen ? a->cu_seqlens_k[b + 1] - k0 : a->seqlen_k;
    const int64_t bq = varlen ? 0 : b, hk = h / (a->heads_q / a->heads_kv);
    const float *q = (const float *)a->q + bq * a->q_batch_stride + (q0 + i) * a->q_seq_stride +
                     h * a->q_head_stride;
    const float *k = (const float *)a->k + bq * a->k_batch_stride + hk * a->k_head_stride;
    const float *v = (const float *)a->v + bq * a->v_batch_stride + hk * a->v_head_stride;
    const double scale = a->scale != 0.0f ? a->scale : 1.0f / sqrtf((float)a->head_dim);
    /* bottom-right causal: query i sees key j iff j <= i + len_k - len_q */
    int64_t keys = a->causal ? i + len_k - len_q + 1 : len_k;
    if (keys > len_k) keys = len_k;
    for (int32_t d = 0; d < a->head_dim; d++) out[d] = 0.0;
    if (keys <= 0) {
        *lse = -INFINITY;
        return;
    }
    double m = -INFINITY, sum = 0.0;
    for (int pass = 0; pass < 2; pass++) /* pass 0: the max; pass 1: sums */
        for (int64_t j = 0; j < keys; j++) {
            const float *kj = k + (k0 + j) * a->k_seq_stride;
            double s = 0.0;
            for (int32_t d = 0; d < a->head_dim; d++) s += (double)q[d] * kj[d];
            s *= scale;
            if (!pass) {
                m = s > m ? s : m;
                continue;
            }
            const double p = exp(s - m);
            const float *vj = v + (k0 + j) * a->v_seq_stride;
            sum += p;
            for (int32_t d = 0; d < a->head_dim; d++) out[d] += p * vj[d];
        }
    for (int32_t d = 0; d < a->head_dim; d++) out[d] /= sum;
    *lse = m + log(sum);
}

void support_attention_tolerance(tile_dtype dtype, int lse, double *atol, double *rtol) {
    if (lse) { /* fp32 sums of exp2 of fp32 scores */
        *atol = 1e-3;
        *rtol = 1e-4;
        return;
    }
    /* The output is a convex combination of v (|v| < 1): rounding each probability to dtype
     * moves it by at most one unit roundoff of max |v|, and the output's own rounding by one
     * of |out|; eps is twice the unit roundoff. */
    const double eps = dtype == TILE_DTYPE_F16 ? 1.0 / (1 << 10) : 1.0 / (1 << 7);
    *atol = eps;
    *rtol = eps;
}

/* One tensor of an attention case: strides and element count for `tokens` tokens per batch
 * entry (nb entries), `heads` heads, head_dim d, sequence rows padded by `pad` elements. */
static void attention_layout(int bhsd, int64_t nb, int64_t tokens, int64_t heads, int64_t d,
                             int64_t pad, int64_t strides[3], int64_t *count) {
    if (bhsd) {
        strides[1] = d + pad;                  /* seq */
        strides[2] = tokens * strides[1];      /* head */
        strides[0] = heads * strides[2];       /* batch */
    } else {
        strides[2] = d;                        /* head */
        strides[1] = heads * d + pad;          /* seq */
        strides[0] = tokens * strides[1];      /* batch */
    }
    *count = nb * strides[0];
    if (nb == 1) strides[0] = 0; /* varlen: unused */
}

void support_attention_setup(const support_gpu *gpu, const support_attention_case *c,
                             support_attention_problem *p) {
    const tile_driver *drv = gpu->drv;
    const tile_dtype dt = c->dtype;
    const size_t elem = support_dtype_size(dt);
    const int32_t nb = c->batch, hd = c->head_dim;
    /* sequence lengths, and their offsets when packed */
    int32_t *cu_q = support_xmalloc((size_t)(nb + 1) * sizeof *cu_q);
    int32_t *cu_k = support_xmalloc((size_t)(nb + 1) * sizeof *cu_k);
    cu_q[0] = cu_k[0] = 0;
    for (int32_t b = 0; b < nb; b++) {
        const int64_t lq = c->varlen ? c->seqlen_q - (37 * (int64_t)b) % (c->seqlen_q + 1)
                                     : c->seqlen_q;
        const int64_t lk = c->varlen ? c->seqlen_k - (53 * (int64_t)b) % (c->seqlen_k + 1)
                                     : c->seqlen_k;
        cu_q[b + 1] = cu_q[b] + (int32_t)lq;
        cu_k[b + 1] = cu_k[b] + (int32_t)lk;
    }
    const int64_t slots = c->varlen ? 1 : nb;
    const int64_t tq = c->varlen ? cu_q[nb] : c->seqlen_q, tk = c->varlen ? cu_k[nb] : c->seqlen_k;
    int64_t sq[3], sk[3], sv[3], so[3], nq, nk, nv, no;
    const int64_t pad = c->dense ? 0 : 8;
    const int v_bhsd = c->dense ? c->bhsd : !c->bhsd; /* v the other way, unless dense */
    attention_layout(c->bhsd, slots, tq, c->heads_q, hd, pad, sq, &nq);
    attention_layout(c->bhsd, slots, tk, c->heads_kv, hd, pad, sk, &nk);
    attention_layout(v_bhsd, slots, tk, c->heads_kv, hd, pad, sv, &nv);
    attention_layout(c->bhsd, slots, tq, c->heads_q, hd, pad, so, &no);
    float *q = support_stored_uniform(dt, (size_t)nq, c->seed, -2.0f, 2.0f);
    float *k = support_stored_uniform(dt, (size_t)nk, c->seed + 1, -2.0f, 2.0f);
    float *v = support_stored_uniform(dt, (size_t)nv, c->seed + 2, -1.0f, 1.0f);
    const size_t n_lse = (size_t)(c->heads_q * (c->varlen ? tq : nb * tq));
    CUdeviceptr bq, bk, bv, bo = 0, blse = 0, bcq = 0, bck = 0;
    const CUdeviceptr dq = support_upload(gpu, dt, q, (size_t)nq, 0, &bq);
    const CUdeviceptr dk = support_upload(gpu, dt, k, (size_t)nk, 0, &bk);
    const CUdeviceptr dv = support_upload(gpu, dt, v, (size_t)nv, 0, &bv);
    SUPPORT_CHECK(gpu, drv->cuMemAlloc(&bo, (size_t)no * elem + 256));
    SUPPORT_CHECK(gpu, drv->cuMemsetD8(bo, 0xff, (size_t)no * elem + 256)); /* NaN */
    SUPPORT_CHECK(gpu, drv->cuMemAlloc(&blse, n_lse * sizeof(float) + 256));
    SUPPORT_CHECK(gpu, drv->cuMemsetD8(blse, 0xff, n_lse * sizeof(float) + 256));
    if (c->varlen) {
        const size_t cu_bytes = (size_t)(nb + 1) * sizeof(int32_t);
        SUPPORT_CHECK(gpu, drv->cuMemAlloc(&bcq, cu_bytes));
        SUPPORT_CHECK(gpu, drv->cuMemAlloc(&bck, cu_bytes));
        SUPPORT_CHECK(gpu, drv->cuMemcpyHtoD(bcq, cu_q, cu_bytes));
        SUPPORT_CHECK(gpu, drv->cuMemcpyHtoD(bck, cu_k, cu_bytes));
    }
#define DP(p) ((void *)(uintptr_t)(p))
    p->args = (tile_flash_attention_args){
        .struct_size = sizeof p->args, .dtype = dt, .batch = nb, .heads_q = c->heads_q,
        .heads_kv = c->heads_kv, .head_dim = hd, .causal = c->causal, .seqlen_q = c->seqlen_q,
        .seqlen_k = c->seqlen_k, .scale = c->scale, .o = DP(bo), .q = DP(dq), .k = DP(dk),
        .v = DP(dv), .q_batch_stride = sq[0], .q_seq_stride = sq[1], .q_head_stride = sq[2],
        .k_batch_stride = sk[0], .k_seq_stride = sk[1], .k_head_stride = sk[2],
        .v_batch_stride = sv[0], .v_seq_stride = sv[1], .v_head_stride = sv[2],
        .o_batch_stride = so[0], .o_seq_stride = so[1], .o_head_stride = so[2],
        .cu_seqlens_q = c->varlen ? DP(bcq) : NULL, .cu_seqlens_k = c->varlen ? DP(bck) : NULL,
        .total_q = c->varlen ? tq : 0, .total_k = c->varlen ? tk : 0,
        .lse = c->lse ? DP(blse) : NULL};
    /* A workspace (none: the fixed walk) of all the call can use (its key splits too), zeroed */
    size_t ws_bytes = TILE_FLASH_ATTENTION_WORKSPACE_BYTES;
    if (!c->fixed_schedule && tile_flash_attention_workspace_size(&p->args, &ws_bytes))
        ws_bytes = TILE_FLASH_ATTENTION_WORKSPACE_BYTES; /* (the call reports what is wrong) */
    const CUdeviceptr bws = c->fixed_schedule ? 0 : support_zeroed_workspace(gpu, ws_bytes);
    p->args.workspace = DP(bws);
    p->args.workspace_bytes = c->fixed_schedule ? 0 : ws_bytes;
#undef DP
    p->q = q, p->k = k, p->v = v;
    p->cu_q = cu_q, p->cu_k = cu_k;
    p->tokens_q = tq;
    p->o_elements = no;
    p->lse_elements = (int64_t)n_lse;
    const CUdeviceptr bufs[] = {bq, bk, bv, bo, blse, bcq, bck, bws};
    memcpy(p->bufs, bufs, sizeof bufs);
    setup_done(gpu);
}

void support_attention_free(const support_gpu *gpu, support_attention_problem *p) {
    for (size_t i = 0; i < sizeof p->bufs / sizeof *p->bufs; i++)
        if (p->bufs[i]) SUPPORT_CHECK(gpu, gpu->drv->cuMemFree(p->bufs[i]));
    void *host[] = {p->q, p->k, p->v, p->cu_q, p->cu_k};
    for (size_t i = 0; i < sizeof host / sizeof *host; i++) free(host[i]);
    memset(p, 0, sizeof *p);
}

int64_t support_attention_run(const support_gpu *gpu, const support_attention_case *c,
                              tile_status *status, double *max_err) {
    const tile_dtype dt = c->dtype;
    const size_t elem = support_dtype_size(dt);
    const int32_t nb = c->batch, hd = c->head_dim;
    support_attention_problem p;
    support_attention_setup(gpu, c, &p);
    const tile_flash_attention_args a = p.args;
    const int32_t *cu_q = p.cu_q;
    const int64_t tq = p.tokens_q, no = p.o_elements;
    const size_t n_lse = (size_t)p.lse_elements;
    const int64_t so[3] = {a.o_batch_stride, a.o_seq_stride, a.o_head_stride};
    const CUdeviceptr bo = p.bufs[3], blse = p.bufs[4];
    const tile_status st = c->variant < 0 ? tile_flash_attention(&a, NULL)
                                          : tile_flash_attention_variant(c->variant, &a, NULL);
    *status = st;
    int64_t bad = -1;
    if (st == TILE_STATUS_SUCCESS) {
        const tile_driver *drv = gpu->drv;
        SUPPORT_CHECK(gpu, drv->cuCtxSynchronize());
        void *store = support_xmalloc((size_t)no * elem);
        float *o = support_xmalloc((size_t)no * sizeof *o);
        float *lse = support_xmalloc(n_lse * sizeof *lse);
        SUPPORT_CHECK(gpu, drv->cuMemcpyDtoH(store, bo, (size_t)no * elem));
        SUPPORT_CHECK(gpu, drv->cuMemcpyDtoH(lse, blse, n_lse * sizeof(float)));
        support_unpack(dt, o, store, (size_t)no);
        char label[200];
        snprintf(label, sizeof label, "%s %s %dx%dx%lldx%d kv %lld heads_kv %d%s%s%s%s",
                 c->variant < 0 ? "dispatch" : variant_name(c->variant), tile_dtype_string(dt),
                 nb, c->heads_q, (long long)c->seqlen_q, hd, (long long)c->seqlen_k, c->heads_kv,
                 c->causal ? " causal" : "", c->varlen ? " varlen" : "", c->bhsd ? " bhsd" : "",
                 c->fixed_schedule ? " fixed schedule" : "");
        /* the reference reads the host copies at the device's offsets */
        tile_flash_attention_args ref = a;
        ref.q = p.q, ref.k = p.k, ref.v = p.v;
        ref.cu_seqlens_q = c->varlen ? p.cu_q : NULL;
        ref.cu_seqlens_k = c->varlen ? p.cu_k : NULL;
        uint8_t *written = support_xmalloc((size_t)no);
        memset(written, 0, (size_t)no);
        double *want = support_xmalloc((size_t)hd * sizeof *want);
        float *got = support_xmalloc((size_t)hd * sizeof *got);
        double atol, rtol, latol, lrtol, err, worst = 0, lse_err;
        support_attention_tolerance(dt, 0, &atol, &rtol);
        support_attention_tolerance(dt, 1, &latol, &lrtol);
        const int64_t rows = (int64_t)c->heads_q * tq * (c->varlen ? 1 : nb);
        const double work = (double)rows * (double)c->seqlen_k * hd;
        const int64_t step = work <= (double)(1 << 26) ? 1 : (int64_t)(work / (1 << 26)) + 1;
        int64_t row = 0;
        /* the counters stay zeroed; past them the key splits' shares are scratch */
        const size_t counted = a.workspace_bytes < TILE_FLASH_ATTENTION_WORKSPACE_ZEROED_BYTES
                                   ? a.workspace_bytes
                                   : TILE_FLASH_ATTENTION_WORKSPACE_ZEROED_BYTES;
        bad = support_workspace_not_zeroed(gpu, a.workspace, counted, label);
        for (int32_t b = 0; b < nb; b++)
            for (int32_t h = 0; h < c->heads_q; h++) {
                const int64_t len = cu_q[b + 1] - cu_q[b];
                for (int64_t i = 0; i < len; i++, row++) {
                    const int64_t tok = c->varlen ? cu_q[b] + i : i, slot = c->varlen ? 0 : b;
                    const int64_t at = slot * so[0] + tok * so[1] + h * so[2];
                    memset(written + at, 1, (size_t)hd);
                    if (row % step && row != rows - 1) continue;
                    double want_lse;
                    support_attention_reference(&ref, b, h, i, want, &want_lse);
                    memcpy(got, o + at, (size_t)hd * sizeof *got);
                    char where[260];
                    snprintf(where, sizeof where, "%s o[b %d, h %d, i %lld]", label, b, h,
                             (long long)i);
                    bad += support_compare(where, got, hd, want, 1, hd, atol, rtol, &err);
                    if (err > worst) worst = err;
                    if (!c->lse) continue;
                    const float g = lse[(size_t)(c->varlen ? h * tq + tok
                                                           : ((int64_t)b * c->heads_q + h) * tq + i)];
                    /* a row that sees no key: -inf exactly */
                    if (isinf(want_lse) && !(isinf(g) && g < 0)) {
                        if (bad < 5) fprintf(stderr, "%s: lse got %.8g, want -inf\n", where, g);
                        bad++;
                    } else if (!isinf(want_lse)) {
                        bad += support_compare(where, &g, 1, &want_lse, 1, 1, latol, lrtol,
                                               &lse_err);
                    }
                }
            }
        for (int64_t e = 0; e < no; e++) /* what the call must not write stays poisoned */
            if (!written[e] && !isnan(o[e])) {
                if (bad < 5) fprintf(stderr, "%s: wrote padding element %lld\n", label, (long long)e);
                bad++;
            }
        if (max_err) *max_err = worst;
        void *done[] = {store, o, lse, written, want, got};
        for (size_t i = 0; i < sizeof done / sizeof *done; i++) free(done[i]);
    }
    support_attention_free(gpu, &p);
    return bad;
}

/* ---------------------------------------------------------------- grouped matmul */

/* The i-th (from 1) uniform draw in (0, 1) of the stream `seed`. */
static double uniform_open(uint64_t seed, uint64_t *i) {
    return ((double)(splitmix64(seed, ++*i) >> 11) + 0.5) / 9007199254740992.0;
}

/* Gamma(alpha, 1): Marsaglia and Tsang's method; below alpha 1 through
 * Gamma(alpha + 1) * U^(1 / alpha). Standard normals by Box-Muller. */
static double gamma_sample(double alpha, uint64_t seed, uint64_t *i) {
    if (alpha < 1.0)
        return gamma_sample(alpha + 1.0, seed, i) * pow(uniform_open(seed, i), 1.0 / alpha);
    const double d = alpha - 1.0 / 3.0, c = 1.0 / sqrt(9.0 * d);
    for (;;) {
        const double u1 = uniform_open(seed, i), u2 = uniform_open(seed, i);
        const double x = sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
        double v = 1.0 + c * x;
        if (v <= 0.0) continue;
        v = v * v * v;
        if (log(uniform_open(seed, i)) < 0.5 * x * x + d - d * v + d * log(v)) return d * v;
    }
}

typedef struct share {
    double fraction;
    int32_t group;
} share;

static int by_fraction_desc(const void *x, const void *y) {
    const share *a = x, *b = y;
    if (a->fraction != b->fraction) return a->fraction < b->fraction ? 1 : -1;
    return (a->group > b->group) - (a->group < b->group); /* ties: lower group first */
}

void support_skewed_group_ends(int32_t groups, int64_t rows, double alpha, uint64_t seed,
                               int32_t *ends) {
    double *w = support_xmalloc((size_t)groups * sizeof *w);
    share *rest = support_xmalloc((size_t)groups * sizeof *rest);
    uint64_t draw = 0;
    double sum = 0.0;
    for (int32_t g = 0; g < groups; g++) sum += w[g] = gamma_sample(alpha, seed, &draw);
    int64_t given = 0;
    for (int32_t g = 0; g < groups; g++) {
        /* all gammas underflowing (tiny alpha) falls back to an even split */
        const double exact = sum > 0.0 ? w[g] / sum * (double)rows : (double)rows / groups;
        const int64_t whole = (int64_t)floor(exact);
        w[g] = (double)whole;
        rest[g] = (share){exact - (double)whole, g};
        given += whole;
    }
    qsort(rest, (size_t)groups, sizeof *rest, by_fraction_desc);
    for (int64_t r = 0; r < rows - given; r++) w[rest[r % groups].group] += 1.0;
    int64_t end = 0;
    for (int32_t g = 0; g < groups; g++) ends[g] = (int32_t)(end += (int64_t)w[g]);
    free(w);
    free(rest);
}

static float round_stored(tile_dtype dtype, float f) {
    uint16_t h;
    support_pack(dtype, &h, &f, 1);
    float r;
    support_unpack(dtype, &r, &h, 1);
    return r;
}

/* The group of row m under ends clamped into [previous end, total_m]; -1 past the last end. */
static int32_t group_of_row(const int32_t *ends, int32_t groups, int64_t total_m, int64_t m) {
    int64_t begin = 0;
    for (int32_t g = 0; g < groups; g++) {
        int64_t end = ends[g];
        end = end < begin ? begin : end > total_m ? total_m : end;
        if (m < end) return g;
        begin = end;
    }
    return -1;
}

int32_t support_grouped_matmul_reference(const tile_grouped_matmul_args *a, int64_t m,
                                         const int64_t *cols, int64_t ncols, double *out,
                                         float *out_lp) {
    const int32_t g = group_of_row(a->offsets, a->groups, a->total_m, m);
    if (g < 0) return -1;
    const float *row = (const float *)a->a + m * a->lda;
    const float *bg = (const float *)a->b + g * a->b_group_stride;
    for (int64_t j = 0; j < ncols; j++) {
        out[j] = 0.0;
        if (out_lp) out_lp[j] = 0.0f;
    }
    /* kk outer: B's rows stream by (n contiguous in the [k, n] layout); each column's fp32 sum
     * still runs in increasing kk */
    for (int64_t kk = 0; kk < a->k; kk++) {
        const float x = row[kk];
        const float *bk = bg + kk * a->b_k_stride;
        for (int64_t j = 0; j < ncols; j++) {
            const float y = bk[(cols ? cols[j] : j) * a->b_n_stride];
            out[j] += (double)x * (double)y;
            if (out_lp) out_lp[j] = out_lp[j] + x * y;
        }
    }
    const float *bias = a->bias ? (const float *)a->bias + g * a->bias_group_stride : NULL;
    for (int64_t j = 0; j < ncols; j++) {
        const float b = bias ? bias[cols ? cols[j] : j] : 0.0f;
        out[j] += b;
        if (out_lp) out_lp[j] = round_stored(a->dtype, out_lp[j] + b);
    }
    return g;
}

int32_t support_grouped_matmul_check_row(const tile_grouped_matmul_args *a, int64_t m,
                                         const int64_t *cols, int64_t ncols, const float *got,
                                         support_grouped_matmul_errors *e) {
    double *want = support_xmalloc((size_t)ncols * sizeof *want);
    float *lp = support_xmalloc((size_t)ncols * sizeof *lp);
    const int32_t g = support_grouped_matmul_reference(a, m, cols, ncols, want, lp);
    for (int64_t j = 0; g >= 0 && j < ncols; j++) {
        const double err = fabs((double)got[j] - want[j]), err_lp = fabs((double)lp[j] - want[j]);
        if (!(err <= e->err)) e->err = isnan(err) ? INFINITY : err;
        if (err_lp > e->err_lp) e->err_lp = err_lp;
        if (fabs(want[j]) > e->scale) e->scale = fabs(want[j]);
        e->checked++;
    }
    free(want);
    free(lp);
    return g;
}

double support_grouped_matmul_allowed(tile_dtype dtype, const support_grouped_matmul_errors *e) {
    const double unit = dtype == TILE_DTYPE_F16 ? 1.0 / (1 << 11) : 1.0 / (1 << 8);
    return 2.0 * e->err_lp + unit / 8.0 * (e->scale > 1.0 ? e->scale : 1.0);
}

/* rows x cols values uniform in [lo, hi) from seed, as stored, with row stride ld; NaN in
 * the padding between rows. */
static float *padded_stored(tile_dtype dtype, int64_t rows, int64_t cols, int64_t ld,
                            uint64_t seed, float lo, float hi) {
    float *v = support_stored_uniform(dtype, (size_t)(rows * cols), seed, lo, hi);
    float *t = support_xmalloc((size_t)(rows * ld) * sizeof *t);
    for (int64_t r = 0; r < rows; r++) {
        memcpy(t + r * ld, v + r * cols, (size_t)cols * sizeof *t);
        for (int64_t c = cols; c < ld; c++) t[r * ld + c] = NAN;
    }
    free(v);
    return t;
}

void support_grouped_matmul_setup(const support_gpu *gpu, const support_grouped_matmul_case *c,
                                  support_grouped_matmul_problem *p) {
    const tile_driver *drv = gpu->drv;
    const tile_dtype dt = c->dtype;
    const size_t elem = support_dtype_size(dt);
    const int32_t G = c->groups;
    const int64_t M = c->total_m, K = c->k, N = c->n, pad = c->pad;
    int32_t *ends = support_xmalloc((size_t)G * sizeof *ends);
    if (c->ends) memcpy(ends, c->ends, (size_t)G * sizeof *ends);
    else support_skewed_group_ends(G, M - c->tail, c->alpha > 0 ? c->alpha : 1.0, c->seed, ends);
    /* row strides: the extent rounded up to 8 elements (16 bytes, what every variant needs),
     * plus pad */
#define STRIDE(extent) (((extent) + 7) / 8 * 8 + pad)
    const int64_t lda = STRIDE(K) + c->row_pad, ldc = STRIDE(N) + c->row_pad, bias_ld = STRIDE(N);
    /* B_g is b_outer rows of b_inner contiguous elements: [k, n], or [n, k] with b_nk */
    const int64_t b_inner = c->b_nk ? K : N, b_outer = c->b_nk ? N : K, b_ld = STRIDE(b_inner);
#undef STRIDE
    float *a = padded_stored(dt, M, K, lda, c->seed + 1, -1.0f, 1.0f);
    float *b = padded_stored(dt, G * b_outer, b_inner, b_ld, c->seed + 2, -1.0f, 1.0f);
    float *bias = padded_stored(dt, G, N, bias_ld, c->seed + 3, -1.0f, 1.0f);
    CUdeviceptr ba, bb, bc, bbias, bends;
    const CUdeviceptr da = support_upload(gpu, dt, a, (size_t)(M * lda), 0, &ba);
    const CUdeviceptr db = support_upload(gpu, dt, b, (size_t)(G * b_outer * b_ld), 0, &bb);
    const CUdeviceptr dbias = support_upload(gpu, dt, bias, (size_t)(G * bias_ld), 0, &bbias);
    p->c_elements = M * ldc;
    p->c_bytes = (size_t)p->c_elements * elem + 256; /* a guard that must stay poisoned */
    SUPPORT_CHECK(gpu, drv->cuMemAlloc(&bc, p->c_bytes));
    SUPPORT_CHECK(gpu, drv->cuMemsetD8(bc, 0xff, p->c_bytes)); /* NaN in f16 and bf16 */
    SUPPORT_CHECK(gpu, drv->cuMemAlloc(&bends, (size_t)G * sizeof *ends));
    SUPPORT_CHECK(gpu, drv->cuMemcpyHtoD(bends, ends, (size_t)G * sizeof *ends));
    const CUdeviceptr bws =
        c->fixed_schedule ? 0 : support_zeroed_workspace(gpu, TILE_GROUPED_MATMUL_WORKSPACE_BYTES);
#define DP(x) ((void *)(uintptr_t)(x))
    p->args = (tile_grouped_matmul_args){
        .struct_size = sizeof p->args, .dtype = dt, .groups = G, .total_m = M, .n = N, .k = K,
        .c = DP(bc), .a = DP(da), .b = DP(db), .ldc = ldc, .lda = lda,
        .b_group_stride = b_outer * b_ld, .b_k_stride = c->b_nk ? 1 : b_ld,
        .b_n_stride = c->b_nk ? b_ld : 1, .bias = c->bias ? DP(dbias) : NULL,
        .bias_group_stride = c->bias ? bias_ld : 0, .offsets = DP(bends),
        .workspace = DP(bws)}; /* 0: NULL, the fixed schedule */
#undef DP
    p->a = a, p->b = b, p->bias = bias, p->ends = ends;
    const CUdeviceptr bufs[] = {ba, bb, bc, bbias, bends, bws};
    memcpy(p->bufs, bufs, sizeof bufs);
    setup_done(gpu);
}

void support_grouped_matmul_free(const support_gpu *gpu, support_grouped_matmul_problem *p) {
    for (size_t i = 0; i < sizeof p->bufs / sizeof *p->bufs; i++)
        if (p->bufs[i]) SUPPORT_CHECK(gpu, gpu->drv->cuMemFree(p->bufs[i]));
    void *host[] = {p->a, p->b, p->bias, p->ends};
    for (size_t i = 0; i < sizeof host / sizeof *host; i++) free(host[i]);
    memset(p, 0, sizeof *p);
}

int64_t support_grouped_matmul_check(const support_gpu *gpu,
                                     const support_grouped_matmul_problem *p, const char *label,
                                     support_grouped_matmul_errors *errors) {
    const tile_grouped_matmul_args *a = &p->args;
    const size_t elem = support_dtype_size(a->dtype);
    const int64_t M = a->total_m, N = a->n, K = a->k, ldc = a->ldc;
    unsigned char *raw = support_xmalloc(p->c_bytes);
    float *c = support_xmalloc((size_t)p->c_elements * sizeof *c);
    SUPPORT_CHECK(gpu, gpu->drv->cuMemcpyDtoH(raw, (CUdeviceptr)(uintptr_t)a->c, p->c_bytes));
    support_unpack(a->dtype, c, raw, (size_t)p->c_elements);
    /* the reference reads the host copies at the device's offsets */
    tile_grouped_matmul_args ref = *a;
    ref.a = p->a, ref.b = p->b, ref.bias = a->bias ? p->bias : NULL, ref.offsets = p->ends;
    const double work = (double)M * (double)N * (double)K;
    /* at most every 63rd row: every tile of 64 rows or more meets the reference, at a row that
     * moves through the tile's positions */
    int64_t step = work <= (double)(1 << 26) ? 1 : (int64_t)(work / (1 << 26)) + 1;
    if (step > 63) step = 63;
    /* the group ends as the kernels clamp them */
    int64_t *ends = support_xmalloc((size_t)a->groups * sizeof *ends);
    for (int64_t g = 0, begin = 0; g < a->groups; g++) {
        const int64_t end = p->ends[g];
        begin = ends[g] = end < begin ? begin : end > M ? M : end;
    }
    support_grouped_matmul_errors e = {0};
    int64_t bad = 0;
    int32_t g = 0;
    int64_t start = 0; /* the first row of group g */
    for (int64_t m = 0; m < M; m++) {
        while (g < a->groups && m >= ends[g]) start = ends[g++];
        const int in_group = g < a->groups;
        const unsigned char *row = raw + (size_t)(m * ldc) * elem;
        /* written where the groups are, finite; poison bytes everywhere else */
        for (int64_t j = 0; j < ldc; j++) {
            const int inside = in_group && j < N;
            const unsigned char *at = row + (size_t)j * elem;
            if (inside ? isfinite(c[m * ldc + j]) : (at[0] == 0xff && at[1] == 0xff)) continue;
            if (bad++ < 5)
                fprintf(stderr, "%s: C[%lld, %lld] %s (%g)\n", label, (long long)m, (long long)j,
                        inside ? "not written or not finite" : "outside the groups was written",
                        (double)c[m * ldc + j]);
        }
        /* against the reference: the sample, and the first and last row of every group */
        if (!in_group || (m % step && m != start && m != ends[g] - 1)) continue;
        support_grouped_matmul_check_row(&ref, m, NULL, N, c + m * ldc, &e);
    }
    free(ends);
    for (size_t i = (size_t)p->c_elements * elem; i < p->c_bytes; i++)
        if (raw[i] != 0xff) {
            if (bad++ < 5)
                fprintf(stderr, "%s: wrote %zu bytes past C\n", label,
                        i - (size_t)p->c_elements * elem);
            break;
        }
    bad += support_workspace_not_zeroed(gpu, a->workspace, TILE_GROUPED_MATMUL_WORKSPACE_BYTES,
                                        label);
    const double allowed = support_grouped_matmul_allowed(a->dtype, &e);
    if (!(e.err <= allowed)) {
        bad++;
        fprintf(stderr, "%s: max error %.3g exceeds %.3g (2 x the fp32-accumulated reference's "
                        "%.3g + slack; %lld elements checked)\n",
                label, e.err, allowed, e.err_lp, (long long)e.checked);
    }
    if (errors) *errors = e;
    free(raw);
    free(c);
    return bad;
}

int64_t support_grouped_matmul_run(const support_gpu *gpu, const support_grouped_matmul_case *c,
                                   tile_status *status, support_grouped_matmul_errors *errors) {
    support_grouped_matmul_problem p;
    support_grouped_matmul_setup(gpu, c, &p);
    const tile_status st = c->variant < 0 ? tile_grouped_matmul(&p.args, NULL)
                                          : tile_grouped_matmul_variant(c->variant, &p.args, NULL);
    *status = st;
    int64_t bad = -1;
    if (st == TILE_STATUS_SUCCESS) {
        SUPPORT_CHECK(gpu, gpu->drv->cuCtxSynchronize());
        char label[200];
        snprintf(label, sizeof label, "%s %s G%d %lldx%lldx%lld (MxKxN) B %s%s pad %lld%s",
                 c->variant < 0 ? "dispatch" : variant_name(c->variant),
                 tile_dtype_string(c->dtype), c->groups, (long long)c->total_m, (long long)c->k,
                 (long long)c->n, c->b_nk ? "[g,n,k]" : "[g,k,n]", c->bias ? " bias" : "",
                 (long long)c->pad, c->fixed_schedule ? " fixed schedule" : "");
        bad = support_grouped_matmul_check(gpu, &p, label, errors);
    }
    support_grouped_matmul_free(gpu, &p);
    return bad;
}
