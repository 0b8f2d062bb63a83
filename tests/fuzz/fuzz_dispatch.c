/* libFuzzer harness for argument validation and dispatch (links fusedops_static, so internal
 * functions are reachable). Bytes decode into (dtype, rows, cols, ld_y, ld_x, pointer_align,
 * arch, ...) and go through:
 *   - tile_softmax_explain for the decoded arch (no GPU needed) and for arch 0 (NO_DEVICE);
 *   - tile_softmax, tile_log_softmax and tile_softmax_variant with fake, never mapped, non-NULL
 *     pointers: each must fail validation or answer NO_DEVICE without touching memory (the
 *     driver is a missing file: FUSEDOPS_LIBCUDA, set in LLVMFuzzerInitialize);
 *   - the internal tile_dispatch with a fuzzed SM count, and tile_dispatch_cached, which must
 *     agree with it;
 *   - tile_variant_get with a fuzzed index and struct_size (the struct is a heap block of
 *     exactly that size, so ASan sees a write past what the caller declared);
 *   - tile_variant_find and the tuning-file line parser on the input's tail.
 * A first byte 0xE0..0xEF selects the attention layout instead (fuzz_attention below): the
 * fields of tile_flash_attention_args go through tile_flash_attention_explain, then
 * tile_flash_attention and tile_flash_attention_variant on fake pointers, and
 * tile_flash_attention_init on a heap block of a fuzzed size. A first byte 0xD0..0xDF does the
 * same with tile_grouped_matmul_args and the grouped matmul entry points (fuzz_grouped_matmul),
 * and checks what arguments that pass must satisfy, B's elements distinct by brute force.
 * Results are checked against what the header promises (statuses, eligibility of the chosen
 * variant, nothing written on failure). FUSEDOPS_TUNING_FILE names the committed sm_90 table,
 * so the run-time table's code runs too.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "tuning_parse.h"

#define CHECK(cond)                                                                           \
    do {                                                                                      \
        if (!(cond)) {                                                                        \
            fprintf(stderr, "fuzz_dispatch: check failed at %s:%d: %s (last error: \"%s\")\n", \
                    __FILE__, __LINE__, #cond, tile_last_error());                            \
            abort();                                                                          \
        }                                                                                     \
    } while (0)

#define MISSING_DRIVER "/nonexistent/fuzz/libcuda.so.1"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    /* A machine without a driver, even where one is installed: no call may reach a GPU. */
    setenv("FUSEDOPS_LIBCUDA", MISSING_DRIVER, 1);
    const char *table = FUSEDOPS_SOURCE_DIR "/autotune_results/sm_90.tsv";
    FILE *f = fopen(table, "r");
    if (!f) {
        fprintf(stderr, "fuzz_dispatch: cannot open %s\n", table);
        abort();
    }
    fclose(f);
    setenv("FUSEDOPS_TUNING_FILE", table, 1);
    return 0;
}

/* ---------------------------------------------------------------- decoding */

typedef struct reader {
    const uint8_t *p;
    size_t n;
} reader;

static uint64_t take(reader *r, int bytes) {
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++) {
        v <<= 8;
        if (r->n) {
            v |= *r->p++;
            r->n--;
        }
    }
    return v;
}

/* An int64 biased towards the values that matter: small ones, powers of two and their
 * neighbours, and the edges of the int64 byte-extent checks; or any 64 bits. */
static int64_t take_i64(reader *r) {
    const uint8_t tag = (uint8_t)take(r, 1);
    const int64_t delta = (int8_t)take(r, 1);
    switch (tag & 3) {
    case 0: return (int64_t)take(r, 8);
    case 1: return (int64_t)(tag >> 2) - 8 + (delta & 1) * 256 * (tag >> 2);
    case 2: return (int64_t)(((uint64_t)1 << ((tag >> 2) & 63)) + (uint64_t)delta);
    default: {
        const int64_t d = (int64_t)(tag >> 2) + 1;
        return (int64_t)((uint64_t)(INT64_MAX / d) + (uint64_t)delta);
    }
    }
}

/* Any int32 (odd tag), or 0..127 from the tag alone; *raw says which. */
static int32_t take_i32_tagged(reader *r, int *raw) {
    const uint8_t tag = (uint8_t)take(r, 1);
    *raw = tag & 1;
    if (tag & 1) return (int32_t)(uint32_t)take(r, 4);
    return (int32_t)(tag >> 1);
}

static int32_t take_i32(reader *r) {
    int raw;
    return take_i32_tagged(r, &raw);
}

/* A workspace pointer from one byte: 0 is NULL, else that many bytes past `at` (8-byte aligned
 * and never mapped), 1 below 8-byte alignment. */
static void *take_workspace(reader *r, uintptr_t at) {
    const uint8_t byte = (uint8_t)take(r, 1);
    return byte ? (void *)(at + byte - 1) : NULL;
}

/* ---------------------------------------------------------------- checks */

static int is_validation_status(tile_status s) {
    return s == TILE_STATUS_INVALID_ARGUMENT || s == TILE_STATUS_MISALIGNED ||
           s == TILE_STATUS_UNSUPPORTED_DTYPE;
}

