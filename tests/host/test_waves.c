/* Dispatch weighs a tuned bucket's winner against its runner-up by waves (src/dispatch.c,
 * weigh_waves; docs/tuning.md), and attention's by its walks (weigh_attention): a table
 * written to FUSEDOPS_TUNING_FILE, problems built by hand with a made-up device occupancy (and
 * memory bandwidth), tile_dispatch called directly. No GPU needed. The table is read once per
 * process, so every case shares the one written by main. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fusedops.h"
#include "internal.h"
#include "tuning_parse.h"

/* One program per SM (128 KiB of shared memory) against four per SM (512 threads). */
#define STAGED "softmax_bf16_staged_n65536_v8"
#define LOOP "softmax_bf16_loop_n4096_w16_v8"
#define SCALAR "softmax_bf16_loop_n1024_w4_v1"
#define SMS 132

static int32_t *blocks_per_sm; /* per registry entry: STAGED 1, every other variant 4 */

static tile_problem problem(int64_t rows, int64_t cols, int32_t align) {
    return (tile_problem){.op = "softmax", .dtype = TILE_DTYPE_BF16, .rows = rows, .cols = cols,
                          .align = align, .arch = 90, .sm_count = SMS,
                          .smem_limit = tile_arch_smem_limit(90), .blocks_per_sm = blocks_per_sm};
}

static const char *dispatched(const tile_problem *p, tile_decision *d) {
    memset(d, 0, sizeof *d);
    d->struct_size = sizeof *d;
    assert_int_equal(tile_dispatch(p, d), TILE_STATUS_SUCCESS);
    return tile_registry[d->variant].name;
}

/* 256 rows are 2 waves of STAGED (132 a wave) and 1 of LOOP (528); 300 rows are 3 and 1. */
static void test_runner_up_by_waves(void **state) {
    (void)state;
    tile_decision d;
    tile_problem p = problem(256, 65536, 16);
    assert_string_equal(dispatched(&p, &d), STAGED); /* the bucket's own rows: as tuned */
    assert_non_null(strstr(d.reason, "by waves at 256 rows, winner 30.00 us against runner-up 31.60 us"));
    p.rows = 300; /* STAGED predicted 30 x 3/2 = 45 us, LOOP 31.6 */
    assert_string_equal(dispatched(&p, &d), LOOP);
    assert_int_equal(d.rule, TILE_RULE_TUNED);
    assert_non_null(strstr(d.reason, "by waves at 300 rows, runner-up 31.60 us against winner 45.00 us"));
    p.rows = 200; /* 2 waves of STAGED again (200 > 132): as tuned */
    assert_string_equal(dispatched(&p, &d), STAGED);
}

/* Without the device's occupancy (explain for another arch), the tuned order stands. */
static void test_no_occupancy(void **state) {
    (void)state;
    tile_decision d;
    tile_problem p = problem(300, 65536, 16);
    p.blocks_per_sm = NULL;
    assert_string_equal(dispatched(&p, &d), STAGED);
    assert_null(strstr(d.reason, "waves"));
    p = problem(300, 65536, 16);
    p.sm_count = 0;
    assert_string_equal(dispatched(&p, &d), STAGED);
}

/* A runner-up the call cannot run (16-byte accesses on 2-byte aligned rows) is not weighed;
 * nor is an entry without times (a 5-column line). */
static void test_runner_up_not_eligible_or_untimed(void **state) {
    (void)state;
    tile_decision d;
    tile_problem p = problem(300, 49152, 2); /* the 256x49152 entry: SCALAR, then LOOP */
    assert_string_equal(dispatched(&p, &d), SCALAR);
    assert_null(strstr(d.reason, "waves"));
    p = problem(300, 32768, 16); /* the 256x32768 entry has no times */
    assert_string_equal(dispatched(&p, &d), STAGED);
    assert_null(strstr(d.reason, "waves"));
}

/* Waves weigh row-wise ops only: an attention entry's runner-up is never taken this way. */
static void test_not_for_attention(void **state) {
    (void)state;
    tile_decision d;
    tile_problem p = {.op = "attention", .dtype = TILE_DTYPE_BF16, .rows = 300 * 128, .cols = 128,
                      .align = 16, .arch = 90, .sm_count = SMS,
                      .smem_limit = tile_arch_smem_limit(90), .blocks_per_sm = blocks_per_sm};
    assert_string_equal(dispatched(&p, &d), "attention_bf16_d128_m64_n64_w4");
    assert_null(strstr(d.reason, "waves"));
}

