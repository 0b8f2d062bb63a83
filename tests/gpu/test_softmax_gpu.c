/* Every softmax variant compiled for this GPU's architecture, and the dispatcher, against the
 * float64 reference, on ragged shapes, strided rows and unaligned pointers, with the output
 * poisoned (NaN) beforehand. Plus what only a device can show: in-place calls, guard bytes
 * around the output, per-variant errors (dtype, width, alignment, arch), a thread without a
 * context, and a CUDA graph capture.
 *
 * Exits 77 (ctest SKIP_RETURN_CODE) where there is no GPU, so a skip never reads as a pass.
 * FUSEDOPS_TEST_VARIANT=substring (or a glob over the whole name: support_variant_selected)
 * limits the per-variant part to matching names.
 *
 * FUSEDOPS_TEST_MAX_ROWS=N scales the per-variant part down for compute-sanitizer, whose cost
 * grows with the work a case launches: a case of more than N rows runs with N rows, the same
 * columns, the same stride rules and its reference computed on that shape (a real check, on
 * fewer rows). The dispatcher's cases keep their shapes. What a cap of N >= 97 still exercises
 * (301 recommended, docs/reliability.md): only the 1823x781 case of the variants of any width
 * (loop, loop cluster) has more than 97 rows, so every other case runs as without a cap, the
 * programs of 2 to 32 rows and their ragged last program at 97 rows included. Persistent
 * variants (persistent, pipe, streamed) launch min(rows, SMs x resident programs per SM)
 * programs, at least one per SM (132 on an H200), so in those cases no program walks a second
 * row; each such variant also gets a multi-row walk case (check_multi_row_walk: every program
 * at least 3 rows, the register buffers or ring slots and mbarrier phases reused), which the cap
 * leaves uncapped (a line at the start says so when a cap is set). The staged and one-pass
 * cluster variants' wide cases (up to 262144 columns: their cost) have 3 rows, so a cap
 * leaves them as they are; sanitizer runs split those variants into groups instead. */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fusedops.h"
#include "support.h"

static support_gpu gpu;
static int cases_run, case_failures;
static int64_t max_rows; /* FUSEDOPS_TEST_MAX_ROWS, 0 for no cap */

#define BIG_COLS ((int64_t)(1 << 20) + 7)
#define GUARD 256

/* ---------------------------------------------------------------- one case */

static int run_case(const char *label, const support_softmax_case *c) {
    tile_status s = TILE_STATUS_SUCCESS;
    double max_err = 0;
    int64_t bad = support_softmax_run(&gpu, c, &s, &max_err);
    cases_run++;
    if (bad == 0) return 0;
    case_failures++;
    if (bad < 0)
        fprintf(stderr, "FAIL %s %s %s %lldx%lld pad %lld/%lld offset %lld: %s: %s\n", label,
                c->log_softmax ? "log_softmax" : "softmax", tile_dtype_string(c->dtype),
                (long long)c->rows, (long long)c->cols, (long long)c->pad_x,
                (long long)c->pad_y, (long long)c->offset, tile_status_string(s),
                tile_last_error());
    else
        fprintf(stderr,
                "FAIL %s %s %s %lldx%lld pad %lld/%lld offset %lld: %lld mismatches (max error "
                "%.3g)\n",
                label, c->log_softmax ? "log_softmax" : "softmax", tile_dtype_string(c->dtype),
                (long long)c->rows, (long long)c->cols, (long long)c->pad_x, (long long)c->pad_y,
                (long long)c->offset, (long long)bad, max_err);
    return 1;
}

/* Runs rows x cols (with pads and offset) as softmax and log-softmax. */
static int run_both(const char *label, int32_t variant, tile_dtype dtype, int64_t rows,
                    int64_t cols, int64_t pad_x, int64_t pad_y, int64_t offset, uint64_t seed) {
    int failed = 0;
    for (int log = 0; log < 2; log++) {
        support_softmax_case c = {.variant = variant, .dtype = dtype, .log_softmax = log,
                                  .rows = rows, .cols = cols, .pad_x = pad_x, .pad_y = pad_y,
                                  .offset = offset, .seed = seed * 2 + (uint64_t)log};
        failed |= run_case(label, &c);
    }
    return failed;
}