static int is_dispatch_status(tile_status s) {
    return s == TILE_STATUS_SUCCESS || s == TILE_STATUS_ARCH_MISMATCH ||
           s == TILE_STATUS_MISALIGNED || s == TILE_STATUS_NOT_SUPPORTED;
}

static int32_t align_of(uint64_t x) {
    int32_t a = 1;
    while (a < 256 && x % (uint64_t)(a * 2) == 0) a *= 2;
    return a;
}

/* The decision must name an eligible softmax variant for the problem. */
static void check_decision(const tile_decision *d, tile_dtype dtype, int64_t rows, int64_t cols,
                           int32_t align, int32_t arch, int32_t smem_limit) {
    CHECK(d->variant >= 0 && d->variant < tile_variant_count());
    CHECK(d->eligible >= 1 && d->eligible <= tile_variant_count());
    CHECK(d->arch == arch);
    CHECK((unsigned)d->rule < TILE_RULE_COUNT_);
    CHECK(memchr(d->reason, '\0', sizeof d->reason) != NULL && d->reason[0] != '\0');
    tile_variant_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    CHECK(tile_variant_get(d->variant, &info) == TILE_STATUS_SUCCESS);
    CHECK(!strcmp(info.op, "softmax"));
    CHECK(info.dtype == dtype);
    CHECK(arch >= info.arch_min && (info.arch_max == 0 || arch <= info.arch_max));
    CHECK(info.max_cols == 0 || cols <= info.max_cols);
    CHECK(info.align_bytes >= 1 && align % info.align_bytes == 0);
    CHECK(info.smem_bytes <= smem_limit);
    (void)rows;
}

/* Whether registry entry `index` is a variant of op for dtype. */
static int variant_is(int32_t index, const char *op, tile_dtype dtype) {
    tile_variant_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    return tile_variant_get(index, &info) == TILE_STATUS_SUCCESS && !strcmp(info.op, op) &&
           info.dtype == dtype;
}

static void *block(size_t struct_size, size_t minimum) {
    size_t n = struct_size > minimum ? struct_size : minimum;
    unsigned char *p = malloc(n);
    if (p) memset(p, 0x5a, n);
    return p;
}

/* ---------------------------------------------------------------- ops of an args struct */

/* An op whose entry points take a versioned args struct (attention, grouped matmul). */
typedef struct versioned_op {
    const char *op;           /* its registry op */
    const char *run_name;     /* names the messages of its run, explain and init carry */
    const char *explain_name;
    tile_status (*run)(const void *args);
    tile_status (*variant)(int32_t index, const void *args);
    tile_status (*explain)(const void *args, int32_t arch, tile_decision *d);
    tile_status (*init)(void *args, size_t struct_size);
    /* what a successful explain of args must satisfy beyond op, dtype and arch */
    void (*check_pick)(const void *args, const tile_variant_info *info);
    /* statuses argument validation may give beyond the common ones (0: none) */
    tile_status also_invalid;
} versioned_op;

/* Runs `full` (a complete args struct of `size` bytes) through explain for `arch`, the op and
 * its variant runner (`index`) on fake pointers, and init, with the caller's struct a heap block
 * of exactly struct_size bytes; checks statuses and messages against what the header promises
 * and that nothing is written on failure. Returns 0 (libFuzzer's "keep going"). */
