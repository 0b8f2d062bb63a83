/* Grouped matmul on the GPU against a float64 CPU reference: every grouped_matmul variant
 * compiled for this GPU and the dispatcher, fp16 and bf16, B stored [groups, k, n] and
 * [groups, n, k], with and without bias, on: one group; 8 groups with one empty; 64 groups of
 * skewed sizes (Dirichlet, deterministic seed); groups of one row; k and n that are not
 * multiples of 64 (200 x 136, 8 x 8, and 100 x 50, not even multiples of 8); offsets whose last
 * end is below total_m; total_m = 0; strided (padded) rows; groups averaging under 128 rows,
 * whose last tiles of 64 rows or fewer the 256-column Hopper variants split by columns (half
 * tiles, some of exactly 64 rows); longer groups with short last tiles in two bands of row
 * tiles; one row whose A and C rows lie an odd count of elements apart; k of 3 and of 5 k-tiles
 * of 64; and a larger case (8 groups, 4096 x 1088 x 2048) checked on sampled rows. The
 * dispatcher also gets offsets that are not
 * nondecreasing or pass total_m (the kernels clamp them), and one call captured in a CUDA
 * graph and replayed.
 *
 * The error rule (support_grouped_matmul_allowed): the largest error of our output against the
 * float64 reference may be at most twice that of an fp32-accumulated reference at the storage
 * precision (inputs as stored, the sum rounded to the dtype) plus 1/8 of the dtype's unit
 * roundoff at the output's scale. NaN never passes. C is poisoned (0xff bytes) first: every
 * element of a group row must be written and finite; rows past the last end, row padding and
 * a guard past C must keep the poison bytes. The padding of A, B and bias holds NaN.
 *
 * Exits 77 (ctest SKIP_RETURN_CODE) where there is no GPU. FUSEDOPS_TEST_VARIANT=substring (or
 * a glob over the whole name: support_variant_selected) limits the per-variant part to matching
 * names; FUSEDOPS_TEST_VERBOSE prints every case. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fusedops.h"
#include "support.h"

static support_gpu gpu;
static int cases_run, case_failures;

/* Group ends of the fixed cases. */
static const int32_t one_group[] = {256};
static const int32_t one_empty[] = {37, 37, 101, 102, 192, 207, 267, 300}; /* group 1 empty */
static const int32_t single_rows[] = {1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11,
                                      12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22,
                                      23, 24, 25, 26, 27, 28, 29, 30, 31, 32};
static const int32_t nothing[] = {0, 0, 0, 0};
static const int32_t one_row[] = {1};
/* Groups whose last 128-row tile holds 64 rows or fewer: 40 rows (that tile only), 3 x 128 + 20,
 * 20 x 128 + 60 (two bands of row tiles). They average more than a tile's rows, so the
 * warp-specialized variants run those tiles whole on the fixed schedule and as half tiles with a
 * workspace; n 616 makes the column tiles odd in number (3 of 256, 5 of 128). */
static const int32_t short_last_tiles[] = {40, 444, 3064};
/* Groups averaging under 128 rows whose half tiles hold exactly 64 rows (64, 128 + 64), which go
 * out by C's tensor map, and one of 10 rows. */
static const int32_t whole_half_tiles[] = {64, 256, 266};
/* Not nondecreasing and past total_m (120): clamped to 50, 50, 100, 100, 100; rows 100 to 119
 * belong to no group. */
static const int32_t unclamped[] = {50, 30, 100, 90, 100};

/* A shape of the suite: groups x total_m x k x n, fixed ends or skewed sizes. */
typedef struct shape {
    const char *what;
    int32_t groups;
    int64_t total_m, k, n;
    const int32_t *ends; /* NULL: skewed */
    int64_t tail;
    double alpha;
    int64_t pad;
    int64_t row_pad; /* support_grouped_matmul_case's */
} shape;