/* ---------------------------------------------------------------- guarded and in-place runs */

static tile_status launch(int32_t variant, int log, tile_dtype dtype, void *y, const void *x,
                          int64_t rows, int64_t cols, int64_t ld_y, int64_t ld_x,
                          tile_stream stream) {
    if (variant >= 0)
        return tile_softmax_variant(variant, log, dtype, y, x, rows, cols, ld_y, ld_x, stream);
    return (log ? tile_log_softmax : tile_softmax)(dtype, y, x, rows, cols, ld_y, ld_x, stream);
}

/* One case with GUARD poisoned bytes before and after y: nothing outside y's rows x cols may
 * change. In place (y == x, ld == cols + pad) the row padding must keep x's bytes; otherwise it
 * must stay poisoned. Returns the number of problems. */
static int64_t guarded_run(int32_t variant, tile_dtype dtype, int log, int64_t rows, int64_t cols,
                           int64_t pad, int in_place, uint64_t seed) {
    const tile_driver *d = gpu.drv;
    const size_t elem = support_dtype_size(dtype);
    const int64_t ld = cols + pad;
    const size_t n = (size_t)(rows * ld), bytes = n * elem, total = bytes + 2 * GUARD;
    float *x = support_xmalloc(n * sizeof *x), *y = support_xmalloc(n * sizeof *y);
    unsigned char *x_store = support_xmalloc(bytes), *all = support_xmalloc(total);
    double *want = support_xmalloc((size_t)(rows * cols) * sizeof *want);
    support_fill_uniform(x, n, seed, -8.0f, 8.0f);
    support_pack(dtype, x_store, x, n);
    support_unpack(dtype, x, x_store, n);
    support_softmax_reference(want, x, rows, cols, ld, log);

    CUdeviceptr buf, dx = 0;
    SUPPORT_CHECK(&gpu, d->cuMemAlloc(&buf, total));
    SUPPORT_CHECK(&gpu, d->cuMemsetD8(buf, 0xff, total));
    const CUdeviceptr dy = buf + GUARD;
    if (in_place) {
        SUPPORT_CHECK(&gpu, d->cuMemcpyHtoD(dy, x_store, bytes));
    } else {
        SUPPORT_CHECK(&gpu, d->cuMemAlloc(&dx, bytes));
        SUPPORT_CHECK(&gpu, d->cuMemcpyHtoD(dx, x_store, bytes));
    }
    void *yp = (void *)(uintptr_t)dy;
    const void *xp = in_place ? yp : (const void *)(uintptr_t)dx;
    tile_status s = launch(variant, log, dtype, yp, xp, rows, cols, ld, ld, NULL);
    int64_t problems = 0;
    char label[160];
    tile_variant_info info = {.struct_size = sizeof info};
    snprintf(label, sizeof label, "%s %s%s %s %lldx%lld ld %lld",
             variant >= 0 && tile_variant_get(variant, &info) == TILE_STATUS_SUCCESS ? info.name
                                                                                     : "dispatch",
             in_place ? "in-place " : "", log ? "log_softmax" : "softmax",
             tile_dtype_string(dtype), (long long)rows, (long long)cols, (long long)ld);
    if (s != TILE_STATUS_SUCCESS) {
        fprintf(stderr, "%s: %s: %s\n", label, tile_status_string(s), tile_last_error());
        problems = 1;
    } else {
        SUPPORT_CHECK(&gpu, d->cuCtxSynchronize());
        SUPPORT_CHECK(&gpu, d->cuMemcpyDtoH(all, buf, total));
        for (size_t i = 0; i < GUARD; i++)
            if (all[i] != 0xff || all[GUARD + bytes + i] != 0xff) {
                if (problems < 5)
                    fprintf(stderr, "%s: guard byte %s+%zu written\n", label,
                            all[i] != 0xff ? "before" : "after", i);
                problems++;
            }
        const unsigned char *ybytes = all + GUARD;
        for (int64_t r = 0; r < rows; r++) /* row padding */
            for (int64_t c = cols; c < ld; c++) {
                const size_t at = (size_t)(r * ld + c) * elem;
                int ok = 1;
                for (size_t b = 0; b < elem; b++)
                    ok &= ybytes[at + b] == (in_place ? x_store[at + b] : 0xff);
                if (!ok) {
                    if (problems < 5)
                        fprintf(stderr, "%s: padding [%lld, %lld] written\n", label,
                                (long long)r, (long long)c);
                    problems++;
                }
            }
        support_unpack(dtype, y, ybytes, n);
        double atol, rtol;
        support_tolerance(dtype, log, &atol, &rtol);
        problems += support_compare(label, y, ld, want, rows, cols, atol, rtol, NULL);
    }
    if (dx) SUPPORT_CHECK(&gpu, d->cuMemFree(dx));
    SUPPORT_CHECK(&gpu, d->cuMemFree(buf));
    free(x);
    free(y);
    free(x_store);
    free(all);
    free(want);
    cases_run++;
    if (problems) case_failures++;
    return problems;
}

