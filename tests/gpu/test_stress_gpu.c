/*
 * Concurrency and CUDA-graph stress over every op of the C ABI (issue 9, items 5 and 6).
 *
 * 1. Sixteen host threads, each on its own stream with its own inputs, call every op in a loop;
 *    they start together at a barrier before anything has touched the library, so the first
 *    calls race on its lazy initialization (loading, per-device setup, the tuning file) on
 *    purpose. Every output of every iteration must equal, bit for bit, what the same call gives
 *    when run alone on the main thread afterwards.
 * 2. Every op is captured once in a CUDA graph and the graph replayed 100 times; the outputs
 *    must equal the eager call's bit for bit.
 * 3. Two ops back to back with no sync between them, eagerly and in a graph (check_chains: the
 *    wait behind programmatic dependent launch).
 *
 * The ops: softmax, log_softmax (bf16), layernorm (f32, weight and bias, statistics), rmsnorm
 * (f16, weight), residual_dropout (bf16, bias, p = 0.1, mask), residual_dropout_norm (bf16,
 * RMSNorm, p = 0.1, mask), flash_attention (bf16, causal GQA 8/2 heads, batch 2, seqlen 300,
 * head_dim 128, lse), flash_attention varlen (f16, causal MQA 8/1 heads, head_dim 64, five
 * packed sequences of ragged lengths, cu_seqlens on the device, lse) and grouped_matmul (bf16,
 * 16 groups of skewed sizes with 37 trailing rows in no group, k 200, n 136, B [groups, n, k],
 * bias, offsets on the device). Shapes are ragged.
 * Exits 77 without a GPU.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fusedops.h"
#include "support.h"

enum { THREADS = 16 };
/* Iterations per thread and graph replays: 20 and 100, fewer where FUSEDOPS_STRESS_ITERATIONS
 * and FUSEDOPS_STRESS_REPLAYS say so (compute-sanitizer runs, which are slow per launch; the
 * threads still race on the first calls). Set once in main, before any thread starts. */
static int64_t iterations = 20, replays = 100;
enum { OP_SOFTMAX, OP_LOG_SOFTMAX, OP_LAYERNORM, OP_RMSNORM, OP_RESIDUAL_DROPOUT,
       OP_RESIDUAL_DROPOUT_NORM, OP_ATTENTION, OP_ATTENTION_VARLEN, OP_GROUPED_MATMUL, OP_COUNT };
enum { ROW_OPS = OP_ATTENTION }; /* the ops before it take rows x cols */
static const char *const op_names[OP_COUNT] = {
    "softmax", "log_softmax", "layernorm", "rmsnorm", "residual_dropout", "residual_dropout_norm",
    "flash_attention", "flash_attention varlen", "grouped_matmul"};
static const tile_dtype op_dtypes[ROW_OPS] = {TILE_DTYPE_BF16, TILE_DTYPE_BF16, TILE_DTYPE_F32,
                                              TILE_DTYPE_F16,  TILE_DTYPE_BF16, TILE_DTYPE_BF16};
static const int64_t op_rows[ROW_OPS] = {97, 33, 1823, 64, 257, 129};
static const int64_t op_cols[ROW_OPS] = {1000, 70001, 781, 4097, 3000, 2050};
/* The attention ops (support_attention_setup lays them out: padded rows, v in the other layout;
 * varlen lengths seqlen - 37 b and seqlen_k - 53 b mod (seqlen + 1), so some queries see no
 * key). The seed comes from the caller. */
static const support_attention_case attn_cases[OP_GROUPED_MATMUL - ROW_OPS] = {
    {.variant = -1, .dtype = TILE_DTYPE_BF16, .batch = 2, .heads_q = 8, .heads_kv = 2,
     .head_dim = 128, .seqlen_q = 300, .seqlen_k = 300, .causal = 1, .lse = 1},
    {.variant = -1, .dtype = TILE_DTYPE_F16, .batch = 5, .heads_q = 8, .heads_kv = 1,
     .head_dim = 64, .seqlen_q = 300, .seqlen_k = 300, .causal = 1, .varlen = 1, .bhsd = 1,
     .lse = 1},
};
/* The grouped matmul (support_grouped_matmul_setup lays it out: ragged k and n, NaN padding,
 * group sizes from a Dirichlet draw of the seed). The seed comes from the caller. */