static const shape shapes[] = {
    {"one group", 1, 256, 128, 192, one_group, 0, 0, 0, 0},
    {"8 groups, one empty", 8, 300, 200, 136, one_empty, 0, 0, 8, 0},
    {"64 skewed groups", 64, 2000, 256, 320, NULL, 0, 0.3, 0, 0},
    {"groups of one row", 32, 32, 64, 64, single_rows, 0, 0, 0, 0},
    {"k 8 n 8", 4, 100, 8, 8, NULL, 0, 1.0, 0, 0},
    {"k 100 n 50", 6, 150, 100, 50, NULL, 0, 1.0, 8, 0},
    {"trailing rows untouched", 8, 500, 128, 256, NULL, 77, 1.0, 0, 0},
    {"total_m 0", 4, 0, 64, 64, nothing, 0, 0, 0, 0},
    {"short last tiles in bands", 3, 3064, 96, 616, short_last_tiles, 0, 0, 0, 0},
    /* groups averaging 62.5 rows: the 256-column warp-specialized variants split tiles of 64
     * rows or fewer by columns (half tiles), over 3 column tiles */
    {"half tiles", 16, 1000, 96, 616, NULL, 0, 1.0, 0, 0},
    {"half tiles of 64 rows", 3, 266, 64, 616, whole_half_tiles, 0, 0, 0, 0},
    /* one row whose A and C rows lie an odd count of elements apart: strides no kernel steps,
     * which the tensor maps replace with one just past the row (0.9.3; the driver refused the
     * given one and the call ran an mma.sync variant) */
    {"one row, odd row strides", 1, 1, 200, 136, one_row, 0, 0, 0, 1},
    /* 3 and 5 k-tiles: the Hopper consumers' k-loop takes a full tile's k-tiles a ring of
     * stages at a time from stage 0 on, and the rest one at a time before and after (3, 4 or
     * 5 stages: every part of it) */
    {"k of 3 k-tiles", 8, 600, 192, 264, NULL, 0, 1.0, 0, 0},
    {"k of 5 k-tiles", 8, 600, 320, 264, NULL, 0, 1.0, 0, 0},
};
/* 17 k-tiles: over two tiles a program, a program's second tile starts on a stage other than
 * 0 for 3, 4 and 5 stages alike */
static const shape large = {"large, sampled rows", 8, 4096, 1088, 2048, NULL, 0, 1.0, 0, 0};
static const shape clamped = {"offsets clamped", 5, 120, 64, 72, unclamped, 0, 0, 0, 0};

static void run_case(const char *label, const support_grouped_matmul_case *c, const char *what) {
    tile_status s = TILE_STATUS_SUCCESS;
    support_grouped_matmul_errors e = {0};
    const int64_t bad = support_grouped_matmul_run(&gpu, c, &s, &e);
    cases_run++;
    char desc[200];
    snprintf(desc, sizeof desc, "%s %s: G%d %lldx%lldx%lld (MxKxN) B %s%s%s",
             tile_dtype_string(c->dtype), what, c->groups, (long long)c->total_m, (long long)c->k, (long long)c->n,
             c->b_nk ? "[g,n,k]" : "[g,k,n]", c->bias ? " bias" : "",
             c->fixed_schedule ? " fixed schedule" : "");
    if (bad == 0) {
        if (getenv("FUSEDOPS_TEST_VERBOSE"))
            printf("ok %s %s: error %.3g (fp32-accumulated reference %.3g, %lld elements)\n",
                   label, desc, e.err, e.err_lp, (long long)e.checked);
        return;
    }
    case_failures++;
    if (bad < 0)
        fprintf(stderr, "FAIL %s %s: %s: %s\n", label, desc, tile_status_string(s),
                tile_last_error());
    else
        fprintf(stderr, "FAIL %s %s: %lld problems (error %.3g, fp32-accumulated %.3g)\n", label,
                desc, (long long)bad, e.err, e.err_lp);
}

/* The shape in both B layouts, with and without bias; each layout once with a workspace (tiles
 * taken from its counter, which the call must leave zeroed) and once without (the fixed
 * order). */