/* ---------------------------------------------------------------- every variant */

/* A variant case: with rows > 1 the row strides must keep the variant's alignment, so ragged
 * widths get their rows padded up to a multiple of `epa` elements (plus `pad_x`, `pad_y`,
 * multiples of epa themselves). */
static int run_variant(const tile_variant_info *v, int32_t index, int64_t epa, int64_t rows,
                       int64_t cols, int64_t pad_x, int64_t pad_y, int64_t offset, uint64_t seed) {
    rows = support_cap_rows(rows, max_rows);
    const int64_t round = rows > 1 ? (epa - cols % epa) % epa : 0;
    return run_both(v->name, index, v->dtype, rows, cols, round + pad_x, round + pad_y, offset,
                    seed);
}

static int check_variant(int32_t index, const tile_variant_info *v) {
    const tile_dtype dt = v->dtype;
    const int64_t elem = (int64_t)support_dtype_size(dt);
    const int64_t epa = v->align_bytes / elem; /* elements per alignment unit */
    const int64_t cap = v->max_cols;
    const uint64_t seed = 7919u * (uint64_t)index;
    int failed = 0;
    /* ragged shapes */
    failed |= run_variant(v, index, epa, 1, 1, 0, 0, 0, seed + 1);
    if (!cap || cap >= 17) failed |= run_variant(v, index, epa, 1, 17, 0, 0, 0, seed + 2);
    if (!cap || cap >= 781) failed |= run_variant(v, index, epa, 97, 781, 0, 0, 0, seed + 3);
    if (cap) {
        failed |= run_variant(v, index, epa, 3, cap, 0, 0, 0, seed + 4);
        failed |= run_variant(v, index, epa, 3, cap - 1, 0, 0, 0, seed + 5);
        failed |= run_variant(v, index, epa, 3, cap / 2 + 3, 0, 0, 0, seed + 6);
        failed |= run_variant(v, index, epa, 1, cap - 1, 0, 0, 0, seed + 7);
        /* full multi-row programs and a ragged last program */
        if (cap <= 2048) {
            failed |= run_variant(v, index, epa, 97, cap, 0, 0, 0, seed + 8);
            failed |= run_variant(v, index, epa, 97, cap / 2 + 1, 0, 0, 0, seed + 9);
        }
    } else {
        /* rows of any width: several column tiles, ragged last tile */
        failed |= run_variant(v, index, epa, 3, 70001, 0, 0, 0, seed + 4);
        failed |= run_variant(v, index, epa, 1823, 781, 0, 0, 0, seed + 5);
        failed |= run_variant(v, index, epa, 2, BIG_COLS, 0, 0, 0, seed + 6);
        failed |= run_variant(v, index, epa, 5, 4096 * 8 + 1, 0, 0, 0, seed + 7);
    }
    /* strided rows that keep the variant's alignment */
    const int64_t w = cap ? (cap < 781 ? cap : 781) : 1000;
    failed |= run_variant(v, index, epa, 5, w, 3 * epa, epa, 0, seed + 10);
    /* pointers one element off a 256-byte boundary, odd strides: scalar variants only */
    if (v->align_bytes == elem) {
        const int64_t c = cap ? cap - 1 : 781;
        failed |= run_variant(v, index, epa, 3, c > 0 ? c : 1, 1, 2, 1, seed + 11);
    }
    /* guard bytes around y */
    if (guarded_run(index, dt, 0, support_cap_rows(3, max_rows), cap ? cap : 5000, 0, 0,
                    seed + 12))
        failed = 1;
    return failed;
}