static const support_grouped_matmul_case gmm_case = {
    .variant = -1, .dtype = TILE_DTYPE_BF16, .groups = 16, .total_m = 777, .k = 200, .n = 136,
    .tail = 37, .alpha = 0.5, .b_nk = 1, .bias = 1};

static support_gpu gpu;

/* One op's buffers on the device. Row ops: inputs x, residual, two [cols] vectors; outputs y,
 * s, mask, two [rows] statistics; dense rows (ld = cols). Attention: the problem, with its
 * outputs o and lse. Grouped matmul: the problem, with its output c. */
typedef struct op_buffers {
    int op;
    CUdeviceptr x, residual, w, b, y, s, mask, mean, rstd;
    size_t tensor_bytes, vector_bytes, mask_bytes, stats_bytes;
    support_attention_problem attn;
    support_grouped_matmul_problem gmm;
} op_buffers;

enum { MAX_OUTPUTS = 5 };
/* The device outputs of the op (everything it may write), in *ptr and their sizes in bytes;
 * returns how many. */
static int outputs(const op_buffers *b, CUdeviceptr ptr[MAX_OUTPUTS], size_t bytes[MAX_OUTPUTS]) {
    if (b->op == OP_GROUPED_MATMUL) {
        ptr[0] = (CUdeviceptr)(uintptr_t)b->gmm.args.c; /* its allocation, the guard included */
        bytes[0] = b->gmm.c_bytes;
        return 1;
    }
    if (b->op >= ROW_OPS) {
        const support_attention_problem *a = &b->attn;
        ptr[0] = (CUdeviceptr)(uintptr_t)a->args.o;
        bytes[0] = (size_t)a->o_elements * support_dtype_size(a->args.dtype);
        ptr[1] = a->bufs[4]; /* lse's allocation: there even where args.lse is NULL */
        bytes[1] = (size_t)a->lse_elements * sizeof(float);
        return 2;
    }
    const CUdeviceptr p[] = {b->y, b->s, b->mask, b->mean, b->rstd};
    const size_t n[] = {b->tensor_bytes, b->tensor_bytes, b->mask_bytes, b->stats_bytes,
                        b->stats_bytes};
    memcpy(ptr, p, sizeof p);
    memcpy(bytes, n, sizeof n);
    return MAX_OUTPUTS;
}

static CUdeviceptr upload_random(tile_dtype dt, size_t n, uint64_t seed, float lo, float hi) {
    float *v = support_stored_uniform(dt, n, seed, lo, hi);
    CUdeviceptr p;
    support_upload(&gpu, dt, v, n, 0, &p);
    free(v);
    return p;
}

static void buffers_init(op_buffers *b, int op, uint64_t seed) {
    memset(b, 0, sizeof *b);
    b->op = op;
    if (op == OP_GROUPED_MATMUL) {
        support_grouped_matmul_case c = gmm_case;
        c.seed = seed;
        support_grouped_matmul_setup(&gpu, &c, &b->gmm);
        return;
    }
    if (op >= ROW_OPS) {
        support_attention_case c = attn_cases[op - ROW_OPS];
        c.seed = seed;
        support_attention_setup(&gpu, &c, &b->attn);
        return;
    }
    const tile_dtype dt = op_dtypes[op];
    const size_t n = (size_t)(op_rows[op] * op_cols[op]), elem = support_dtype_size(dt);
    b->tensor_bytes = n * elem;
    b->vector_bytes = (size_t)op_cols[op] * elem;
    b->mask_bytes = n;
    b->stats_bytes = (size_t)op_rows[op] * sizeof(float);
    b->x = upload_random(dt, n, seed, -4.0f, 4.0f);
    b->residual = upload_random(dt, n, seed + 1, -4.0f, 4.0f);
    b->w = upload_random(dt, (size_t)op_cols[op], seed + 2, 0.5f, 1.5f);
    b->b = upload_random(dt, (size_t)op_cols[op], seed + 3, -1.0f, 1.0f);
    const tile_driver *d = gpu.drv;
    SUPPORT_CHECK(&gpu, d->cuMemAlloc(&b->y, b->tensor_bytes));
    SUPPORT_CHECK(&gpu, d->cuMemAlloc(&b->s, b->tensor_bytes));
    SUPPORT_CHECK(&gpu, d->cuMemAlloc(&b->mask, b->mask_bytes));
    SUPPORT_CHECK(&gpu, d->cuMemAlloc(&b->mean, b->stats_bytes));
    SUPPORT_CHECK(&gpu, d->cuMemAlloc(&b->rstd, b->stats_bytes));
}