/* Attention weighs a bucket's winner and runner-up by how each would walk the call against the
 * tune grid's shape of the line's bucket (weigh_attention, tile_attention_walk_ratio): the lines
 * below are timed on full attention, 262144x64 at 4 x 32 heads x 2048, 65536x64 at 2 x 16
 * heads x 2048 and (made up) 1048576x64 at 4 x 32 x 8192; one program of each variant an SM.
 * The expected times come from a separate model of the walks (scripts/attention_walk_model.py),
 * not from this library (whose times are floats: 43.19 where that model gives 43.195). */
#define WS3 "attention_bf16_d64_m192_n128_s2_ws_sm90"
#define WS "attention_bf16_d64_m128_n128_s2_ws_sm90"
static tile_problem attention_problem(int64_t pairs, int64_t seq_q, int64_t seq_k, int causal) {
    return (tile_problem){.op = "attention", .dtype = TILE_DTYPE_BF16, .rows = pairs * seq_q,
                          .cols = 64, .align = 16, .arch = 90, .sm_count = SMS,
                          .smem_limit = tile_arch_smem_limit(90), .blocks_per_sm = blocks_per_sm,
                          .seqlen_q = seq_q, .seqlen_k = seq_k, .causal = causal,
                          .block_counter = 1};
}
/* p goes to `variant`, with `note` (the weighing's times) in the reason; d: the decision. */
static void expect_weighed(const tile_problem *p, tile_decision *d, const char *variant,
                           const char *note) {
    assert_string_equal(dispatched(p, d), variant);
    assert_non_null(strstr(d->reason, note));
}
static void test_attention_walks(void **state) {
    (void)state;
    tile_decision d;
    /* the grid's own shape: as tuned */
    tile_problem p = attention_problem(128, 2048, 2048, 0);
    expect_weighed(&p, &d, WS3, "walked at 2048 queries x 2048 keys, winner 318.60 us against runner-up 341.74 us");
    /* 16 heads of 2048: 176 blocks of 192 rows take 2 rounds of 132 programs where the grid's
     * 352 took 3, the 128-row blocks' 256 two where 512 took 4 */
    p = attention_problem(16, 2048, 2048, 0);
    expect_weighed(&p, &d, WS, "walked at 2048 queries x 2048 keys, runner-up 43.19 us against winner 55.95 us");
    assert_int_equal(d.rule, TILE_RULE_NEAREST);
    /* the same without the device's SM count and occupancy (explain for an arch): 132 SMs and
     * one program each assumed, as here */
    tile_problem unknown = p;
    unknown.sm_count = 0;
    unknown.blocks_per_sm = NULL;
    expect_weighed(&unknown, &d, WS, "runner-up 43.19 us against winner 55.95 us");
    p = attention_problem(16, 2048, 2048, 1);
    expect_weighed(&p, &d, WS, "causal at 2048 queries x 2048 keys, runner-up 25.68 us against winner 30.25 us");
    /* causal, 4096 keys: taller blocks compute more pairs past the diagonal, and 704 units of
     * the paired walk leave its last round a third full; but 4096 rows leave one warpgroup's
     * rows in the last 192-row block, so the kernels move the blocks back (perf-notes A63) and
     * the long units balance: the 128-row blocks are predicted 3.8% faster, within the 4%
     * margin (with a workspace; 1.7% without, where the 128-row kernel walks in pairs too) */
    p = attention_problem(64, 4096, 4096, 1);
    expect_weighed(&p, &d, WS3, "causal at 4096 queries x 4096 keys, winner 356.92 us against runner-up 343.47 us");
    assert_int_equal(d.rule, TILE_RULE_TUNED);
    p.block_counter = 0;
    expect_weighed(&p, &d, WS3, "winner 356.92 us against runner-up 350.98 us");
    /* the 192-row blocks' warpgroups stop at their own rows' diagonal (ws_own_key_tiles):
     * predicted faster at 1024 and 16384 keys here (16384: the diagonal is thin), within the
     * 4% margin of a causal call at 2048; 1024 queries at the end of 8192 keys (heads in groups of
     * 8 for L2) stay on the 192-row blocks, moved back (perf-notes A63), the 128-row ones
     * predicted 3.97% faster (5.5% before the move) */
    p = attention_problem(256, 1024, 1024, 1);
    expect_weighed(&p, &d, WS3, "causal at 1024 queries x 1024 keys, winner 125.40 us against runner-up 126.42 us");
    p = attention_problem(128, 2048, 2048, 1);
    expect_weighed(&p, &d, WS3, "winner 200.43 us against runner-up 198.58 us");
    p = attention_problem(16, 16384, 16384, 1);
    expect_weighed(&p, &d, WS3, "winner 1174.18 us against runner-up 1201.29 us");
    p = attention_problem(256, 1024, 8192, 1);
    expect_weighed(&p, &d, WS3, "causal at 1024 queries x 8192 keys, winner 1205.80 us against runner-up 1157.99 us");
    /* a full call's runner-up must be predicted over 7% faster (3.4% here: the winner stays) */
    p = attention_problem(256, 4096, 4096, 0);
    expect_weighed(&p, &d, WS3, "walked at 4096 queries x 4096 keys, winner 52.35 us against runner-up 50.58 us");
    /* a head of over 512 blocks (131072 queries: 683 of 192 rows, 1024 of 128): not weighed */
    p = attention_problem(2, 131072, 131072, 1);
    assert_string_equal(dispatched(&p, &d), WS3);
    assert_null(strstr(d.reason, "causal at"));
    /* no sequence (not an attention call's problem): not weighed */
    p = attention_problem(128, 2048, 2048, 0);
    p.seqlen_q = p.seqlen_k = 0;
    assert_string_equal(dispatched(&p, &d), WS3);
    assert_null(strstr(d.reason, "walked"));
    /* the decision cache tells shapes of the same rows apart, and causal from full */
    int32_t variant;
    p = attention_problem(8, 8192, 8192, 1);
    assert_int_equal(tile_dispatch_cached(&p, &variant), TILE_STATUS_SUCCESS);
    assert_string_equal(tile_registry[variant].name, WS3);
    p = attention_problem(16, 4096, 4096, 1);
    assert_int_equal(tile_dispatch_cached(&p, &variant), TILE_STATUS_SUCCESS);
    assert_string_equal(tile_registry[variant].name, WS);
    p.causal = 0;
    assert_int_equal(tile_dispatch_cached(&p, &variant), TILE_STATUS_SUCCESS);
    assert_string_equal(tile_registry[variant].name, WS3);
}