/* Persistent, pipe and streamed variants: one case whose programs each walk several rows (the
 * register double buffer, or the ring slots and their mbarrier phases, reused row after row),
 * which no case above reaches (they launch a program per SM at least, and see at most 97 rows).
 * Rows: WALK_ROWS_PER_PROGRAM x SMs x an upper bound of the programs resident per SM
 * (support_persistent_walk_rows: the library's own occupancy is not exported), + 7 for a
 * ragged end: at least 3 rows a program, more where registers keep fewer programs resident
 * than the bound. FUSEDOPS_TEST_MAX_ROWS does not apply: fewer rows would take the walk away,
 * which is the case's point. Columns: a quarter of the variant's width + 3, ragged (odd, so
 * a partial last vector where the variant is vector wide; the row stride is padded to the
 * alignment), to keep the host's float64 reference at these row counts (up to ~13000) to
 * a few seconds for the 46 such variants of sm_90 (~28 ns an element on a 2-core build
 * machine); full-width rows have their own cases above. One of softmax and log-softmax per
 * variant, alternating, as the walk is the same for both. */
#define WALK_ROWS_PER_PROGRAM 3

/* One more walk case of a streamed variant: case c with `walk` rows a program, `cols` columns
 * (row strides padded to the alignment) and the other of softmax and log-softmax. */
static int run_streamed_walk(const tile_variant_info *v, support_softmax_case *c, int64_t walk,
                             int64_t cols, const char *what) {
    const int64_t epa = v->align_bytes / (int64_t)support_dtype_size(v->dtype);
    char label[160];
    c->rows = support_persistent_walk_rows(&gpu, v, walk);
    c->cols = cols;
    c->pad_x = c->pad_y = (epa - cols % epa) % epa;
    c->log_softmax = !c->log_softmax;
    snprintf(label, sizeof label, "%s %s", v->name, what);
    return run_case(label, c);
}

static int check_multi_row_walk(int32_t index, const tile_variant_info *v) {
    const int64_t elem = (int64_t)support_dtype_size(v->dtype);
    const int64_t epa = v->align_bytes / elem;
    const int64_t rows = support_persistent_walk_rows(&gpu, v, WALK_ROWS_PER_PROGRAM);
    const int64_t cols = v->max_cols / 4 + 3;
    const int64_t round = (epa - cols % epa) % epa;
    char label[160];
    snprintf(label, sizeof label, "%s multi-row walk (%d programs per SM at most)", v->name,
             support_programs_per_sm_bound(&gpu, v));
    support_softmax_case c = {.variant = index, .dtype = v->dtype, .log_softmax = index % 2,
                              .rows = rows, .cols = cols, .pad_x = round, .pad_y = round,
                              .offset = 0, .seed = 7919u * (uint64_t)index + 13};
    int failed = run_case(label, &c);
    if (strstr(v->name, "_streamed_")) {
        /* Rows as wide as the ring (less one column, a partial last vector), so that every
         * slot a row's second pass frees copies the next row's tile while the row's other
         * tiles are still read; every program walks at least 2 such rows. */
        failed |= run_streamed_walk(v, &c, 2, v->max_cols - 1, "full-width walk");
        /* Rows of 5 of the family's 4096-column tiles, the last of one column (under one
         * vector: a zero-byte copy whose arrival alone completes its slot's phase): in rings
         * of 8 and 12 slots, each row starts at another slot and some cross the ring's end,
         * where the phase parity flips inside a row. */
        failed |= run_streamed_walk(v, &c, WALK_ROWS_PER_PROGRAM, 4 * 4096 + 1,
                                    "walk across the ring's end");
    }
    return failed;
}