static int fuzz_versioned(const versioned_op *op, const void *full, size_t size, tile_dtype dtype,
                          int32_t arch, int32_t index, size_t struct_size) {
    /* the caller's struct is a heap block of exactly struct_size bytes: reading past it is an
     * ASan report */
    unsigned char *args = block(struct_size, sizeof(size_t));
    if (!args) return 0;
    memcpy(args, full, struct_size < size ? struct_size : size);
    memcpy(args, &struct_size, sizeof struct_size); /* the struct_size member comes first */
    const size_t keep = struct_size > sizeof(size_t) ? struct_size : sizeof(size_t);
    unsigned char *args_before = malloc(keep);
    if (!args_before) {
        free(args);
        return 0;
    }
    memcpy(args_before, args, keep);
    const size_t explain_prefix = strlen(op->explain_name);
    const size_t run_prefix = strlen(op->run_name);
#define IS_INVALID(st) (is_validation_status(st) || (op->also_invalid && (st) == op->also_invalid))

    /* ---- explain for the decoded arch: no device unless arch is 0 */
    tile_decision dec, dec_before;
    memset(&dec, 0x5a, sizeof dec);
    dec.struct_size = sizeof dec;
    dec_before = dec;
    const tile_status se = op->explain(args, arch, &dec);
    CHECK((unsigned)se < TILE_STATUS_COUNT_ && se != TILE_STATUS_NO_CONTEXT);
    CHECK(se != TILE_STATUS_NO_DEVICE || arch == 0);
    const int se_arguments =
        se != TILE_STATUS_SUCCESS && !strncmp(tile_last_error(), op->explain_name, explain_prefix) &&
        !strncmp(tile_last_error() + explain_prefix, ": ", 2) &&
        !strstr(tile_last_error(), ": arch is ") && !strstr(tile_last_error(), "least aligned");
    if (se == TILE_STATUS_SUCCESS) {
        CHECK(tile_last_error()[0] == '\0');
        CHECK(variant_is(dec.variant, op->op, dtype));
        tile_variant_info info;
        memset(&info, 0, sizeof info);
        info.struct_size = sizeof info;
        CHECK(tile_variant_get(dec.variant, &info) == TILE_STATUS_SUCCESS);
        CHECK(arch >= info.arch_min && (info.arch_max == 0 || arch <= info.arch_max));
        CHECK(dec.arch == arch && dec.eligible >= 1);
        CHECK(dtype == TILE_DTYPE_F16 || dtype == TILE_DTYPE_BF16);
        op->check_pick(full, &info);
    } else {
        CHECK(tile_last_error()[0] != '\0');
        CHECK(!memcmp(&dec, &dec_before, sizeof dec));
        if (!se_arguments) CHECK(is_dispatch_status(se) || se == TILE_STATUS_NO_DEVICE ||
                                 se == TILE_STATUS_INVALID_ARGUMENT); /* arch < 10 */
        else CHECK(IS_INVALID(se));
    }

    /* ---- the op: validation, then NO_DEVICE (the driver is missing) */
    const tile_status sr = op->run(args);
    CHECK(sr == TILE_STATUS_NO_DEVICE || IS_INVALID(sr));
    CHECK(sr == TILE_STATUS_NO_DEVICE || (!strncmp(tile_last_error(), op->run_name, run_prefix) &&
                                          !strncmp(tile_last_error() + run_prefix, ": ", 2)));
    if (se_arguments) CHECK(sr == se); /* same checks in the same order */
    else CHECK(sr == TILE_STATUS_NO_DEVICE);
    const tile_status sv = op->variant(index, args);
    if (sr != TILE_STATUS_NO_DEVICE) CHECK(sv == sr);
    else if (index < 0 || index >= tile_variant_count()) CHECK(sv == TILE_STATUS_INVALID_ARGUMENT);
    else if (!variant_is(index, op->op, dtype)) CHECK(sv == TILE_STATUS_NOT_SUPPORTED);
    else CHECK(sv == TILE_STATUS_NO_DEVICE);
    CHECK(!memcmp(args, args_before, keep)); /* args are only read */
#undef IS_INVALID

    /* ---- init zeroes exactly struct_size bytes */
    memset(args, 0xa5, keep);
    const tile_status si = op->init(args, struct_size);
    if (si == TILE_STATUS_SUCCESS) {
        size_t written;
        memcpy(&written, args, sizeof written);
        CHECK(written == struct_size);
        for (size_t i = sizeof(size_t); i < struct_size; i++) CHECK(args[i] == 0);
    } else {
        CHECK(si == TILE_STATUS_INVALID_ARGUMENT && struct_size < size);
        for (size_t i = 0; i < keep; i++) CHECK(args[i] == 0xa5);
    }
    free(args_before);
    free(args);
    return sr == TILE_STATUS_NO_DEVICE; /* 1: the arguments passed validation */
}

/* ---------------------------------------------------------------- attention */

static tile_status attention_run(const void *args) { return tile_flash_attention(args, NULL); }
static tile_status attention_variant(int32_t index, const void *args) {
    return tile_flash_attention_variant(index, args, NULL);
}
static tile_status attention_explain(const void *args, int32_t arch, tile_decision *d) {
    return tile_flash_attention_explain(args, arch, d);
}
static tile_status attention_init(void *args, size_t size) {
    return tile_flash_attention_init(args, size);
}
/* The variant holds the head (its max_cols is its HEAD_DIM). */
static void attention_check_pick(const void *args, const tile_variant_info *info) {
    const tile_flash_attention_args *a = args;
    CHECK(a->head_dim >= 1 && a->head_dim <= info->max_cols && a->head_dim % 8 == 0);
}
static const versioned_op attention_entry_points = {
    "attention",       "tile_flash_attention", "tile_flash_attention_explain",
    attention_run,     attention_variant,      attention_explain,
    attention_init,    attention_check_pick,   TILE_STATUS_NOT_SUPPORTED /* head_dim */};

/* The attention layout, after the selector byte: dtype in the selector's low bits (3: f32, an
 * unsupported dtype), then batch, heads_q, heads_kv, head_dim, causal (int32), seqlen_q,
 * seqlen_k (int64), scale (4 raw bytes), a flag byte, total_q, total_k (int64), 12 strides
 * (int64, each replacing the dense BSHD stride when its bit of a 2-byte mask is set), 4 pointer
 * offsets (2 bytes each), arch, a variant index, a struct size, a workspace byte (since 0.8.0,
 * take_workspace), a workspace_bytes byte (since 0.9.0: 0 to 63 as they are, above that
 * multiples of 4096). */
