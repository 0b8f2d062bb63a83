/*
 * fusedops: the command-line tool.
 *
 *   fusedops list [--op OP] [--dtype D]         embedded variants, archs and parameters
 *   fusedops explain softmax --dtype D --shape RxC [--arch sm_NN] [--align BYTES]
 *                    [--ld-x N] [--ld-y N]       the variant dispatch picks, and why
 *   fusedops check [--dtype D] [--variant NAME] [--quick]
 *                                                every variant vs a float64 CPU reference
 *   fusedops bench softmax --dtype D --shape RxC [--variant NAME] [--log] [--iters N]
 *                                                GB/s for one shape, beside the copy ceiling
 *   fusedops version
 *
 * Exit codes: 0 success, 1 a check failed or a call failed, 2 usage, 3 no GPU.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fusedops.h"
#include "support.h"

enum { EXIT_CHECK_FAILED = 1, EXIT_USAGE = 2, EXIT_NO_GPU = 3 };

typedef struct options {
    const char *op, *variant;
    int dtype; /* -1: all */
    int64_t rows, cols, ld_x, ld_y;
    int32_t arch, align, iters, quick, log_softmax;
} options;

static int usage(const char *msg) {
    if (msg) fprintf(stderr, "fusedops: %s\n", msg);
    fputs("usage:\n"
          "  fusedops list [--op OP] [--dtype f32|f16|bf16]\n"
          "  fusedops explain softmax --dtype D --shape ROWSxCOLS [--arch sm_NN] [--align BYTES]"
          " [--ld-x N] [--ld-y N]\n"
          "  fusedops check [--dtype D] [--variant NAME] [--quick]\n"
          "  fusedops bench softmax --dtype D --shape ROWSxCOLS [--variant NAME] [--log] "
          "[--iters N]\n"
          "  fusedops version\n",
          stderr);
    return EXIT_USAGE;
}

static int parse_dtype(const char *s) {
    for (int d = 0; d < TILE_DTYPE_COUNT_; d++)
        if (!strcmp(s, tile_dtype_string((tile_dtype)d))) return d;
    return -2;
}

static int parse_options(int argc, char **argv, int first, options *o) {
    memset(o, 0, sizeof *o);
    o->dtype = -1;
    o->align = 256;
    o->iters = 200;
    for (int i = first; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--quick")) o->quick = 1;
        else if (!strcmp(a, "--log")) o->log_softmax = 1;
        else if (!v) return usage("option needs a value");
        else if (!strcmp(a, "--op")) o->op = argv[++i];
        else if (!strcmp(a, "--variant")) o->variant = argv[++i];
        else if (!strcmp(a, "--dtype")) {
            if ((o->dtype = parse_dtype(argv[++i])) < 0) return usage("unknown --dtype");
        } else if (!strcmp(a, "--shape")) {
            char tail;
            long long r, c;
            if (sscanf(argv[++i], "%lldx%lld%c", &r, &c, &tail) != 2)
                return usage("--shape is ROWSxCOLS, e.g. 4096x4096");
            o->rows = r;
            o->cols = c;
        } else if (!strcmp(a, "--arch")) {
            if (sscanf(argv[++i], "sm_%" SCNd32, &o->arch) != 1) return usage("--arch is sm_NN");
        } else if (!strcmp(a, "--align")) o->align = atoi(argv[++i]);
        else if (!strcmp(a, "--iters")) o->iters = atoi(argv[++i]);
        else if (!strcmp(a, "--ld-x")) o->ld_x = atoll(argv[++i]);
        else if (!strcmp(a, "--ld-y")) o->ld_y = atoll(argv[++i]);
        else return usage("unknown option");
    }
    if (!o->ld_x) o->ld_x = o->cols;
    if (!o->ld_y) o->ld_y = o->cols;
    return 0;
}

static int open_gpu(support_gpu *gpu) {
    const char *why = "";
    if (support_gpu_open(gpu, &why) == 0) return 0;
    fprintf(stderr, "fusedops: no GPU: %s\n", why);
    return -1;
}

