/* FUSEDOPS_TUNING_FILE: the run-time tuned table. The library reads the variable once per
 * process, so each scenario is its own run of this program: test_tuning_file MODE, where MODE
 * is good, compute (attention and grouped matmul entries), malformed, unknown, dtype, missing,
 * runner_up, table_op or table_op_variant (ctest runs each). Explain with an explicit arch
 * needs no GPU. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "fusedops.h"

static const char *mode;
static char path[256];

static void write_table(const char *body) {
    snprintf(path, sizeof path, "/tmp/fusedops_tuning_%d.tsv", (int)getpid());
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("arch\top\tdtype\tbucket\tvariant\ttime_us\trunner_up\trunner_up_us\n", f);
    fputs(body, f);
    fclose(f);
    setenv("FUSEDOPS_TUNING_FILE", path, 1);
}

static tile_status explain(int64_t rows, int64_t cols, tile_decision *d) {
    memset(d, 0, sizeof *d);
    d->struct_size = sizeof *d;
    return tile_softmax_explain(TILE_DTYPE_BF16, rows, cols, cols, cols, 256, 90, d);
}

static const char *variant_name(int32_t index) {
    tile_variant_info info = {.struct_size = sizeof info};
    assert_int_equal(tile_variant_get(index, &info), TILE_STATUS_SUCCESS);
    return info.name;
}

/* A variant the compiled table would not pick for 8x8 bf16 on sm_90 (a scalar 16-row one):
 * seeing it proves the file's entry won. */
#define PLANTED "softmax_bf16_r16_n32_w4_v1"
/* The same for attention and grouped matmul: the widest head (256, for heads of 64: the
 * heuristic never pads 4x) and the smallest mma.sync tile (on sm_90 the heuristic takes a
 * warp-specialized one). */
#define PLANTED_ATTENTION "attention_bf16_d256_m64_n32_w4"
#define PLANTED_GMM "grouped_matmul_bf16_m64_n64_w2_s4"

/* Dense BSHD attention, bf16, at stand-in pointers (never dereferenced): dispatch's problem is
 * batch * heads * seqlen query rows x head_dim. */
static tile_status explain_attention(int32_t batch, int32_t heads, int64_t seqlen,
                                     int32_t head_dim, tile_decision *d) {
    static _Alignas(256) unsigned char buf[512];
    tile_flash_attention_args a;
    tile_flash_attention_init(&a, sizeof a);
    a.dtype = TILE_DTYPE_BF16;
    a.batch = batch, a.heads_q = a.heads_kv = heads, a.head_dim = head_dim;
    a.seqlen_q = a.seqlen_k = seqlen;
    a.q = a.k = a.v = buf, a.o = buf + 256;
    a.q_head_stride = a.k_head_stride = a.v_head_stride = a.o_head_stride = head_dim;
    a.q_seq_stride = a.k_seq_stride = a.v_seq_stride = a.o_seq_stride = (int64_t)heads * head_dim;
    a.q_batch_stride = a.k_batch_stride = a.v_batch_stride = a.o_batch_stride =
        seqlen * heads * head_dim;
    memset(d, 0, sizeof *d);
    d->struct_size = sizeof *d;
    return tile_flash_attention_explain(&a, 90, d);
}

/* Dense grouped matmul, bf16, B [groups, k, n] (or [groups, n, k] with b_nk) and a bias:
 * dispatch's problem is total_m / groups rows x n. */
static tile_status explain_grouped(int32_t groups, int64_t total_m, int64_t k, int64_t n,
                                   int b_nk, tile_decision *d) {
    static _Alignas(256) unsigned char buf[1024];
    tile_grouped_matmul_args g;
    tile_grouped_matmul_init(&g, sizeof g);
    g.dtype = TILE_DTYPE_BF16;
    g.groups = groups, g.total_m = total_m, g.k = k, g.n = n;
    g.a = g.b = g.bias = buf, g.c = buf + 256;
    g.offsets = (const int32_t *)(const void *)(buf + 512);
    g.lda = k, g.ldc = n;
    g.b_group_stride = k * n;
    g.b_k_stride = b_nk ? 1 : n;
    g.b_n_stride = b_nk ? k : 1;
    g.bias_group_stride = n;
    memset(d, 0, sizeof *d);
    d->struct_size = sizeof *d;
    return tile_grouped_matmul_explain(&g, 90, d);
}