/* Errors only a device can produce, per variant: nothing is written. */
static int check_variant_errors(int32_t index, const tile_variant_info *v) {
    const tile_driver *d = gpu.drv;
    const size_t elem = support_dtype_size(v->dtype);
    const int64_t cols = v->max_cols ? v->max_cols : 64;
    const size_t bytes = (size_t)(4 * (cols + 8)) * elem + 256;
    CUdeviceptr dx, dy;
    SUPPORT_CHECK(&gpu, d->cuMemAlloc(&dx, bytes));
    SUPPORT_CHECK(&gpu, d->cuMemAlloc(&dy, bytes));
    SUPPORT_CHECK(&gpu, d->cuMemsetD8(dx, 0, bytes));
    SUPPORT_CHECK(&gpu, d->cuMemsetD8(dy, 0xff, bytes));
    void *y = (void *)(uintptr_t)dy;
    const void *x = (const void *)(uintptr_t)dx;
    int failed = 0;
#define EXPECT(call, want, needle)                                                            \
    do {                                                                                      \
        tile_status s_ = (call);                                                              \
        if (s_ != (want) || !strstr(tile_last_error(), (needle))) {                           \
            fprintf(stderr, "FAIL %s: %s gave %s (%s), want %s mentioning \"%s\"\n", v->name, \
                    #call, tile_status_string(s_), tile_last_error(),                         \
                    tile_status_string(want), (needle));                                      \
            failed = 1;                                                                       \
        }                                                                                     \
    } while (0)
    const tile_dtype other = v->dtype == TILE_DTYPE_F32 ? TILE_DTYPE_F16 : TILE_DTYPE_F32;
    EXPECT(tile_softmax_variant(index, 0, other, y, x, 4, cols, cols + 8, cols + 8, NULL),
           TILE_STATUS_NOT_SUPPORTED, v->name);
    if (v->max_cols)
        EXPECT(tile_softmax_variant(index, 1, v->dtype, y, x, 1, v->max_cols + 1, v->max_cols + 1,
                                    v->max_cols + 1, NULL),
               TILE_STATUS_NOT_SUPPORTED, "cols");
    if ((size_t)v->align_bytes > elem) {
        /* a pointer aligned to the element only */
        EXPECT(tile_softmax_variant(index, 0, v->dtype, (char *)y + elem, x, 4, cols, cols + 8,
                                    cols + 8, NULL),
               TILE_STATUS_MISALIGNED, v->name);
        /* a row stride aligned to the element only */
        EXPECT(tile_softmax_variant(index, 0, v->dtype, y, x, 4, cols - 1, cols - 1, cols - 1,
                                    NULL),
               TILE_STATUS_MISALIGNED, "aligned");
    }
#undef EXPECT
    unsigned char *back = support_xmalloc(bytes);
    SUPPORT_CHECK(&gpu, d->cuCtxSynchronize());
    SUPPORT_CHECK(&gpu, d->cuMemcpyDtoH(back, dy, bytes));
    for (size_t i = 0; i < bytes; i++)
        if (back[i] != 0xff) {
            fprintf(stderr, "FAIL %s: a failed call wrote y at byte %zu\n", v->name, i);
            failed = 1;
            break;
        }
    free(back);
    SUPPORT_CHECK(&gpu, d->cuMemFree(dx));
    SUPPORT_CHECK(&gpu, d->cuMemFree(dy));
    return failed;
}

/* A variant for another architecture answers ARCH_MISMATCH. */
static int check_arch_mismatch(int32_t index, const tile_variant_info *v) {
    const tile_driver *d = gpu.drv;
    CUdeviceptr dx, dy;
    const size_t bytes = 4096;
    SUPPORT_CHECK(&gpu, d->cuMemAlloc(&dx, bytes));
    SUPPORT_CHECK(&gpu, d->cuMemAlloc(&dy, bytes));
    tile_status s = tile_softmax_variant(index, 0, v->dtype, (void *)(uintptr_t)dy,
                                         (const void *)(uintptr_t)dx, 1, 16, 16, 16, NULL);
    SUPPORT_CHECK(&gpu, d->cuMemFree(dx));
    SUPPORT_CHECK(&gpu, d->cuMemFree(dy));
    if (s == TILE_STATUS_ARCH_MISMATCH && strstr(tile_last_error(), v->name)) return 0;
    fprintf(stderr, "FAIL %s on sm_%d: %s (%s), want arch mismatch\n", v->name, gpu.arch,
            tile_status_string(s), tile_last_error());
    return 1;
}