static int cmd_list(const options *o) {
    printf("%-40s %-8s %-5s %-9s %7s %7s %9s %5s  %s\n", "variant", "op", "dtype", "arch",
           "threads", "cluster", "max_cols", "align", "params");
    int shown = 0;
    for (int32_t i = 0; i < tile_variant_count(); i++) {
        tile_variant_info v = {.struct_size = sizeof v};
        if (tile_variant_get(i, &v) != TILE_STATUS_SUCCESS) return EXIT_CHECK_FAILED;
        if ((o->op && strcmp(o->op, v.op)) || (o->dtype >= 0 && (int)v.dtype != o->dtype))
            continue;
        char arch[24], cols[24];
        if (v.arch_max) snprintf(arch, sizeof arch, "sm_%d-%d", v.arch_min, v.arch_max);
        else snprintf(arch, sizeof arch, "sm_%d+", v.arch_min);
        if (v.max_cols) snprintf(cols, sizeof cols, "%lld", (long long)v.max_cols);
        else snprintf(cols, sizeof cols, "any");
        printf("%-40s %-8s %-5s %-9s %7d %7d %9s %5d  %s\n", v.name, v.op,
               tile_dtype_string(v.dtype), arch, v.threads, v.cluster, cols, v.align_bytes,
               v.params);
        shown++;
    }
    printf("%d of %d variants\n", shown, tile_variant_count());
    return 0;
}

static int cmd_explain(int argc, char **argv) {
    if (argc < 3 || strcmp(argv[2], "softmax")) return usage("explain takes an op: softmax");
    options o;
    if (parse_options(argc, argv, 3, &o)) return EXIT_USAGE;
    if (o.dtype < 0 || !o.rows) return usage("explain needs --dtype and --shape");
    tile_decision d = {.struct_size = sizeof d};
    if (o.arch == 0) {
        support_gpu gpu;
        if (open_gpu(&gpu)) {
            fprintf(stderr, "fusedops: give --arch sm_NN to explain for a GPU that is not here\n");
            return EXIT_NO_GPU;
        }
    }
    tile_status s = tile_softmax_explain((tile_dtype)o.dtype, o.rows, o.cols, o.ld_y, o.ld_x,
                                         o.align, o.arch, &d);
    if (s != TILE_STATUS_SUCCESS) {
        fprintf(stderr, "fusedops: %s: %s\n", tile_status_string(s), tile_last_error());
        return EXIT_CHECK_FAILED;
    }
    tile_variant_info v = {.struct_size = sizeof v};
    tile_variant_get(d.variant, &v);
    printf("softmax %s %lldx%lld (ld_x %lld, ld_y %lld, %d-byte aligned) on sm_%d\n",
           tile_dtype_string((tile_dtype)o.dtype), (long long)o.rows, (long long)o.cols,
           (long long)o.ld_x, (long long)o.ld_y, o.align, d.arch);
    printf("  variant:  %s\n  params:   %s\n  rule:     %s\n  why:      %s\n  eligible: %d "
           "variants\n",
           v.name, v.params, tile_rule_string(d.rule), d.reason, d.eligible);
    return 0;
}

/* Shapes a variant is checked on: ragged rows and columns around its capacity, strided rows,
 * and an offset pointer for variants that take element-aligned data. */
