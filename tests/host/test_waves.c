/* Dispatch weighs a tuned bucket's winner against its runner-up by waves (src/dispatch.c,
 * weigh_waves; docs/tuning.md): a table written to FUSEDOPS_TUNING_FILE, problems built by hand
 * with a made-up device occupancy, tile_dispatch called directly. No GPU needed. The table is
 * read once per process, so every case shares the one written by main. */
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
          "attention_bf16_d128_m128_n64_w8\t100.5\n",
          f);
    fclose(f);
    setenv("FUSEDOPS_TUNING_FILE", path, 1);
    blocks_per_sm = calloc((size_t)tile_registry_count, sizeof *blocks_per_sm);
    if (!blocks_per_sm) return 1;
    for (int32_t i = 0; i < tile_registry_count; i++)
        blocks_per_sm[i] = strcmp(tile_registry[i].name, STAGED) ? 4 : 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_runner_up_by_waves),
        cmocka_unit_test(test_no_occupancy),
        cmocka_unit_test(test_runner_up_not_eligible_or_untimed),
        cmocka_unit_test(test_not_for_attention),
        cmocka_unit_test(test_parse_times),
    };
    const int rc = cmocka_run_group_tests(tests, NULL, NULL);
    unlink(path);
    free(blocks_per_sm);
    return rc;
}