/* ---------------------------------------------------------------- the dispatcher */

static int check_dispatcher(tile_dtype dt) {
    const int64_t epa = 16 / (int64_t)support_dtype_size(dt);
    const uint64_t seed = 1000003u * (uint64_t)(dt + 1);
    const char *label = "dispatch";
    int failed = 0;
    static const int64_t shapes[][2] = {
        {1, 1},     {1, 17},    {97, 781},   {1823, 781}, {3, 32},  {33, 100},
        {3, 512},   {3, 513},   {7, 4096},   {4, 8192},   {2, 16384}, {2, 16385},
        {2, 65536}, {1, 131072}, {2, 131073}, {2, BIG_COLS},
    };
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++)
        failed |= run_both(label, -1, dt, shapes[i][0], shapes[i][1], 0, 0, 0, seed + i);
    /* strided, vector-aligned */
    failed |= run_both(label, -1, dt, 97, 776, 3 * epa, epa, 0, seed + 100);
    /* odd strides: the dispatcher falls back to a scalar variant */
    failed |= run_both(label, -1, dt, 97, 781, 1, 3, 0, seed + 101);
    failed |= run_both(label, -1, dt, 5, 20001, 1, 0, 0, seed + 102);
    /* a pointer one element off */
    failed |= run_both(label, -1, dt, 3, 1000, 0, 0, 1, seed + 103);
    failed |= run_both(label, -1, dt, 1, 70001, 0, 0, 1, seed + 104);
    /* in place, and guard bytes */
    for (int log = 0; log < 2; log++) {
        if (guarded_run(-1, dt, log, 97, 781, 0, 1, seed + 200 + (uint64_t)log)) failed = 1;
        if (guarded_run(-1, dt, log, 5, 3000, 8, 1, seed + 202 + (uint64_t)log)) failed = 1;
        if (guarded_run(-1, dt, log, 2, 100003, 0, 1, seed + 204 + (uint64_t)log)) failed = 1;
        if (guarded_run(-1, dt, log, 9, 4096, 16, 0, seed + 206 + (uint64_t)log)) failed = 1;
    }
    return failed;
}

/* ---------------------------------------------------------------- device-only behaviour */

static int check_device_queries(void) {
    int failed = 0;
    int32_t arch = 0;
    tile_status s = tile_device_arch(&arch);
    if (s != TILE_STATUS_SUCCESS || arch != gpu.arch) {
        fprintf(stderr, "FAIL tile_device_arch: %s, %d (device is sm_%d)\n", tile_status_string(s),
                arch, gpu.arch);
        failed = 1;
    }
    tile_decision d = {.struct_size = sizeof d};
    s = tile_softmax_explain(TILE_DTYPE_BF16, 4096, 4096, 4096, 4096, 16, 0, &d);
    if (s != TILE_STATUS_SUCCESS || d.arch != gpu.arch || d.variant < 0) {
        fprintf(stderr, "FAIL explain for the current device: %s (%s), arch %d\n",
                tile_status_string(s), tile_last_error(), d.arch);
        failed = 1;
    }
    return failed;
}

typedef struct thread_result {
    tile_status softmax, arch;
    char message[512];
    CUdeviceptr x, y;
} thread_result;

static void *no_context_thread(void *arg) {
    thread_result *r = arg;
    r->softmax = tile_softmax(TILE_DTYPE_F32, (void *)(uintptr_t)r->y,
                              (const void *)(uintptr_t)r->x, 4, 64, 64, 64, NULL);
    snprintf(r->message, sizeof r->message, "%s", tile_last_error());
    int32_t arch;
    r->arch = tile_device_arch(&arch);
    return NULL;
}