/* A bucket's entries as tune writes them: the winner (16-byte accesses), then the fastest
 * variant that takes 2-byte aligned rows. */
#define WIDE_WINNER "softmax_bf16_r32_n64_w4_v8"
#define NARROW_WINNER "softmax_bf16_r8_n64_w4_v1"

static void test_good_table(void **state) {
    (void)state;
    write_table("sm_90\tsoftmax\tbf16\t8x8\t" PLANTED "\t1.0\t-\t0\n"
                "# a comment line\n"
                "sm_90\tsoftmax\tbf16\t64x32\t" PLANTED "\t1.0\t-\t0\n"
                "sm_90\tsoftmax\tbf16\t16x48\t" WIDE_WINNER "\t1.0\t-\t0\n"
                "sm_90\tsoftmax\tbf16\t16x48\t" NARROW_WINNER "\t1.2\t-\t0\n"
                "sm_90\tattention\tbf16\t4096x64\t" PLANTED_ATTENTION "\t1.0\t-\t0\n"
                "sm_90\tgrouped_matmul\tbf16\t256x4096\t" PLANTED_GMM "\t1.0\t-\t0\n");
    tile_decision d;
    /* exact bucket: tuned, from the file */
    assert_int_equal(explain(8, 8, &d), TILE_STATUS_SUCCESS);
    assert_string_equal(variant_name(d.variant), PLANTED);
    assert_int_equal(d.rule, TILE_RULE_TUNED);
    assert_non_null(strstr(d.reason, "FUSEDOPS_TUNING_FILE"));
    /* rows 6 rounds to the 8 bucket: still the exact entry */
    assert_int_equal(explain(6, 8, &d), TILE_STATUS_SUCCESS);
    assert_int_equal(d.rule, TILE_RULE_TUNED);
    /* one column bucket away (cols 16 -> bucket 16, entry at 8): nearest */
    assert_int_equal(explain(8, 16, &d), TILE_STATUS_SUCCESS);
    assert_int_equal(d.rule, TILE_RULE_NEAREST);
    assert_string_equal(variant_name(d.variant), PLANTED);
    /* cols between two powers of two: 40 and 33 columns go to the 48 bucket (3 x 16). Rows of
     * 40 bf16 (80 bytes) take the winner's 16-byte accesses; rows of 33 (66 bytes, so 2-byte
     * aligned) rule it out and take the bucket's next entry, the narrow one. */
    assert_int_equal(explain(16, 40, &d), TILE_STATUS_SUCCESS);
    assert_int_equal(d.rule, TILE_RULE_TUNED);
    assert_string_equal(variant_name(d.variant), WIDE_WINNER);
    assert_non_null(strstr(d.reason, "bucket 16x48"));
    assert_int_equal(explain(16, 33, &d), TILE_STATUS_SUCCESS);
    assert_int_equal(d.rule, TILE_RULE_TUNED);
    assert_string_equal(variant_name(d.variant), NARROW_WINNER);
    assert_non_null(strstr(d.reason, "bucket 16x48"));
    /* 49 columns are past the 48 bucket: 64, which the file has no entry for */
    assert_int_equal(explain(16, 49, &d), TILE_STATUS_SUCCESS);
    assert_true(d.rule != TILE_RULE_TUNED || !strstr(d.reason, "FUSEDOPS_TUNING_FILE"));
    /* an entry whose variant cannot take the shape is skipped: 8 x 100 needs more than 32
     * columns, so the planted variant is never chosen */
    assert_int_equal(explain(8, 100, &d), TILE_STATUS_SUCCESS);
    assert_string_not_equal(variant_name(d.variant), PLANTED);
    /* another arch does not see sm_90 entries: heuristic (no sm_80 table is compiled in) */
    memset(&d, 0, sizeof d);
    d.struct_size = sizeof d;
    assert_int_equal(tile_softmax_explain(TILE_DTYPE_BF16, 8, 8, 8, 8, 256, 80, &d),
                     TILE_STATUS_SUCCESS);
    assert_int_equal(d.rule, TILE_RULE_HEURISTIC);
}