static int fuzz_attention(reader *r, uint8_t dsel) {
    tile_flash_attention_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.dtype = (tile_dtype)((dsel & 3) == 3 ? TILE_DTYPE_F32 : (dsel & 3) == 0 ? 1 : dsel & 3);
    a.batch = take_i32(r);
    a.heads_q = take_i32(r);
    a.heads_kv = take_i32(r);
    a.head_dim = take_i32(r);
    a.causal = take_i32(r);
    a.seqlen_q = take_i64(r);
    a.seqlen_k = take_i64(r);
    const uint32_t scale_bits = (uint32_t)take(r, 4);
    memcpy(&a.scale, &scale_bits, sizeof a.scale);
    const uint8_t flags = (uint8_t)take(r, 1);
    a.total_q = take_i64(r);
    a.total_k = take_i64(r);
    /* dense BSHD by default, so that later checks are reached; wraps like the caller's math */
    const uint64_t d = (uint64_t)a.head_dim, hq = (uint64_t)a.heads_q, hk = (uint64_t)a.heads_kv;
    const uint64_t tq = (uint64_t)((flags & 1) ? a.total_q : a.seqlen_q);
    const uint64_t tk = (uint64_t)((flags & 1) ? a.total_k : a.seqlen_k);
    int64_t strides[12] = {(int64_t)(tq * hq * d), (int64_t)(hq * d), (int64_t)d,
                           (int64_t)(tk * hk * d), (int64_t)(hk * d), (int64_t)d,
                           (int64_t)(tk * hk * d), (int64_t)(hk * d), (int64_t)d,
                           (int64_t)(tq * hq * d), (int64_t)(hq * d), (int64_t)d};
    const uint16_t stride_mask = (uint16_t)take(r, 2);
    for (int i = 0; i < 12; i++)
        if (stride_mask & (1u << i)) strides[i] = take_i64(r);
    int64_t *const fields[12] = {&a.q_batch_stride, &a.q_seq_stride, &a.q_head_stride,
                                 &a.k_batch_stride, &a.k_seq_stride, &a.k_head_stride,
                                 &a.v_batch_stride, &a.v_seq_stride, &a.v_head_stride,
                                 &a.o_batch_stride, &a.o_seq_stride, &a.o_head_stride};
    for (int i = 0; i < 12; i++) *fields[i] = strides[i];
    const uintptr_t base = (uintptr_t)0x7e5a00000000ull; /* unmapped: never touched */
    uintptr_t ptr[4];
    for (int i = 0; i < 4; i++) ptr[i] = base + (uintptr_t)i * 0x1000000 + (uintptr_t)take(r, 2);
    a.q = (const void *)ptr[0], a.k = (const void *)ptr[1], a.v = (const void *)ptr[2];
    a.o = (void *)ptr[3];
    if (flags & 2) a.q = NULL;
    if (flags & 4) a.o = NULL;
    if (flags & 1) { /* varlen; 0x40: only one of the offset arrays */
        a.cu_seqlens_q = (const int32_t *)(base + 0x5000000 + (flags & 0x80 ? 2 : 0));
        a.cu_seqlens_k = (flags & 0x40) ? NULL : (const int32_t *)(base + 0x6000000);
    }
    if (flags & 8) a.lse = (float *)(base + 0x7000000 + (flags & 0x10 ? 1 : 0));
    int arch_is_raw;
    const int32_t arch_raw = take_i32_tagged(r, &arch_is_raw);
    const int32_t arch = arch_is_raw ? arch_raw
                         : arch_raw < 64 ? 75 + (arch_raw & 31)
                                         : arch_raw - 64;
    const int32_t index = take_i32(r);
    const size_t struct_size = (flags & 0x20) ? (size_t)take(r, 2) % (2 * sizeof a) : sizeof a;
    a.workspace = take_workspace(r, base + 0x8000000);
    const uint8_t bytes_byte = (uint8_t)take(r, 1);
    a.workspace_bytes = bytes_byte < 64 ? bytes_byte : (size_t)(bytes_byte - 63) * 4096;

    const int valid =
        fuzz_versioned(&attention_entry_points, &a, sizeof a, a.dtype, arch, index, struct_size);
    /* what fusedops.h promises of a workspace that passes (else the library saw it zeroed) */
    if (valid && struct_size >= sizeof a) {
        CHECK((uintptr_t)a.workspace % 8 == 0);
        CHECK(a.workspace_bytes == 0 ||
              (a.workspace && a.workspace_bytes >= TILE_FLASH_ATTENTION_WORKSPACE_BYTES));
    }
    /* the size function takes what explain takes, its workspace fields aside */
    size_t need = 0;
    const tile_status sized = tile_flash_attention_workspace_size(&a, &need);
    if (sized == TILE_STATUS_SUCCESS) CHECK(need >= TILE_FLASH_ATTENTION_WORKSPACE_BYTES);
    return 0;
}

/* ---------------------------------------------------------------- grouped matmul */

static tile_status grouped_matmul_run(const void *args) { return tile_grouped_matmul(args, NULL); }
static tile_status grouped_matmul_variant(int32_t index, const void *args) {
    return tile_grouped_matmul_variant(index, args, NULL);
}
static tile_status grouped_matmul_explain(const void *args, int32_t arch, tile_decision *d) {
    return tile_grouped_matmul_explain(args, arch, d);
}
static tile_status grouped_matmul_init(void *args, size_t size) {
    return tile_grouped_matmul_init(args, size);
}
/* Nothing limits a grouped_matmul variant's shape but alignment, arch and shared memory. */
static void grouped_matmul_check_pick(const void *args, const tile_variant_info *info) {
    const tile_grouped_matmul_args *a = args;
    CHECK(info->max_cols == 0 || a->n <= info->max_cols);
}
static const versioned_op grouped_matmul_entry_points = {
    "grouped_matmul",       "tile_grouped_matmul",     "tile_grouped_matmul_explain",
    grouped_matmul_run,     grouped_matmul_variant,    grouped_matmul_explain,
    grouped_matmul_init,    grouped_matmul_check_pick, TILE_STATUS_NOT_SUPPORTED /* n, k */};