/* A thread with no current context gets NO_CONTEXT, not a crash. */
static int check_no_context(void) {
    const tile_driver *d = gpu.drv;
    thread_result r = {0};
    SUPPORT_CHECK(&gpu, d->cuMemAlloc(&r.x, 4096));
    SUPPORT_CHECK(&gpu, d->cuMemAlloc(&r.y, 4096));
    pthread_t t;
    if (pthread_create(&t, NULL, no_context_thread, &r) || pthread_join(t, NULL)) {
        fprintf(stderr, "FAIL: pthread\n");
        return 1;
    }
    SUPPORT_CHECK(&gpu, d->cuMemFree(r.x));
    SUPPORT_CHECK(&gpu, d->cuMemFree(r.y));
    if (r.softmax != TILE_STATUS_NO_CONTEXT || r.arch != TILE_STATUS_NO_CONTEXT ||
        !strstr(r.message, "context")) {
        fprintf(stderr, "FAIL thread without a context: %s, %s (%s)\n",
                tile_status_string(r.softmax), tile_status_string(r.arch), r.message);
        return 1;
    }
    return 0;
}

/* tile_softmax on a stream under capture: the graph, replayed, computes the same. */
static int check_graph_capture(tile_dtype dt) {
    const tile_driver *d = gpu.drv;
    const int64_t rows = 33, cols = 3001;
    const size_t elem = support_dtype_size(dt), n = (size_t)(rows * cols);
    float *x = support_xmalloc(n * sizeof *x), *y = support_xmalloc(n * sizeof *y);
    void *x_store = support_xmalloc(n * elem), *y_store = support_xmalloc(n * elem);
    double *want = support_xmalloc(n * sizeof *want);
    support_fill_uniform(x, n, 4242, -8.0f, 8.0f);
    support_pack(dt, x_store, x, n);
    support_unpack(dt, x, x_store, n);
    support_softmax_reference(want, x, rows, cols, cols, 0);
    CUdeviceptr dx, dy;
    SUPPORT_CHECK(&gpu, d->cuMemAlloc(&dx, n * elem));
    SUPPORT_CHECK(&gpu, d->cuMemAlloc(&dy, n * elem));
    SUPPORT_CHECK(&gpu, d->cuMemcpyHtoD(dx, x_store, n * elem));
    CUstream stream;
    SUPPORT_CHECK(&gpu, d->cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    int failed = 0;
    for (int replay = 0; replay < 2 && !failed; replay++) {
        SUPPORT_CHECK(&gpu, d->cuMemsetD8(dy, 0xff, n * elem));
        SUPPORT_CHECK(&gpu, d->cuCtxSynchronize());
        SUPPORT_CHECK(&gpu, d->cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
        tile_status s = tile_softmax(dt, (void *)(uintptr_t)dy, (const void *)(uintptr_t)dx, rows,
                                     cols, cols, cols, (tile_stream)stream);
        CUgraph graph;
        CUresult end = d->cuStreamEndCapture(stream, &graph);
        if (s != TILE_STATUS_SUCCESS || end != CUDA_SUCCESS) {
            fprintf(stderr, "FAIL graph capture (%s): %s (%s), end capture %d\n",
                    tile_dtype_string(dt), tile_status_string(s), tile_last_error(), (int)end);
            failed = 1;
            break;
        }
        CUgraphExec exec;
        SUPPORT_CHECK(&gpu, d->cuGraphInstantiate(&exec, graph, 0));
        /* nothing ran while capturing */
        SUPPORT_CHECK(&gpu, d->cuMemcpyDtoH(y_store, dy, n * elem));
        support_unpack(dt, y, y_store, n);
        if (!isnan(y[0])) {
            fprintf(stderr, "FAIL graph capture (%s): the kernel ran while capturing\n",
                    tile_dtype_string(dt));
            failed = 1;
        }
        SUPPORT_CHECK(&gpu, d->cuGraphLaunch(exec, stream));
        SUPPORT_CHECK(&gpu, d->cuGraphLaunch(exec, stream));
        SUPPORT_CHECK(&gpu, d->cuStreamSynchronize(stream));
        SUPPORT_CHECK(&gpu, d->cuMemcpyDtoH(y_store, dy, n * elem));
        support_unpack(dt, y, y_store, n);
        double atol, rtol;
        support_tolerance(dt, 0, &atol, &rtol);
        if (support_compare("graph", y, cols, want, rows, cols, atol, rtol, NULL)) failed = 1;
        SUPPORT_CHECK(&gpu, d->cuGraphExecDestroy(exec));
        SUPPORT_CHECK(&gpu, d->cuGraphDestroy(graph));
    }
    SUPPORT_CHECK(&gpu, d->cuStreamDestroy(stream));
    SUPPORT_CHECK(&gpu, d->cuMemFree(dx));
    SUPPORT_CHECK(&gpu, d->cuMemFree(dy));
    free(x);
    free(y);
    free(x_store);
    free(y_store);
    free(want);
    cases_run++;
    if (failed) case_failures++;
    return failed;
}

/* ---------------------------------------------------------------- main */

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (support_test_max_rows(&max_rows)) return 1; /* an invalid cap fails, never ignored */
    const char *why = "unknown reason";
    if (support_gpu_open(&gpu, &why)) {
        printf("SKIP: no GPU: %s\n", why);
        return SUPPORT_EXIT_NO_GPU;
    }
    printf("GPU 0: %s, sm_%d, %d SMs; %d variants in the library\n", gpu.name, gpu.arch,
           gpu.sm_count, tile_variant_count());
    if (max_rows)
        printf("FUSEDOPS_TEST_MAX_ROWS does not apply to the persistent, pipe and streamed "
               "variants' multi-row walk cases\n");
    const char *only = getenv("FUSEDOPS_TEST_VARIANT");
    int passed = 0, failed = 0, other_arch = 0;

#define REPORT(ok, ...)                                                                       \
    do {                                                                                      \
        const int ok_ = (ok); /* evaluated once: it runs a check */                           \
        if (ok_) passed++;                                                                    \
        else failed++;                                                                        \
        printf("%-44s %s\n", __VA_ARGS__, ok_ ? "ok" : "FAIL");                               \
    } while (0)

    REPORT(!check_device_queries(), "device queries");
    for (int32_t i = 0; i < tile_variant_count(); i++) {
        tile_variant_info v = {.struct_size = sizeof v};
        if (tile_variant_get(i, &v) != TILE_STATUS_SUCCESS) {
            fprintf(stderr, "FAIL tile_variant_get(%d): %s\n", i, tile_last_error());
            failed++;
            continue;
        }
        if (strcmp(v.op, "softmax") || !support_variant_selected(v.name, only)) continue;
        if (!support_variant_runs_here(&gpu, &v)) { /* arch range, or shared memory (sm_86/89) */
            other_arch++;
            REPORT(!check_arch_mismatch(i, &v), v.name);
            continue;
        }
        const int before = cases_run;
        int bad = check_variant(i, &v);
        if (support_is_persistent(&v)) bad |= check_multi_row_walk(i, &v);
        bad |= check_variant_errors(i, &v);
        char label[128];
        snprintf(label, sizeof label, "%s (%d cases)", v.name, cases_run - before);
        REPORT(!bad, label);
    }
    for (int t = 0; t < TILE_DTYPE_COUNT_; t++) {
        char label[64];
        snprintf(label, sizeof label, "dispatch %s", tile_dtype_string((tile_dtype)t));
        REPORT(!check_dispatcher((tile_dtype)t), label);
        snprintf(label, sizeof label, "graph capture %s", tile_dtype_string((tile_dtype)t));
        REPORT(!check_graph_capture((tile_dtype)t), label);
    }
    REPORT(!check_no_context(), "thread without a context");
#undef REPORT

    printf("%d passed, %d failed (%d cases, %d failed; %d variants for other archs checked for "
           "ARCH_MISMATCH)\n",
           passed, failed, cases_run, case_failures, other_arch);
    support_gpu_close(&gpu);
    return failed ? 1 : 0;
}