static void run_shape(const char *label, int32_t variant, tile_dtype dt, const shape *s,
                      uint64_t seed) {
    for (int b_nk = 0; b_nk < 2; b_nk++)
        for (int bias = 0; bias < 2; bias++) {
            const support_grouped_matmul_case c = {
                .variant = variant, .dtype = dt, .groups = s->groups, .total_m = s->total_m,
                .k = s->k, .n = s->n, .ends = s->ends, .tail = s->tail, .alpha = s->alpha,
                .b_nk = b_nk, .bias = bias, .pad = s->pad, .row_pad = s->row_pad,
                .seed = seed + (uint64_t)(2 * b_nk + bias), .fixed_schedule = b_nk ^ bias};
            run_case(label, &c, s->what);
        }
}

static void dispatcher_cases(void) {
    for (int di = 0; di < 2; di++) {
        const tile_dtype dt = di ? TILE_DTYPE_F16 : TILE_DTYPE_BF16;
        const uint64_t seed = 100 + 1000 * (uint64_t)di;
        for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++)
            run_shape("dispatch", -1, dt, &shapes[i], seed + 10 * i);
        run_shape("dispatch", -1, dt, &clamped, seed + 500);
        run_shape("dispatch", -1, dt, &large, seed + 600);
    }
}

/* Every grouped_matmul variant this GPU can run: every shape, and the large one in one layout
 * (alternating between variants) with bias. */
static void variant_cases(void) {
    const char *filter = getenv("FUSEDOPS_TEST_VARIANT");
    int ran = 0;
    for (int32_t i = 0; i < tile_variant_count(); i++) {
        tile_variant_info info = {.struct_size = sizeof info};
        if (tile_variant_get(i, &info) != TILE_STATUS_SUCCESS) continue;
        if (strcmp(info.op, "grouped_matmul") || !support_variant_runs_here(&gpu, &info)) continue;
        if (!support_variant_selected(info.name, filter)) continue;
        ran++;
        const uint64_t seed = 5000 + (uint64_t)i * 100;
        for (size_t j = 0; j < sizeof shapes / sizeof *shapes; j++)
            run_shape(info.name, i, info.dtype, &shapes[j], seed + 10 * j);
        const support_grouped_matmul_case c = {
            .variant = i, .dtype = info.dtype, .groups = large.groups, .total_m = large.total_m,
            .k = large.k, .n = large.n, .alpha = large.alpha, .b_nk = i & 1, .bias = 1,
            .seed = seed + 99};
        run_case(info.name, &c, large.what);
    }
    printf("%d grouped_matmul variants run on this GPU\n", ran);
    if (!ran) { /* (a filter that selects nothing tested nothing: a typo, not a pass) */
        fprintf(stderr, "FAIL no grouped_matmul variant%s%s runs on this GPU\n",
                filter ? " selected by FUSEDOPS_TEST_VARIANT=" : "", filter ? filter : "");
        case_failures++;
    }
}

/* One tile_grouped_matmul captured on a stream into a CUDA graph: nothing runs while capturing,
 * and two replays compute what the call computes. */