static int check_variant(const support_gpu *gpu, int32_t index, const tile_variant_info *v,
                         int quick, int *cases) {
    int64_t widths[8];
    int n = 0;
    int64_t cap = v->max_cols ? v->max_cols : (quick ? 70001 : (1 << 20) + 7);
    widths[n++] = cap;
    if (cap > 1) widths[n++] = cap - 1;
    widths[n++] = cap / 2 + 3 <= cap ? cap / 2 + 3 : cap;
    widths[n++] = 1;
    if (cap >= 17) widths[n++] = 17;
    if (!v->max_cols) widths[n++] = 781;
    const int64_t row_counts[] = {1, 3, 97};
    int failures = 0;
    for (int w = 0; w < n; w++)
        for (int r = 0; r < 3; r++)
            for (int log = 0; log < 2; log++) {
                int64_t rows = row_counts[r];
                if (widths[w] > 70000 && rows > 3) continue; /* keep the CPU reference quick */
                const int64_t elems_per_align = v->align_bytes / (int64_t)support_dtype_size(v->dtype);
                support_softmax_case c = {
                    .variant = index, .dtype = v->dtype, .log_softmax = log, .rows = rows,
                    .cols = widths[w],
                    /* strided rows that keep the variant's alignment */
                    .pad_x = (r == 1) ? 3 * elems_per_align : 0,
                    .pad_y = (r == 1) ? elems_per_align : 0,
                    .offset = elems_per_align == 1 ? 1 : 0,
                    .seed = 1000u * (uint64_t)index + 10u * (uint64_t)w + (uint64_t)r};
                tile_status s;
                double err = 0;
                int64_t bad = support_softmax_run(gpu, &c, &s, &err);
                (*cases)++;
                if (bad) {
                    failures++;
                    fprintf(stderr, "FAIL %s %s %lldx%lld: %s\n", v->name,
                            log ? "log_softmax" : "softmax", (long long)rows, (long long)c.cols,
                            bad < 0 ? tile_last_error() : "mismatches above");
                    (void)s;
                }
            }
    return failures;
}

static int cmd_check(int argc, char **argv) {
    options o;
    if (parse_options(argc, argv, 2, &o)) return EXIT_USAGE;
    support_gpu gpu;
    if (open_gpu(&gpu)) return EXIT_NO_GPU;
    printf("checking on %s (sm_%d)\n", gpu.name, gpu.arch);
    int variants = 0, failed = 0, cases = 0, skipped = 0;
    for (int32_t i = 0; i < tile_variant_count(); i++) {
        tile_variant_info v = {.struct_size = sizeof v};
        tile_variant_get(i, &v);
        if ((o.variant && strcmp(o.variant, v.name)) || (o.dtype >= 0 && (int)v.dtype != o.dtype))
            continue;
        if (gpu.arch < v.arch_min || (v.arch_max && gpu.arch > v.arch_max)) {
            skipped++;
            continue;
        }
        int f = check_variant(&gpu, i, &v, o.quick, &cases);
        variants++;
        if (f) failed++;
        printf("%-40s %s\n", v.name, f ? "FAIL" : "ok");
    }
    printf("%d variants checked (%d cases), %d failed, %d not for this arch\n", variants, cases,
           failed, skipped);
    support_gpu_close(&gpu);
    return failed ? EXIT_CHECK_FAILED : 0;
}