static int compare_i64(const void *x, const void *y) {
    const int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return (a > b) - (a < b);
}

/* Whether the `count` element offsets sum_i idx_i * strides[i] (0 <= idx_i < counts[i], three
 * axes) are all different: the brute-force oracle of the library's distinctness rule, for
 * tensors of at most 4096 elements (-1: larger, not checked). */
static int offsets_distinct(const int64_t strides[3], const int64_t counts[3]) {
    int64_t total = 1;
    for (int i = 0; i < 3; i++) {
        if (counts[i] < 1 || counts[i] > 4096) return -1;
        total *= counts[i];
        if (total > 4096) return -1;
    }
    int64_t offsets[4096];
    int64_t n = 0;
    for (int64_t i = 0; i < counts[0]; i++)
        for (int64_t j = 0; j < counts[1]; j++)
            for (int64_t k = 0; k < counts[2]; k++) /* strides are >= 0 and small here */
                offsets[n++] = i * strides[0] + j * strides[1] + k * strides[2];
    qsort(offsets, (size_t)n, sizeof *offsets, compare_i64);
    for (int64_t i = 1; i < n; i++)
        if (offsets[i] == offsets[i - 1]) return 0;
    return 1;
}

/* The grouped matmul layout, after the selector byte (0xD0-0xDF): dtype in the selector's low
 * bits (3: f32), then groups (int32), total_m, n, k (int64), a flag byte, a mask byte whose
 * bits replace the dense strides (ldc, lda, b_group_stride, b_k_stride, b_n_stride,
 * bias_group_stride, in that order) with fuzzed int64s, 5 pointer offsets (a, b, c, bias,
 * offsets: 2 bytes each), arch, a variant index, a struct size (flag 0x20), a workspace byte
 * (take_workspace). Flags: 1
 * bias, 2 a NULL, 4 c NULL, 8 offsets NULL, 0x10 offsets 2 bytes off, 0x40 B stored [groups, n,
 * k], 0x80 b NULL. */