static void graph_capture(tile_dtype dt) {
    const tile_driver *d = gpu.drv;
    const support_grouped_matmul_case c = {.variant = -1, .dtype = dt, .groups = 16,
                                           .total_m = 1000, .k = 256, .n = 384, .tail = 40,
                                           .alpha = 0.5, .b_nk = 1, .bias = 1, .seed = 4242};
    support_grouped_matmul_problem p;
    support_grouped_matmul_setup(&gpu, &c, &p);
    CUstream stream;
    SUPPORT_CHECK(&gpu, d->cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    cases_run++;
    char label[80];
    snprintf(label, sizeof label, "graph capture %s", tile_dtype_string(dt));
    SUPPORT_CHECK(&gpu, d->cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
    const tile_status s = tile_grouped_matmul(&p.args, (tile_stream)stream);
    CUgraph graph;
    const CUresult end = d->cuStreamEndCapture(stream, &graph);
    if (s != TILE_STATUS_SUCCESS || end != CUDA_SUCCESS) {
        fprintf(stderr, "FAIL %s: %s (%s), end capture %d\n", label, tile_status_string(s),
                tile_last_error(), (int)end);
        case_failures++;
        if (end == CUDA_SUCCESS) SUPPORT_CHECK(&gpu, d->cuGraphDestroy(graph));
    } else {
        CUgraphExec exec;
        SUPPORT_CHECK(&gpu, d->cuGraphInstantiate(&exec, graph, 0));
        uint16_t first;
        SUPPORT_CHECK(&gpu,
                      d->cuMemcpyDtoH(&first, (CUdeviceptr)(uintptr_t)p.args.c, sizeof first));
        int failed = first != 0xffff;
        if (failed) fprintf(stderr, "FAIL %s: the kernel ran while capturing\n", label);
        SUPPORT_CHECK(&gpu, d->cuGraphLaunch(exec, stream));
        SUPPORT_CHECK(&gpu, d->cuGraphLaunch(exec, stream));
        SUPPORT_CHECK(&gpu, d->cuStreamSynchronize(stream));
        if (support_grouped_matmul_check(&gpu, &p, label, NULL)) {
            fprintf(stderr, "FAIL %s: the replayed result is wrong\n", label);
            failed = 1;
        }
        case_failures += failed;
        SUPPORT_CHECK(&gpu, d->cuGraphExecDestroy(exec));
        SUPPORT_CHECK(&gpu, d->cuGraphDestroy(graph));
    }
    SUPPORT_CHECK(&gpu, d->cuStreamDestroy(stream));
    support_grouped_matmul_free(&gpu, &p);
}

/* Launch-time statuses a device is needed for: misalignment, and a variant of another op. */
static void device_statuses(void) {
    tile_grouped_matmul_args a;
    tile_grouped_matmul_init(&a, sizeof a);
    a.dtype = TILE_DTYPE_BF16, a.groups = 2, a.total_m = 64, a.n = 64, a.k = 64;
    a.lda = a.ldc = 64, a.b_group_stride = 64 * 64, a.b_k_stride = 64, a.b_n_stride = 1;
    a.a = a.b = (const void *)(uintptr_t)0x1000;
    a.offsets = (const int32_t *)(uintptr_t)0x3000;
    a.c = (void *)(uintptr_t)0x2008; /* 8-byte aligned: no variant takes it */
    tile_status s = tile_grouped_matmul(&a, NULL);
    cases_run++;
    if (s != TILE_STATUS_MISALIGNED) {
        fprintf(stderr, "FAIL misaligned c gave %s (%s)\n", tile_status_string(s),
                tile_last_error());
        case_failures++;
    }
    a.c = (void *)(uintptr_t)0x2000;
    s = tile_grouped_matmul_variant(tile_variant_find("softmax_f32_r1_n1024_w4_v4"), &a, NULL);
    cases_run++;
    if (s != TILE_STATUS_NOT_SUPPORTED && s != TILE_STATUS_INVALID_ARGUMENT) {
        fprintf(stderr, "FAIL a softmax variant for grouped matmul gave %s (%s)\n",
                tile_status_string(s), tile_last_error());
        case_failures++;
    }
}

int main(void) {
    const char *why;
    if (support_gpu_open(&gpu, &why) != 0) {
        printf("skipped: %s\n", why);
        return SUPPORT_EXIT_NO_GPU;
    }
    printf("%s (sm_%d)\n", gpu.name, gpu.arch);
    dispatcher_cases();
    variant_cases();
    graph_capture(TILE_DTYPE_BF16);
    graph_capture(TILE_DTYPE_F16);
    device_statuses();
    printf("%d cases, %d failures\n", cases_run, case_failures);
    support_gpu_close(&gpu);
    return case_failures ? 1 : 0;
}