/* Entries of attention and grouped matmul (fusedops tune --op attention|grouped_matmul) load
 * and decide explain's calls (so the calls') as softmax's do, keyed by dispatch's problem. The
 * cases hold whatever the compiled table has for these ops (a grid of query rows 2^10 to 2^20
 * at heads of 64 and 128, group rows 2^4 to 2^12 at n 2^9 to 2^13): the file wins its own
 * bucket, and the other buckets asked about are ones no compiled entry is nearer to. */
static void test_good_table_compute_ops(void **state) {
    (void)state;
    write_table("sm_90\tattention\tbf16\t4096x64\t" PLANTED_ATTENTION "\t1.0\t-\t0\n"
                "sm_90\tattention\tbf16\t4096x32\t" PLANTED_ATTENTION "\t1.0\t-\t0\n"
                "sm_90\tgrouped_matmul\tbf16\t256x4096\t" PLANTED_GMM "\t1.0\t-\t0\n");
    tile_decision d;
    /* attention: 1 x 8 heads x 512 queries = 4096 rows, head_dim 64: the exact bucket */
    assert_int_equal(explain_attention(1, 8, 512, 64, &d), TILE_STATUS_SUCCESS);
    assert_string_equal(variant_name(d.variant), PLANTED_ATTENTION);
    assert_int_equal(d.rule, TILE_RULE_TUNED);
    assert_non_null(strstr(d.reason, "FUSEDOPS_TUNING_FILE table for sm_90, bucket 4096x64"));
    /* any split of the rows: 2 x 4 x 500 = 4000 rows, head_dim 56, is the same bucket */
    assert_int_equal(explain_attention(2, 4, 500, 56, &d), TILE_STATUS_SUCCESS);
    assert_int_equal(d.rule, TILE_RULE_TUNED);
    assert_string_equal(variant_name(d.variant), PLANTED_ATTENTION);
    /* 8192 rows of heads of 32: one rows-bucket from the 4096x32 entry */
    assert_int_equal(explain_attention(2, 8, 512, 32, &d), TILE_STATUS_SUCCESS);
    assert_int_equal(d.rule, TILE_RULE_NEAREST);
    assert_string_equal(variant_name(d.variant), PLANTED_ATTENTION);
    assert_non_null(strstr(d.reason, "bucket 4096x32"));
    /* 2^26 rows: too far from any entry, the heuristic (which never pads heads of 64 to 256) */
    assert_int_equal(explain_attention(64, 64, 16384, 64, &d), TILE_STATUS_SUCCESS);
    assert_int_equal(d.rule, TILE_RULE_HEURISTIC);
    assert_string_not_equal(variant_name(d.variant), PLANTED_ATTENTION);
    /* grouped matmul: 8 groups over 2048 rows (256 a group on average), n 4096 */
    assert_int_equal(explain_grouped(8, 2048, 1024, 4096, 0, &d), TILE_STATUS_SUCCESS);
    assert_string_equal(variant_name(d.variant), PLANTED_GMM);
    assert_int_equal(d.rule, TILE_RULE_TUNED);
    assert_non_null(strstr(d.reason, "FUSEDOPS_TUNING_FILE table for sm_90, bucket 256x4096"));
    /* 300 rows a group, n 3584, B [g, n, k]: the same bucket (the layout is not in the key) */
    assert_int_equal(explain_grouped(10, 3000, 512, 3584, 1, &d), TILE_STATUS_SUCCESS);
    assert_int_equal(d.rule, TILE_RULE_TUNED);
    assert_string_equal(variant_name(d.variant), PLANTED_GMM);
    /* one group of 2^20 rows: too far, the heuristic's warp-specialized pick */
    assert_int_equal(explain_grouped(1, 1 << 20, 1024, 4096, 0, &d), TILE_STATUS_SUCCESS);
    assert_int_equal(d.rule, TILE_RULE_HEURISTIC);
    assert_string_not_equal(variant_name(d.variant), PLANTED_GMM);
}

static void expect_failure(const char *needle);

/* Table ops (tuning_parse.h): a norm-less call (tile_residual_dropout's) takes its bucket's
 * residual_dropout line, a dropout + norm call the norm line; where a norm line is nearer than
 * any residual_dropout line, the norm-less call takes the norm line. */
#define PLANTED_NORM "norm_bf16_loop_n2048_w4_v8_d1"
#define PLANTED_DROPOUT "norm_bf16_loop_n4096_w4_v8_d1"