static void buffers_free(op_buffers *b) {
    if (b->op == OP_GROUPED_MATMUL) {
        support_grouped_matmul_free(&gpu, &b->gmm);
        return;
    }
    if (b->op >= ROW_OPS) {
        support_attention_free(&gpu, &b->attn);
        return;
    }
    const CUdeviceptr all[] = {b->x, b->residual, b->w, b->b, b->y, b->s, b->mask, b->mean, b->rstd};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) SUPPORT_CHECK(&gpu, gpu.drv->cuMemFree(all[i]));
}

#define P(x) ((void *)(uintptr_t)(x))

/* The op on its buffers, asynchronously on `stream`. */
static tile_status run_op(const op_buffers *b, CUstream stream) {
    const int op = b->op;
    const tile_stream st = (tile_stream)stream;
    if (op == OP_GROUPED_MATMUL) return tile_grouped_matmul(&b->gmm.args, st);
    if (op >= ROW_OPS) return tile_flash_attention(&b->attn.args, st);
    const tile_dtype dt = op_dtypes[op];
    const int64_t rows = op_rows[op], cols = op_cols[op];
    switch (op) {
    case OP_SOFTMAX: return tile_softmax(dt, P(b->y), P(b->x), rows, cols, cols, cols, st);
    case OP_LOG_SOFTMAX: return tile_log_softmax(dt, P(b->y), P(b->x), rows, cols, cols, cols, st);
    case OP_LAYERNORM:
        return tile_layernorm(dt, P(b->y), P(b->x), P(b->w), P(b->b), P(b->mean), P(b->rstd), rows,
                              cols, cols, cols, 1e-5f, st);
    case OP_RMSNORM:
        return tile_rmsnorm(dt, P(b->y), P(b->x), P(b->w), P(b->rstd), rows, cols, cols, cols, 1e-6f,
                            st);
    case OP_RESIDUAL_DROPOUT:
        return tile_residual_dropout(dt, P(b->y), P(b->x), P(b->residual), P(b->b), P(b->mask), rows,
                                     cols, cols, cols, cols, 0.1f, 1234, 5678, st);
    default: {
        tile_add_norm_args a = {.struct_size = sizeof a, .dtype = dt, .norm = TILE_NORM_RMS,
                                .rows = rows, .cols = cols, .y = P(b->y), .ld_y = cols,
                                .s = P(b->s), .ld_s = cols, .x = P(b->x), .ld_x = cols,
                                .residual = P(b->residual), .ld_residual = cols, .bias = P(b->b),
                                .weight = P(b->w), .eps = 1e-6f, .p = 0.1f, .seed = 99,
                                .offset = 7, .mask = P(b->mask), .rstd = P(b->rstd)};
        return tile_residual_dropout_norm(&a, st);
    }
    }
}

/* Everything an op may write (its outputs()), copied to the host in one block. */
typedef struct snapshot {
    unsigned char *bytes;
    size_t size;
} snapshot;

static void take(const op_buffers *b, CUstream stream, snapshot *out) {
    const tile_driver *d = gpu.drv;
    SUPPORT_CHECK(&gpu, d->cuStreamSynchronize(stream));
    CUdeviceptr ptr[MAX_OUTPUTS];
    size_t bytes[MAX_OUTPUTS];
    const int n = outputs(b, ptr, bytes);
    out->size = 0;
    for (int i = 0; i < n; i++) out->size += bytes[i];
    free(out->bytes); /* ops differ in size: one snapshot serves them all */
    out->bytes = support_xmalloc(out->size);
    unsigned char *p = out->bytes;
    for (int i = 0; i < n; p += bytes[i], i++) SUPPORT_CHECK(&gpu, d->cuMemcpyDtoH(p, ptr[i], bytes[i]));
}

/* Poisons every output, in stream order (so a skipped write cannot pass as a repeat of the
 * last one). */
static void poison(const op_buffers *b, CUstream stream) {
    CUdeviceptr ptr[MAX_OUTPUTS];
    size_t bytes[MAX_OUTPUTS];
    const int n = outputs(b, ptr, bytes);
    for (int i = 0; i < n; i++)
        SUPPORT_CHECK(&gpu, gpu.drv->cuMemsetD8Async(ptr[i], 0xa5, bytes[i], stream));
}

/* ---------------------------------------------------------------- 1. threads */