/* Lines tagged with a device's peak memory bandwidth (sm_90@2000) hold on devices within 10% of
 * it, ahead of the arch's lines; the arch's line replaces a tagged one only where strictly
 * closer to the shape's bucket. A device of unknown bandwidth never takes a tagged line. */
#define TAGGED "softmax_bf16_loop_n2048_w8_v8"
static void test_device_bandwidth_lines(void **state) {
    (void)state;
    tile_decision d;
    tile_problem p = problem(1024, 16384, 16);
    p.blocks_per_sm = NULL; /* (no waves) */
    const struct { int32_t gbs; const char *variant; } cases[] = {
        {2000, TAGGED}, {1820, TAGGED}, {2190, TAGGED}, {1790, LOOP}, {2210, LOOP}, {0, LOOP}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        p.mem_bandwidth_gbs = cases[i].gbs;
        assert_string_equal(dispatched(&p, &d), cases[i].variant);
        assert_int_equal(d.rule, TILE_RULE_TUNED);
        assert_non_null(strstr(d.reason, strcmp(cases[i].variant, LOOP)
                                              ? "FUSEDOPS_TUNING_FILE table for sm_90@2000, bucket"
                                              : "FUSEDOPS_TUNING_FILE table for sm_90, bucket"));
    }
    /* the tagged line at 4096 x 16384 is one rows bucket from 8192 x 16384, the compiled
     * table's line for it none: the compiled line */
    p = problem(8192, 16384, 16);
    p.blocks_per_sm = NULL;
    p.mem_bandwidth_gbs = 2000;
    assert_string_not_equal(dispatched(&p, &d), STAGED);
    assert_non_null(strstr(d.reason, "compiled table for sm_90, bucket 8192x16384"));
    p.rows = 4096;
    assert_string_equal(dispatched(&p, &d), STAGED);
}