static tile_status explain_add_norm(tile_norm_kind norm, int64_t rows, int64_t cols,
                                    int32_t arch, tile_decision *d) {
    static _Alignas(256) unsigned char buf[6][256];
    tile_add_norm_args a = {.struct_size = sizeof a, .dtype = TILE_DTYPE_BF16, .norm = norm,
                            .rows = rows, .cols = cols, .x = buf[0], .ld_x = cols,
                            .residual = buf[1], .ld_residual = cols, .bias = buf[2],
                            .s = buf[3], .ld_s = cols, .p = 0.1f, .seed = 1, .eps = 1e-5f};
    if (norm != TILE_NORM_NONE) a.y = buf[4], a.ld_y = cols, a.weight = buf[5];
    memset(d, 0, sizeof *d);
    d->struct_size = sizeof *d;
    return tile_add_norm_explain(&a, arch, d);
}

static void test_table_op(void **state) {
    (void)state;
    write_table("sm_90\tnorm\tbf16\t8x64\t" PLANTED_NORM "\t1.0\t-\t0\n"
                "sm_90\tresidual_dropout\tbf16\t8x64\t" PLANTED_DROPOUT "\t1.0\t-\t0\n"
                /* sm_80: no compiled table, so the file's lines alone decide */
                "sm_80\tnorm\tbf16\t4096x64\t" PLANTED_NORM "\t1.0\t-\t0\n"
                "sm_80\tnorm\tbf16\t8x128\t" PLANTED_NORM "\t1.0\t-\t0\n"
                "sm_80\tresidual_dropout\tbf16\t8x256\t" PLANTED_DROPOUT "\t1.0\t-\t0\n");
    tile_decision d;
    assert_int_equal(explain_add_norm(TILE_NORM_NONE, 8, 64, 90, &d), TILE_STATUS_SUCCESS);
    assert_string_equal(variant_name(d.variant), PLANTED_DROPOUT);
    assert_int_equal(d.rule, TILE_RULE_TUNED);
    assert_non_null(
        strstr(d.reason, "FUSEDOPS_TUNING_FILE table for sm_90, residual_dropout bucket 8x64"));
    assert_int_equal(explain_add_norm(TILE_NORM_LAYER, 8, 64, 90, &d), TILE_STATUS_SUCCESS);
    assert_string_equal(variant_name(d.variant), PLANTED_NORM);
    assert_non_null(strstr(d.reason, "FUSEDOPS_TUNING_FILE table for sm_90, bucket 8x64"));
    assert_int_equal(explain_add_norm(TILE_NORM_RMS, 8, 64, 90, &d), TILE_STATUS_SUCCESS);
    assert_string_equal(variant_name(d.variant), PLANTED_NORM);
    /* no residual_dropout line near 4096 x 64: the norm line */
    assert_int_equal(explain_add_norm(TILE_NORM_NONE, 4096, 64, 80, &d), TILE_STATUS_SUCCESS);
    assert_string_equal(variant_name(d.variant), PLANTED_NORM);
    assert_non_null(strstr(d.reason, "FUSEDOPS_TUNING_FILE table for sm_80, bucket 4096x64"));
    /* the norm line replaces the call's own only where strictly closer: at 128 columns its own
     * bucket against a residual_dropout line two column steps away; at 192, one step from
     * each, the residual_dropout line */
    assert_int_equal(explain_add_norm(TILE_NORM_NONE, 8, 128, 80, &d), TILE_STATUS_SUCCESS);
    assert_string_equal(variant_name(d.variant), PLANTED_NORM);
    assert_int_equal(d.rule, TILE_RULE_TUNED);
    assert_int_equal(explain_add_norm(TILE_NORM_NONE, 8, 192, 80, &d), TILE_STATUS_SUCCESS);
    assert_string_equal(variant_name(d.variant), PLANTED_DROPOUT);
    assert_int_equal(d.rule, TILE_RULE_NEAREST);
    assert_non_null(strstr(d.reason, "residual_dropout bucket 8x256"));
}

/* A table op's lines name variants of its variant op. */
static void test_table_op_wrong_variant(void **state) {
    (void)state;
    write_table("sm_90\tresidual_dropout\tbf16\t8x8\t" PLANTED "\n");
    expect_failure("variant '" PLANTED "' is not a norm bf16 variant");
}