/* Median of `iters` timed launches, inputs rotated over enough buffers to defeat L2. */
static int cmd_bench(int argc, char **argv) {
    if (argc < 3 || strcmp(argv[2], "softmax")) return usage("bench takes an op: softmax");
    options o;
    if (parse_options(argc, argv, 3, &o)) return EXIT_USAGE;
    if (o.dtype < 0 || !o.rows) return usage("bench needs --dtype and --shape");
    support_gpu gpu;
    if (open_gpu(&gpu)) return EXIT_NO_GPU;
    const tile_driver *d = gpu.drv;
    int32_t variant = -1;
    if (o.variant && (variant = tile_variant_find(o.variant)) < 0)
        return usage("unknown --variant (see fusedops list)");
    const size_t elem = support_dtype_size((tile_dtype)o.dtype);
    const size_t bytes = (size_t)(o.rows * o.cols) * elem;
    /* Enough copies that each launch reads data not left in L2 by the previous one. */
    int copies = (int)(256u * 1024 * 1024 / bytes) + 1;
    if (copies > 8) copies = 8;
    CUdeviceptr x[8], y;
    float *host = malloc(bytes / elem * sizeof(float));
    void *packed = malloc(bytes);
    support_fill_uniform(host, bytes / elem, 7, -8.0f, 8.0f);
    support_pack((tile_dtype)o.dtype, packed, host, bytes / elem);
    for (int i = 0; i < copies; i++) {
        SUPPORT_CHECK(&gpu, d->cuMemAlloc(&x[i], bytes));
        SUPPORT_CHECK(&gpu, d->cuMemcpyHtoD(x[i], packed, bytes));
    }
    SUPPORT_CHECK(&gpu, d->cuMemAlloc(&y, bytes));
    CUevent start, stop;
    SUPPORT_CHECK(&gpu, d->cuEventCreate(&start, CU_EVENT_DEFAULT));
    SUPPORT_CHECK(&gpu, d->cuEventCreate(&stop, CU_EVENT_DEFAULT));
    float *times = malloc((size_t)o.iters * sizeof *times);
    for (int pass = 0; pass < 2; pass++) { /* pass 0: softmax; pass 1: the copy ceiling */
        for (int it = -10; it < o.iters; it++) {
            const void *xp = (const void *)(uintptr_t)x[(it + 10) % copies];
            void *yp = (void *)(uintptr_t)y;
            SUPPORT_CHECK(&gpu, d->cuEventRecord(start, NULL));
            tile_status s = TILE_STATUS_SUCCESS;
            if (pass == 1) SUPPORT_CHECK(&gpu, d->cuMemcpyDtoD(y, (CUdeviceptr)(uintptr_t)xp, bytes));
            else if (variant >= 0)
                s = tile_softmax_variant(variant, o.log_softmax, (tile_dtype)o.dtype, yp, xp,
                                         o.rows, o.cols, o.cols, o.cols, NULL);
            else
                s = (o.log_softmax ? tile_log_softmax : tile_softmax)((tile_dtype)o.dtype, yp, xp,
                                                                      o.rows, o.cols, o.cols,
                                                                      o.cols, NULL);
            if (s != TILE_STATUS_SUCCESS) {
                fprintf(stderr, "fusedops: %s: %s\n", tile_status_string(s), tile_last_error());
                return EXIT_CHECK_FAILED;
            }
            SUPPORT_CHECK(&gpu, d->cuEventRecord(stop, NULL));
            SUPPORT_CHECK(&gpu, d->cuEventSynchronize(stop));
            if (it >= 0) SUPPORT_CHECK(&gpu, d->cuEventElapsedTime(&times[it], start, stop));
        }
        /* median by insertion sort: iters is small */
        for (int i = 1; i < o.iters; i++)
            for (int j = i; j > 0 && times[j - 1] > times[j]; j--) {
                float t = times[j];
                times[j] = times[j - 1];
                times[j - 1] = t;
            }
        double ms = times[o.iters / 2];
        double gbs = 2.0 * (double)bytes / (ms * 1e-3) / 1e9; /* reads x once, writes y once */
        static double kernel_gbs;
        if (pass == 0) {
            kernel_gbs = gbs;
            printf("%s %s %lldx%lld on %s: %.4f ms, %.1f GB/s\n",
                   o.log_softmax ? "log_softmax" : "softmax", tile_dtype_string((tile_dtype)o.dtype),
                   (long long)o.rows, (long long)o.cols, gpu.name, ms, gbs);
        } else {
            printf("device-to-device copy of the same bytes: %.4f ms, %.1f GB/s; softmax reaches "
                   "%.1f%% of it\n",
                   ms, gbs, 100.0 * kernel_gbs / gbs);
        }
    }
    for (int i = 0; i < copies; i++) d->cuMemFree(x[i]);
    d->cuMemFree(y);
    free(times);
    free(host);
    free(packed);
    support_gpu_close(&gpu);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) return usage(NULL);
    const char *cmd = argv[1];
    if (!strcmp(cmd, "version")) {
        int32_t v = tile_version();
        printf("libfusedops %d.%d.%d (%d variants)\n", v / 10000, v / 100 % 100, v % 100,
               tile_variant_count());
        return 0;
    }
    if (!strcmp(cmd, "list")) {
        options o;
        if (parse_options(argc, argv, 2, &o)) return EXIT_USAGE;
        return cmd_list(&o);
    }
    if (!strcmp(cmd, "explain")) return cmd_explain(argc, argv);
    if (!strcmp(cmd, "check")) return cmd_check(argc, argv);
    if (!strcmp(cmd, "bench")) return cmd_bench(argc, argv);
    return usage("unknown command");
}