/* The parser reads the times and the runner-up; a bad time or an empty runner-up is an error. */
static void test_parse_times(void **state) {
    (void)state;
    tuning_line t;
    char err[256];
    char good[] = "sm_90\tsoftmax\tbf16\t256x65536\t" STAGED "\t30.05\t" LOOP "\t31.62";
    assert_int_equal(tuning_parse_line(good, &t, err, sizeof err), 1);
    assert_true(t.time_us > 30.04 && t.time_us < 30.06);
    assert_string_equal(t.runner_up, LOOP);
    assert_true(t.runner_up_us > 31.61 && t.runner_up_us < 31.63);
    char none[] = "sm_90\tsoftmax\tbf16\t256x65536\t" STAGED "\t30.05\t-\t0.00";
    assert_int_equal(tuning_parse_line(none, &t, err, sizeof err), 1);
    assert_null(t.runner_up);
    char five[] = "sm_90\tsoftmax\tbf16\t256x65536\t" STAGED;
    assert_int_equal(tuning_parse_line(five, &t, err, sizeof err), 1);
    assert_null(t.runner_up);
    assert_true(t.time_us == 0.0);
    char bad_time[] = "sm_90\tsoftmax\tbf16\t256x65536\t" STAGED "\tfast\t-\t0";
    assert_int_equal(tuning_parse_line(bad_time, &t, err, sizeof err), -1);
    assert_non_null(strstr(err, "'fast'"));
    char negative[] = "sm_90\tsoftmax\tbf16\t256x65536\t" STAGED "\t1.0\t-\t-2";
    assert_int_equal(tuning_parse_line(negative, &t, err, sizeof err), -1);
    char empty[] = "sm_90\tsoftmax\tbf16\t256x65536\t" STAGED "\t1.0\t\t2";
    assert_int_equal(tuning_parse_line(empty, &t, err, sizeof err), -1);
    assert_non_null(strstr(err, "runner_up is empty"));
    /* the arch column's bandwidth tag */
    assert_int_equal(t.bandwidth_gbs, 0);
    char tagged[] = "sm_90@4915\tsoftmax\tbf16\t256x65536\t" STAGED;
    assert_int_equal(tuning_parse_line(tagged, &t, err, sizeof err), 1);
    assert_int_equal(t.arch, 90);
    assert_int_equal(t.bandwidth_gbs, 4915);
    const char *const bad_tags[] = {"sm_90@", "sm_90@0", "sm_90@-5", "sm_90@12x", "sm_90@@1",
                                    "sm_90@1000001", "sm_@90"};
    for (size_t i = 0; i < sizeof bad_tags / sizeof *bad_tags; i++) {
        char line[128];
        snprintf(line, sizeof line, "%s\tsoftmax\tbf16\t256x65536\t" STAGED, bad_tags[i]);
        assert_int_equal(tuning_parse_line(line, &t, err, sizeof err), -1);
        assert_non_null(strstr(err, "is not sm_NN or sm_NN@GBPS"));
    }
    /* the formula both the library and tune use: an H100 SXM's, and an H200 at its spec
     * memory clock (the lent one reported a lower clock: 4814) */
    assert_int_equal(tuning_peak_bandwidth_gbs(2619000, 5120), 3352);
    assert_int_equal(tuning_peak_bandwidth_gbs(3201000, 6144), 4917);
    assert_int_equal(tuning_peak_bandwidth_gbs(0, 6144), 0);
    assert_int_equal(tuning_bandwidth_matches(0, 0), 1);
    assert_int_equal(tuning_bandwidth_matches(4915, 0), 0);
}

int main(void) {
    char path[64];
    snprintf(path, sizeof path, "/tmp/fusedops_waves_%d.tsv", (int)getpid());
    FILE *f = fopen(path, "w");
    if (!f) return 1;
    fputs("sm_90\tsoftmax\tbf16\t256x65536\t" STAGED "\t30.00\t" LOOP "\t31.60\n"
          "sm_90\tsoftmax\tbf16\t256x49152\t" SCALAR "\t20.00\t" LOOP "\t10.00\n"
          "sm_90\tsoftmax\tbf16\t256x32768\t" STAGED "\n"
          "sm_90\tattention\tbf16\t32768x128\tattention_bf16_d128_m64_n64_w4\t100\t"
          "attention_bf16_d128_m128_n64_w8\t100.5\n"
          "sm_90\tattention\tbf16\t262144x64\t" WS3 "\t318.60\t" WS "\t341.74\n"
          "sm_90\tattention\tbf16\t65536x64\t" WS3 "\t83.93\t" WS "\t86.39\n"
          "sm_90\tattention\tbf16\t1048576x64\t" WS3 "\t100.00\t" WS "\t97.50\n"
          "sm_90\tsoftmax\tbf16\t1024x16384\t" LOOP "\n"
          /* a made-up memory system (the compiled table has lines for an H200's, 4814) */
          "sm_90@2000\tsoftmax\tbf16\t1024x16384\t" TAGGED "\n"
          "sm_90@2000\tsoftmax\tbf16\t4096x16384\t" STAGED "\n",
          f);
    fclose(f);
    setenv("FUSEDOPS_TUNING_FILE", path, 1);
    blocks_per_sm = calloc((size_t)tile_registry_count, sizeof *blocks_per_sm);
    if (!blocks_per_sm) return 1;
    for (int32_t i = 0; i < tile_registry_count; i++)
        blocks_per_sm[i] = strcmp(tile_registry[i].name, STAGED) && strcmp(tile_registry[i].name, WS3) &&
                                   strcmp(tile_registry[i].name, WS)
                               ? 4
                               : 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_runner_up_by_waves),
        cmocka_unit_test(test_no_occupancy),
        cmocka_unit_test(test_runner_up_not_eligible_or_untimed),
        cmocka_unit_test(test_not_for_attention),
        cmocka_unit_test(test_attention_walks),
        cmocka_unit_test(test_device_bandwidth_lines),
        cmocka_unit_test(test_parse_times),
    };
    const int rc = cmocka_run_group_tests(tests, NULL, NULL);
    unlink(path);
    free(blocks_per_sm);
    return rc;
}