static void expect_failure(const char *needle) {
    tile_decision d;
    tile_status s = explain(8, 8, &d);
    assert_int_equal(s, TILE_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(tile_last_error(), "FUSEDOPS_TUNING_FILE"));
    assert_non_null(strstr(tile_last_error(), needle));
    /* and it stays failed: a bad table is not silently ignored later */
    assert_int_equal(explain(8, 8, &d), TILE_STATUS_INVALID_ARGUMENT);
}

static void test_malformed_table(void **state) {
    (void)state;
    write_table("sm_90\tsoftmax\tbf16\t8x8\t" PLANTED "\n"
                "sm_90\tsoftmax\tbf16\t8x7\t" PLANTED "\n");
    char where[300];
    snprintf(where, sizeof where, "%s:3:", path); /* header is line 1 */
    expect_failure(where);
    expect_failure("is not ROWSxCOLS");
}

static void test_unknown_variant(void **state) {
    (void)state;
    write_table("sm_90\tsoftmax\tbf16\t8x8\tsoftmax_bf16_no_such_variant\n");
    expect_failure("unknown variant 'softmax_bf16_no_such_variant'");
}

static void test_wrong_dtype(void **state) {
    (void)state;
    write_table("sm_90\tsoftmax\tf32\t8x8\t" PLANTED "\n");
    expect_failure("is not a softmax f32 variant");
}

static void test_bad_runner_up(void **state) {
    (void)state;
    write_table("sm_90\tsoftmax\tbf16\t8x8\t" PLANTED "\t1.0\tsoftmax_f16_r16_n32_w4_v1\t1.1\n");
    expect_failure("runner-up 'softmax_f16_r16_n32_w4_v1' is not a softmax bf16 variant");
}

static void test_missing_file(void **state) {
    (void)state;
    setenv("FUSEDOPS_TUNING_FILE", "/nonexistent/tuning.tsv", 1);
    expect_failure("cannot be opened");
}

int main(int argc, char **argv) {
    mode = argc > 1 ? argv[1] : "good";
    const struct CMUnitTest good[] = {cmocka_unit_test(test_good_table)};
    const struct CMUnitTest compute[] = {cmocka_unit_test(test_good_table_compute_ops)};
    const struct CMUnitTest malformed[] = {cmocka_unit_test(test_malformed_table)};
    const struct CMUnitTest unknown[] = {cmocka_unit_test(test_unknown_variant)};
    const struct CMUnitTest dtype[] = {cmocka_unit_test(test_wrong_dtype)};
    const struct CMUnitTest missing[] = {cmocka_unit_test(test_missing_file)};
    const struct CMUnitTest runner_up[] = {cmocka_unit_test(test_bad_runner_up)};
    const struct CMUnitTest table_op[] = {cmocka_unit_test(test_table_op)};
    const struct CMUnitTest table_op_variant[] = {cmocka_unit_test(test_table_op_wrong_variant)};
    int rc;
    if (!strcmp(mode, "good")) rc = cmocka_run_group_tests(good, NULL, NULL);
    else if (!strcmp(mode, "compute")) rc = cmocka_run_group_tests(compute, NULL, NULL);
    else if (!strcmp(mode, "malformed")) rc = cmocka_run_group_tests(malformed, NULL, NULL);
    else if (!strcmp(mode, "unknown")) rc = cmocka_run_group_tests(unknown, NULL, NULL);
    else if (!strcmp(mode, "dtype")) rc = cmocka_run_group_tests(dtype, NULL, NULL);
    else if (!strcmp(mode, "missing")) rc = cmocka_run_group_tests(missing, NULL, NULL);
    else if (!strcmp(mode, "runner_up")) rc = cmocka_run_group_tests(runner_up, NULL, NULL);
    else if (!strcmp(mode, "table_op")) rc = cmocka_run_group_tests(table_op, NULL, NULL);
    else if (!strcmp(mode, "table_op_variant"))
        rc = cmocka_run_group_tests(table_op_variant, NULL, NULL);
    else {
        fprintf(stderr, "usage: test_tuning_file good|compute|malformed|unknown|dtype|missing|"
                        "runner_up|table_op|table_op_variant\n");
        return 2;
    }
    if (path[0]) unlink(path);
    return rc;
}