static int fuzz_grouped_matmul(reader *r, uint8_t dsel) {
    tile_grouped_matmul_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.dtype = (tile_dtype)((dsel & 3) == 3 ? TILE_DTYPE_F32 : (dsel & 3) == 0 ? 1 : dsel & 3);
    a.groups = take_i32(r);
    a.total_m = take_i64(r);
    a.n = take_i64(r);
    a.k = take_i64(r);
    const uint8_t flags = (uint8_t)take(r, 1);
    const int kmajor = (flags & 0x40) != 0;
    /* dense by default, so that later checks are reached; wraps like the caller's math */
    const uint64_t n = (uint64_t)a.n, k = (uint64_t)a.k;
    int64_t strides[6] = {(int64_t)n, (int64_t)k, (int64_t)(n * k), kmajor ? 1 : (int64_t)n,
                          kmajor ? (int64_t)k : 1, (int64_t)n};
    const uint8_t stride_mask = (uint8_t)take(r, 1);
    for (int i = 0; i < 6; i++)
        if (stride_mask & (1u << i)) strides[i] = take_i64(r);
    a.ldc = strides[0], a.lda = strides[1], a.b_group_stride = strides[2];
    a.b_k_stride = strides[3], a.b_n_stride = strides[4], a.bias_group_stride = strides[5];
    const uintptr_t base = (uintptr_t)0x7e5b00000000ull; /* unmapped: never touched */
    uintptr_t ptr[5];
    for (int i = 0; i < 5; i++) ptr[i] = base + (uintptr_t)i * 0x1000000 + (uintptr_t)take(r, 2);
    a.a = (flags & 2) ? NULL : (const void *)ptr[0];
    a.b = (flags & 0x80) ? NULL : (const void *)ptr[1];
    a.c = (flags & 4) ? NULL : (void *)ptr[2];
    a.bias = (flags & 1) ? (const void *)ptr[3] : NULL;
    a.offsets = (flags & 8) ? NULL
                            : (const int32_t *)(ptr[4] - ptr[4] % 4 + (flags & 0x10 ? 2 : 0));
    int arch_is_raw;
    const int32_t arch_raw = take_i32_tagged(r, &arch_is_raw);
    const int32_t arch = arch_is_raw ? arch_raw
                         : arch_raw < 64 ? 75 + (arch_raw & 31)
                                         : arch_raw - 64;
    const int32_t index = take_i32(r);
    const size_t struct_size = (flags & 0x20) ? (size_t)take(r, 2) % (2 * sizeof a) : sizeof a;
    a.workspace = take_workspace(r, base + 5 * (uintptr_t)0x1000000);

    const int valid = fuzz_versioned(&grouped_matmul_entry_points, &a, sizeof a, a.dtype, arch,
                                     index, struct_size);
    const int whole = struct_size >= sizeof a; /* else the library saw fields zeroed */
    if (!whole) return 0;
    const size_t elem = a.dtype == TILE_DTYPE_F32 ? 4 : 2;
    if (valid) {
        /* what fusedops.h promises of arguments that pass */
        CHECK(a.dtype == TILE_DTYPE_F16 || a.dtype == TILE_DTYPE_BF16);
        CHECK(a.groups >= 1 && a.groups <= 65536 && a.total_m >= 0);
        CHECK(a.n >= 1 && a.n <= INT32_MAX && a.k >= 1 && a.k <= INT32_MAX);
        CHECK(a.ldc >= a.n && a.lda >= a.k);
        CHECK(a.b_k_stride == 1 || a.b_n_stride == 1);
        CHECK(!(a.b_k_stride == 1 && a.b_n_stride == 1) || a.n == 1 || a.k == 1);
        CHECK(a.b_group_stride >= 0 && a.b_k_stride >= 0 && a.b_n_stride >= 0);
        CHECK(a.a && a.b && a.c && a.offsets && (uintptr_t)a.offsets % 4 == 0);
        CHECK((uintptr_t)a.workspace % 8 == 0);
        CHECK((uintptr_t)a.a % elem == 0 && (uintptr_t)a.b % elem == 0 &&
              (uintptr_t)a.c % elem == 0 && (uintptr_t)a.bias % elem == 0);
        CHECK(!a.bias || a.bias_group_stride >= 0);
        CHECK(!a.bias || a.groups == 1 || a.bias_group_stride >= a.n);
        CHECK(a.groups == 1 || a.b_group_stride > 0);
    }
    /* B's elements, groups included, never share an address when the arguments pass (the
     * rule is sufficient, not necessary: some interleavings it refuses are distinct) */
    if (valid) {
        const int64_t b_strides[3] = {a.b_group_stride, a.b_k_stride, a.b_n_stride};
        const int64_t b_counts[3] = {a.groups, a.k, a.n};
        CHECK(offsets_distinct(b_strides, b_counts) != 0);
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    reader r = {data, size};
    const uint8_t dsel = (uint8_t)take(&r, 1);
    if ((dsel & 0xf0) == 0xe0) return fuzz_attention(&r, dsel);
    if ((dsel & 0xf0) == 0xd0) return fuzz_grouped_matmul(&r, dsel);
    /* mostly a real dtype, sometimes any int */
    const tile_dtype dtype = (dsel & 0xf0) == 0xf0 ? (tile_dtype)take_i32(&r)
                                                   : (tile_dtype)(dsel % 3);
    const int64_t rows = take_i64(&r), cols = take_i64(&r);
    const uint8_t ldsel = (uint8_t)take(&r, 1);
    /* ld = cols (+ small pad) most of the time, so the later checks are reached */
    const int64_t ld_y = (ldsel & 1) ? take_i64(&r)
                                     : (int64_t)((uint64_t)cols + ((ldsel >> 1) & 7)); /* wraps */
    const int64_t ld_x = (ldsel & 16) ? take_i64(&r) : (ldsel & 32) ? ld_y : cols;
    const int32_t pointer_align = take_i32(&r);
    int arch_is_raw;
    const int32_t arch_raw = take_i32_tagged(&r, &arch_is_raw);
    /* small form: 80..111 (real archs), or 0..63 (0: the current device; < 10: invalid) */
    const int32_t arch = arch_is_raw ? arch_raw
                         : arch_raw < 64 ? 80 + (arch_raw & 31)
                                         : arch_raw - 64;
    const uint8_t flags = (uint8_t)take(&r, 1);
    const uint16_t y_off = (uint16_t)take(&r, 2), x_off = (uint16_t)take(&r, 2);
    const int32_t sm_count = 1 + (int32_t)(take(&r, 2) % 2048);
    const int32_t sm_count2 = 1 + (int32_t)(take(&r, 2) % 2048);
    const int32_t index = take_i32(&r);
    const uint16_t struct_sel = (uint16_t)take(&r, 2);
    const uint32_t smem_sel = (uint32_t)take(&r, 3);
    /* the tail: a variant name and a tuning-file line */
    char *tail = malloc(r.n + 1);
    if (!tail) return 0;
    memcpy(tail, r.p, r.n);
    tail[r.n] = '\0';

    /* ---- tile_softmax_explain for the decoded arch */
    const size_t decision_size = (flags & 1) ? struct_sel % (2 * sizeof(tile_decision))
                                             : sizeof(tile_decision);
    tile_decision *d = block(decision_size, sizeof(size_t));
    unsigned char *before = block(decision_size, sizeof(size_t));
    if (!d || !before) {
        free(d);
        free(before);
        free(tail);
        return 0;
    }
    d->struct_size = decision_size;
    memcpy(before, d, decision_size > sizeof(size_t) ? decision_size : sizeof(size_t));
    tile_status se = tile_softmax_explain(dtype, rows, cols, ld_y, ld_x, pointer_align, arch,
                                          (flags & 2) ? NULL : d);
    CHECK((unsigned)se < TILE_STATUS_COUNT_);
    CHECK(se != TILE_STATUS_NO_CONTEXT);
    CHECK(se != TILE_STATUS_NO_DEVICE || arch == 0); /* only arch 0 asks the driver */
    if (se == TILE_STATUS_SUCCESS) {
        CHECK(!(flags & 2) && decision_size >= sizeof(tile_decision));
        CHECK(tile_last_error()[0] == '\0');
        CHECK(d->struct_size == decision_size);
        const int32_t fake = pointer_align >= 256 ? 256 : pointer_align;
        const size_t elem = dtype == TILE_DTYPE_F32 ? 4 : 2;
        int32_t align = align_of((uint64_t)fake);
        if (rows > 1) {
            int32_t s = align_of((uint64_t)ld_y * elem), t = align_of((uint64_t)ld_x * elem);
            s = s < t ? s : t;
            align = align < s ? align : s;
        }
        check_decision(d, dtype, rows, cols, align, arch, tile_arch_smem_limit(arch));
    } else {
        CHECK(tile_last_error()[0] != '\0');
        CHECK(!memcmp(before, d, decision_size > sizeof(size_t) ? decision_size : sizeof(size_t)));
    }
    free(before);
    /* Argument errors name the function; dispatch's own (no variant fits) do not. */
    const int se_arguments = se != TILE_STATUS_SUCCESS &&
                             !strncmp(tile_last_error(), "tile_softmax_explain: ", 22);
    const int se_bad_arch = se_arguments && strstr(tile_last_error(), ": arch is ") != NULL;
    if (se != TILE_STATUS_SUCCESS && !se_arguments) CHECK(is_dispatch_status(se) || arch == 0);

    /* ---- arch 0 needs the driver: NO_DEVICE, unless an argument is bad first */
    if (!(flags & 2) && decision_size >= sizeof(tile_decision)) {
        d->struct_size = sizeof(tile_decision);
        tile_status s0 = tile_softmax_explain(dtype, rows, cols, ld_y, ld_x, pointer_align, 0, d);
        if (!se_arguments || se_bad_arch) {
            /* the arguments were good: the driver is asked, and is missing */
            CHECK(s0 == TILE_STATUS_NO_DEVICE);
            CHECK(strstr(tile_last_error(), MISSING_DRIVER) != NULL);
        } else {
            CHECK(s0 == se);
        }
    }

    /* ---- the ops, with fake pointers that must never be touched */
    const uintptr_t base = (uintptr_t)0x7e5a00000000ull; /* unmapped */
    void *y = (flags & 4) ? NULL : (void *)(base + y_off);
    const void *x = (flags & 8) ? NULL : (flags & 16) ? (const void *)y
                                                      : (const void *)(base + 0x100000 + x_off);
    tile_status ss = tile_softmax(dtype, y, x, rows, cols, ld_y, ld_x, NULL);
    CHECK(ss == TILE_STATUS_NO_DEVICE || is_validation_status(ss));
    CHECK(strstr(tile_last_error(), "tile_softmax") || ss == TILE_STATUS_NO_DEVICE);
    char message[512];
    snprintf(message, sizeof message, "%s", tile_last_error());
    tile_status sl = tile_log_softmax(dtype, y, x, rows, cols, ld_y, ld_x, NULL);
    CHECK(sl == ss); /* same validation, same order */
    if (ss != TILE_STATUS_NO_DEVICE) {
        /* same message but for the function's name */
        const char *m = tile_last_error();
        CHECK(!strncmp(m, "tile_log_softmax", 16) && !strcmp(m + 16, message + 12));
    }
    tile_status sv = tile_softmax_variant(index, (int32_t)(flags >> 7), dtype, y, x, rows, cols,
                                          ld_y, ld_x, NULL);
    /* a variant of another op or dtype is refused before the device */
    CHECK(sv == TILE_STATUS_NO_DEVICE || is_validation_status(sv) ||
          (sv == TILE_STATUS_NOT_SUPPORTED && ss == TILE_STATUS_NO_DEVICE &&
           !variant_is(index, "softmax", dtype)));
    if (sv == TILE_STATUS_NO_DEVICE && index >= 0 && index < tile_variant_count())
        CHECK(variant_is(index, "softmax", dtype));
    if (is_validation_status(ss)) CHECK(sv == ss);
    if (ss == TILE_STATUS_NO_DEVICE && (index < 0 || index >= tile_variant_count()))
        CHECK(sv == TILE_STATUS_INVALID_ARGUMENT);

    /* explain validates as the ops do: same status for the same arguments */
    if (y && x && y != x && (arch >= 10)) {
        tile_decision e;
        e.struct_size = sizeof e;
        const int32_t a = align_of((uint64_t)((uintptr_t)y | (uintptr_t)x));
        tile_status sx = tile_softmax_explain(dtype, rows, cols, ld_y, ld_x, a, arch, &e);
        if (ss == TILE_STATUS_NO_DEVICE) CHECK(is_dispatch_status(sx));
        else CHECK(sx == ss);
    }

    /* ---- dispatch proper, with an SM count (the heuristic's other input), and its cache */
    int32_t align = 0;
    const int32_t arch_ok = arch >= 10 ? arch : 90;
    if (tile_check_rowwise("fuzz", dtype, (const void *)(base + y_off),
                           (const void *)(base + 0x100000 + x_off), rows, cols, ld_y, ld_x,
                           &align) == TILE_STATUS_SUCCESS) {
        CHECK(align >= 1 && align <= 256 && (align & (align - 1)) == 0);
        /* Two devices of this arch (SM counts, shared-memory limits and memory bandwidths may
         * differ: SKUs, MIG slices); the second may not be given the first one's cached
         * decision. */
        static const char op[] = "softmax"; /* the cache compares op by address */
        /* index's low bit gives the second device the first one's SM count and shared memory,
         * so that only the memory bandwidth may tell them apart */
        const int same_sms = index & 1;
        for (int device = 0; device < 2; device++) {
            const int32_t sms = device && !same_sms ? sm_count2 : sm_count;
            const uint32_t sel = device && !same_sms ? smem_sel >> 12 : smem_sel;
            const int32_t smem_limit = (sel & 1) ? (int32_t)(((sel >> 1) & 0x7ff) * 128)
                                                 : tile_arch_smem_limit(arch_ok);
            /* a memory bandwidth from a byte of struct_sel: unknown (0) below 32, else 2900 to
             * 5564 GB/s, across the tags of the compiled lines (3352, 4814) */
            const uint32_t bw = (uint32_t)(struct_sel >> (8 * device)) & 0xff;
            const int32_t gbs = bw < 32 ? 0 : 2900 + (int32_t)(bw - 32) * 12;
            tile_problem p = {.op = "softmax", .dtype = dtype, .rows = rows, .cols = cols,
                              .align = align, .arch = arch_ok, .sm_count = sms,
                              .smem_limit = smem_limit, .mem_bandwidth_gbs = gbs};
            tile_decision full;
            full.struct_size = sizeof full;
            tile_status sd = tile_dispatch(&p, &full);
            CHECK(is_dispatch_status(sd));
            if (sd == TILE_STATUS_SUCCESS)
                check_decision(&full, dtype, rows, cols, align, arch_ok, smem_limit);
            p.op = op;
            for (int again = 0; again < 2; again++) { /* the second answer is the cached one */
                int32_t cached = -2;
                CHECK(tile_dispatch_cached(&p, &cached) == sd);
                if (sd == TILE_STATUS_SUCCESS) CHECK(cached == full.variant);
            }
        }
    }
    free(d);

    /* ---- introspection */
    const size_t info_size = (flags & 32) ? struct_sel % (2 * sizeof(tile_variant_info))
                                          : sizeof(tile_variant_info);
    tile_variant_info *info = block(info_size, sizeof(size_t));
    if (info) {
        info->struct_size = info_size;
        tile_status sg = tile_variant_get(index, (flags & 64) ? NULL : info);
        if (sg == TILE_STATUS_SUCCESS) {
            CHECK(index >= 0 && index < tile_variant_count());
            CHECK(info->name && info->op && info->params);
            CHECK(tile_variant_find(info->name) == index); /* names are unique */
            CHECK((unsigned)info->dtype < TILE_DTYPE_COUNT_);
            CHECK(info->struct_size == info_size);
        } else {
            CHECK(sg == TILE_STATUS_INVALID_ARGUMENT);
            CHECK(tile_last_error()[0] != '\0');
        }
        free(info);
    }
    const int32_t found = tile_variant_find(tail);
    CHECK(found >= -1 && found < tile_variant_count());
    if (found >= 0) {
        tile_variant_info i2;
        i2.struct_size = sizeof i2;
        CHECK(tile_variant_get(found, &i2) == TILE_STATUS_SUCCESS && !strcmp(i2.name, tail));
    }
    CHECK(strcmp(tile_status_string((tile_status)index), "") != 0);
    CHECK(strcmp(tile_dtype_string(dtype), "") != 0);
    CHECK(strcmp(tile_rule_string((tile_rule)arch_raw), "") != 0);

    /* ---- a line of a tuning file (FUSEDOPS_TUNING_FILE, autotune_results/) */
    tuning_line t;
    char err[64];
    const size_t tail_len = strlen(tail);
    int pr = tuning_parse_line(tail, &t, err, sizeof err);
    CHECK(pr >= -1 && pr <= 1);
    if (pr == 1) {
        CHECK(t.arch >= 10);
        CHECK(t.dtype >= 0 && t.dtype < TILE_DTYPE_COUNT_);
        CHECK(t.rows_log2 >= 0 && t.rows_log2 < 63 && t.cols_step >= 0 && t.cols_step < 126);
        CHECK(t.cols_step != 1 && tuning_cols_step_exact(tuning_cols_of_step(t.cols_step)) == t.cols_step);
        CHECK(t.op >= tail && t.op <= tail + tail_len);
        CHECK(t.variant >= tail && t.variant <= tail + tail_len);
    } else if (pr == -1) {
        CHECK(memchr(err, '\0', sizeof err) != NULL);
    }
    free(tail);
    return 0;
}
