/* FUSEDOPS_TUNING_FILE: the run-time tuned table. The library reads the variable once per
 * process, so each scenario is its own run of this program: test_tuning_file MODE, where MODE
 * is good, malformed, unknown or missing (ctest runs each). Explain with an explicit arch needs
 * no GPU. */
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

static void test_good_table(void **state) {
    (void)state;
    write_table("sm_90\tsoftmax\tbf16\t8x8\t" PLANTED "\t1.0\t-\t0\n"
                "# a comment line\n"
                "sm_90\tsoftmax\tbf16\t64x32\t" PLANTED "\t1.0\t-\t0\n");
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
    expect_failure("powers of two");
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

static void test_missing_file(void **state) {
    (void)state;
    setenv("FUSEDOPS_TUNING_FILE", "/nonexistent/tuning.tsv", 1);
    expect_failure("cannot be opened");
}

int main(int argc, char **argv) {
    mode = argc > 1 ? argv[1] : "good";
    const struct CMUnitTest good[] = {cmocka_unit_test(test_good_table)};
    const struct CMUnitTest malformed[] = {cmocka_unit_test(test_malformed_table)};
    const struct CMUnitTest unknown[] = {cmocka_unit_test(test_unknown_variant)};
    const struct CMUnitTest dtype[] = {cmocka_unit_test(test_wrong_dtype)};
    const struct CMUnitTest missing[] = {cmocka_unit_test(test_missing_file)};
    int rc;
    if (!strcmp(mode, "good")) rc = cmocka_run_group_tests(good, NULL, NULL);
    else if (!strcmp(mode, "malformed")) rc = cmocka_run_group_tests(malformed, NULL, NULL);
    else if (!strcmp(mode, "unknown")) rc = cmocka_run_group_tests(unknown, NULL, NULL);
    else if (!strcmp(mode, "dtype")) rc = cmocka_run_group_tests(dtype, NULL, NULL);
    else if (!strcmp(mode, "missing")) rc = cmocka_run_group_tests(missing, NULL, NULL);
    else {
        fprintf(stderr, "usage: test_tuning_file good|malformed|unknown|dtype|missing\n");
        return 2;
    }
    if (path[0]) unlink(path);
    return rc;
}