typedef struct worker {
    int id;
    op_buffers ops[OP_COUNT];
    snapshot first[OP_COUNT]; /* iteration 0's outputs */
    int failures;
    char error[256];
} worker;

static pthread_barrier_t start_line;

static void *work(void *arg) {
    worker *w = arg;
    const tile_driver *d = gpu.drv;
    SUPPORT_CHECK(&gpu, d->cuCtxSetCurrent(gpu.context));
    CUstream stream;
    SUPPORT_CHECK(&gpu, d->cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    snapshot now = {0};
    pthread_barrier_wait(&start_line); /* all threads call the library at once, for the first time */
    for (int it = 0; it < iterations; it++) {
        for (int op = 0; op < OP_COUNT; op++) {
            op_buffers *b = &w->ops[op];
            poison(b, stream);
            tile_status s = run_op(b, stream);
            if (s != TILE_STATUS_SUCCESS) {
                snprintf(w->error, sizeof w->error, "thread %d %s: %s: %s", w->id, op_names[op],
                         tile_status_string(s), tile_last_error());
                w->failures++;
                continue;
            }
            take(b, stream, it == 0 ? &w->first[op] : &now);
            if (it > 0 && memcmp(now.bytes, w->first[op].bytes, now.size)) {
                snprintf(w->error, sizeof w->error, "thread %d %s: iteration %d differs from iteration 0",
                         w->id, op_names[op], it);
                w->failures++;
            }
        }
    }
    free(now.bytes);
    SUPPORT_CHECK(&gpu, d->cuStreamDestroy(stream));
    return NULL;
}

static int check_threads(void) {
    static worker workers[THREADS];
    pthread_t threads[THREADS];
    for (int t = 0; t < THREADS; t++) {
        workers[t].id = t;
        for (int op = 0; op < OP_COUNT; op++)
            buffers_init(&workers[t].ops[op], op, 1000u * (uint64_t)(t + 1) + 10u * (uint64_t)op);
    }
    pthread_barrier_init(&start_line, NULL, THREADS);
    for (int t = 0; t < THREADS; t++) pthread_create(&threads[t], NULL, work, &workers[t]);
    for (int t = 0; t < THREADS; t++) pthread_join(threads[t], NULL);
    pthread_barrier_destroy(&start_line);

    /* The single-threaded results, now that the threads are done: same inputs, main thread. */
    int failures = 0;
    CUstream stream;
    SUPPORT_CHECK(&gpu, gpu.drv->cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    snapshot alone = {0};
    for (int t = 0; t < THREADS; t++) {
        worker *w = &workers[t];
        if (w->failures) {
            fprintf(stderr, "FAIL %s (%d failures in the thread)\n", w->error, w->failures);
            failures++;
        }
        for (int op = 0; op < OP_COUNT; op++) {
            op_buffers *b = &w->ops[op];
            poison(b, stream);
            if (run_op(b, stream) != TILE_STATUS_SUCCESS) {
                fprintf(stderr, "FAIL %s alone: %s\n", op_names[op], tile_last_error());
                failures++;
                continue;
            }
            take(b, stream, &alone);
            if (!w->first[op].bytes || memcmp(alone.bytes, w->first[op].bytes, alone.size)) {
                fprintf(stderr, "FAIL thread %d %s: the threaded result differs from the "
                                "single-threaded one\n", t, op_names[op]);
                failures++;
            }
            free(w->first[op].bytes);
            buffers_free(b);
        }
    }
    free(alone.bytes);
    SUPPORT_CHECK(&gpu, gpu.drv->cuStreamDestroy(stream));
    return failures;
}

/* ---------------------------------------------------------------- 2. graphs */

static int check_graphs(void) {
    const tile_driver *d = gpu.drv;
    CUstream stream;
    SUPPORT_CHECK(&gpu, d->cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    int failures = 0;
    snapshot eager = {0}, replayed = {0};
    for (int op = 0; op < OP_COUNT; op++) {
        op_buffers b;
        buffers_init(&b, op, 77u + (uint64_t)op);
        poison(&b, stream);
        if (run_op(&b, stream) != TILE_STATUS_SUCCESS) {
            fprintf(stderr, "FAIL graph %s eager: %s\n", op_names[op], tile_last_error());
            failures++;
            buffers_free(&b);
            continue;
        }
        take(&b, stream, &eager);
        poison(&b, stream);
        CUgraph graph;
        CUgraphExec exec;
        SUPPORT_CHECK(&gpu, d->cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
        tile_status s = run_op(&b, stream);
        SUPPORT_CHECK(&gpu, d->cuStreamEndCapture(stream, &graph));
        if (s != TILE_STATUS_SUCCESS) {
            fprintf(stderr, "FAIL graph %s capture: %s\n", op_names[op], tile_last_error());
            failures++;
        } else {
            SUPPORT_CHECK(&gpu, d->cuGraphInstantiate(&exec, graph, 0));
            int bad = 0;
            for (int r = 0; r < replays; r++) {
                if (r % 25 == 0) poison(&b, stream); /* now and then: each replay rewrites it all */
                SUPPORT_CHECK(&gpu, d->cuGraphLaunch(exec, stream));
                if (r % 25 == 24 || r == replays - 1) {
                    take(&b, stream, &replayed);
                    bad |= memcmp(replayed.bytes, eager.bytes, eager.size) != 0;
                }
            }
            if (bad) {
                fprintf(stderr, "FAIL graph %s: a replay differs from the eager result\n",
                        op_names[op]);
                failures++;
            }
            SUPPORT_CHECK(&gpu, d->cuGraphExecDestroy(exec));
        }
        SUPPORT_CHECK(&gpu, d->cuGraphDestroy(graph));
        buffers_free(&b);
    }
    free(eager.bytes);
    free(replayed.bytes);
    SUPPORT_CHECK(&gpu, d->cuStreamDestroy(stream));
    return failures;
}

/* ---------------------------------------------------------------- 3. chains */

/* Two ops back to back on one stream, no host sync between them. On sm_90 a launch may start
 * while the grid before it finishes (programmatic dependent launch), so every kernel must wait
 * for that grid before it touches memory. The first op, a softmax of 4 rows of 2^20 bf16
 * columns, runs a few programs a row that write their output only after a pass over the whole
 * row; the second, a log-softmax, reads that output as 4096 rows of 1024 columns. All of the
 * first op's programs start at once, so the second's may start launching right away: without
 * the wait it would read y's poison (NaN). The chain runs eagerly and as a captured graph
 * (programmatic edges there), each compared bit for bit with the two ops split by a host sync.
 * Checked to fail: with the wait compiled out of the kernels and the early launch of the next
 * grid kept (perf-notes P1). 20 rounds whatever FUSEDOPS_STRESS_ITERATIONS says. */
enum { CHAIN_ROWS = 4, CHAIN_COLS = 1 << 20, CHAIN_COLS2 = 1024, CHAIN_ROUNDS = 20,
       CHAIN_BYTES = CHAIN_ROWS * CHAIN_COLS * 2 /* bf16 */ };

static tile_status chain(CUdeviceptr z, CUdeviceptr y, CUdeviceptr x, CUstream stream, int sync) {
    const tile_dtype dt = TILE_DTYPE_BF16;
    const int64_t rows2 = (int64_t)CHAIN_ROWS * CHAIN_COLS / CHAIN_COLS2;
    const tile_stream st = (tile_stream)stream;
    SUPPORT_CHECK(&gpu, gpu.drv->cuMemsetD8Async(y, 0xff, CHAIN_BYTES, stream)); /* bf16 NaN */
    SUPPORT_CHECK(&gpu, gpu.drv->cuMemsetD8Async(z, 0xff, CHAIN_BYTES, stream));
    tile_status s = tile_softmax(dt, P(y), P(x), CHAIN_ROWS, CHAIN_COLS, CHAIN_COLS, CHAIN_COLS, st);
    if (s != TILE_STATUS_SUCCESS) return s;
    if (sync) SUPPORT_CHECK(&gpu, gpu.drv->cuStreamSynchronize(stream));
    return tile_log_softmax(dt, P(z), P(y), rows2, CHAIN_COLS2, CHAIN_COLS2, CHAIN_COLS2, st);
}

static int check_chains(void) {
    const tile_driver *d = gpu.drv;
    const size_t n = (size_t)CHAIN_ROWS * CHAIN_COLS, bytes = CHAIN_BYTES;
    CUstream stream;
    SUPPORT_CHECK(&gpu, d->cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    const CUdeviceptr x = upload_random(TILE_DTYPE_BF16, n, 4242, -8.0f, 8.0f);
    CUdeviceptr y, z;
    SUPPORT_CHECK(&gpu, d->cuMemAlloc(&y, bytes));
    SUPPORT_CHECK(&gpu, d->cuMemAlloc(&z, bytes));
    unsigned char *want = support_xmalloc(bytes), *got = support_xmalloc(bytes);
    int failures = 0;
    if (chain(z, y, x, stream, 1) != TILE_STATUS_SUCCESS) {
        fprintf(stderr, "FAIL chain, synced: %s\n", tile_last_error());
        failures++;
        goto done;
    }
    SUPPORT_CHECK(&gpu, d->cuStreamSynchronize(stream)); /* (a non-blocking stream: the copy */
    SUPPORT_CHECK(&gpu, d->cuMemcpyDtoH(want, z, bytes)); /* would not wait for it) */
    for (int r = 0; r < CHAIN_ROUNDS; r++) {
        if (chain(z, y, x, stream, 0) != TILE_STATUS_SUCCESS) {
            fprintf(stderr, "FAIL chain round %d: %s\n", r, tile_last_error());
            failures++;
            goto done;
        }
        SUPPORT_CHECK(&gpu, d->cuStreamSynchronize(stream));
        SUPPORT_CHECK(&gpu, d->cuMemcpyDtoH(got, z, bytes));
        if (memcmp(got, want, bytes)) {
            fprintf(stderr, "FAIL chain round %d: differs from the synced chain\n", r);
            failures++;
            goto done;
        }
    }
    CUgraph graph;
    CUgraphExec exec;
    SUPPORT_CHECK(&gpu, d->cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
    const tile_status s = chain(z, y, x, stream, 0);
    if (s != TILE_STATUS_SUCCESS) /* said now: a failed launch may fail the capture's end too */
        fprintf(stderr, "FAIL chain capture: %s\n", tile_last_error());
    SUPPORT_CHECK(&gpu, d->cuStreamEndCapture(stream, &graph));
    if (s != TILE_STATUS_SUCCESS) {
        failures++;
    } else {
        SUPPORT_CHECK(&gpu, d->cuGraphInstantiate(&exec, graph, 0));
        for (int r = 0; r < CHAIN_ROUNDS && !failures; r++) {
            SUPPORT_CHECK(&gpu, d->cuGraphLaunch(exec, stream));
            SUPPORT_CHECK(&gpu, d->cuStreamSynchronize(stream));
            SUPPORT_CHECK(&gpu, d->cuMemcpyDtoH(got, z, bytes));
            if (memcmp(got, want, bytes)) {
                fprintf(stderr, "FAIL chain graph replay %d: differs from the synced chain\n", r);
                failures++;
            }
        }
        SUPPORT_CHECK(&gpu, d->cuGraphExecDestroy(exec));
    }
    SUPPORT_CHECK(&gpu, d->cuGraphDestroy(graph));
done:
    free(want);
    free(got);
    const CUdeviceptr all[] = {x, y, z};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) SUPPORT_CHECK(&gpu, d->cuMemFree(all[i]));
    SUPPORT_CHECK(&gpu, d->cuStreamDestroy(stream));
    return failures;
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    const char *why = "unknown reason";
    if (support_gpu_open(&gpu, &why)) {
        printf("SKIP: no GPU: %s\n", why);
        return SUPPORT_EXIT_NO_GPU;
    }
    printf("GPU 0: %s, sm_%d\n", gpu.name, gpu.arch);
    if (support_env_count("FUSEDOPS_STRESS_ITERATIONS", iterations, &iterations) ||
        support_env_count("FUSEDOPS_STRESS_REPLAYS", replays, &replays)) {
        support_gpu_close(&gpu);
        return 1;
    }
    char what[2][80];
    snprintf(what[0], sizeof what[0], "%d threads x %lld iterations x %d ops, lazy init raced",
             THREADS, (long long)iterations, OP_COUNT);
    snprintf(what[1], sizeof what[1], "%d ops captured, each replayed %lld times", OP_COUNT,
             (long long)replays);
    const int threads = check_threads();
    printf("%-60s %s\n", what[0], threads ? "FAIL" : "ok");
    const int graphs = check_graphs();
    printf("%-60s %s\n", what[1], graphs ? "FAIL" : "ok");
    const int chains = check_chains();
    printf("%-60s %s\n", "2 ops back to back, eager and graph, x 20", chains ? "FAIL" : "ok");
    const int failed = (threads != 0) + (graphs != 0) + (chains != 0);
    printf("%d passed, %d failed\n", 3 - failed, failed);
    support_gpu_close(&gpu);
    return failed ? 1 : 0;
}
