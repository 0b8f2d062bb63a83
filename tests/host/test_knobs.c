/* The GPU tests' environment knobs (support/): FUSEDOPS_TEST_VARIANT's substring and glob
 * filters, and FUSEDOPS_TEST_MAX_ROWS's parsing and cap; and support's lean-twin pairing, which
 * `fusedops tune` relies on. A knob that misreads its value would
 * make a compute-sanitizer run check less than its log says, so the parsing is pinned here. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "support.h"

static void test_variant_filter(void **state) {
    (void)state;
    const char *plain = "softmax_bf16_staged_n16384_v8";
    const char *cluster = "softmax_bf16_staged_n16384_v8_c8_sm90";
    assert_true(support_variant_selected(plain, NULL));
    assert_true(support_variant_selected(plain, ""));
    /* a substring, anywhere in the name */
    assert_true(support_variant_selected(plain, "_staged_"));
    assert_true(support_variant_selected(cluster, "_staged_"));
    assert_false(support_variant_selected(plain, "_c8_sm90"));
    assert_true(support_variant_selected(cluster, "_c8_sm90"));
    /* a glob matches the whole name: the variants without a cluster alone */
    assert_true(support_variant_selected(plain, "*_staged_n*_v[48]"));
    assert_false(support_variant_selected(cluster, "*_staged_n*_v[48]"));
    assert_false(support_variant_selected(plain, "_staged_n*")); /* not anchored at the start */
    assert_true(support_variant_selected("softmax_f16_n8192_w16_v8_c8_sm90", "*16_n*_v8_c8_sm90"));
    assert_false(support_variant_selected("softmax_f16_loop_n4096_w16_v8_c8_sm90",
                                          "*16_n*_v8_c8_sm90"));
    assert_true(support_variant_selected("norm_f32_r1_n512_w4_v1_d0", "norm_f32_r?_*"));
}

static void test_max_rows_parse(void **state) {
    (void)state;
    int64_t n = -7;
    assert_int_equal(support_parse_max_rows(NULL, &n), 0);
    assert_int_equal(n, 0);
    n = -7;
    assert_int_equal(support_parse_max_rows("", &n), 0);
    assert_int_equal(n, 0);
    assert_int_equal(support_parse_max_rows("301", &n), 0);
    assert_int_equal(n, 301);
    assert_int_equal(support_parse_max_rows("1", &n), 0);
    assert_int_equal(n, 1);
    static const char *const invalid[] = {"0",   "-5",  "+5",   " 5",  "5 ", "5x", "abc",
                                          "0x10", "1e3", "3.5", "99999999999999999999"};
    for (size_t i = 0; i < sizeof invalid / sizeof *invalid; i++) {
        n = -7;
        assert_int_equal(support_parse_max_rows(invalid[i], &n), -1);
        assert_int_equal(n, 0); /* never a stale or partial value */
    }
}

static void test_max_rows_environment(void **state) {
    (void)state;
    int64_t n = -7;
    assert_int_equal(unsetenv("FUSEDOPS_TEST_MAX_ROWS"), 0);
    assert_int_equal(support_test_max_rows(&n), 0);
    assert_int_equal(n, 0);
    assert_int_equal(setenv("FUSEDOPS_TEST_MAX_ROWS", "300", 1), 0);
    assert_int_equal(support_test_max_rows(&n), 0);
    assert_int_equal(n, 300);
    assert_int_equal(setenv("FUSEDOPS_TEST_MAX_ROWS", "none", 1), 0);
    assert_int_equal(support_test_max_rows(&n), -1);
    assert_int_equal(unsetenv("FUSEDOPS_TEST_MAX_ROWS"), 0);
}

/* `fusedops tune` times a general variant through the lean twin support_lean_twin_of names, so
 * that pairing must be the generator's: every lean variant has a general twin, a `rows` tile and
 * its `rowsreg` sibling (MAXREG differs) share one, and variants without a twin get -1. */
static void test_lean_twins(void **state) {
    (void)state;
    int32_t leans = 0, paired = 0;
    for (int32_t i = 0; i < tile_variant_count(); i++) {
        tile_variant_info v = {.struct_size = sizeof v};
        assert_int_equal(tile_variant_get(i, &v), TILE_STATUS_SUCCESS);
        if (support_is_lean(&v)) {
            leans++;
            assert_int_equal(support_lean_twin_of(i), -1); /* a twin has no twin */
            int generals = 0;
            for (int32_t g = 0; g < tile_variant_count(); g++) generals += support_lean_twin_of(g) == i;
            assert_true(generals >= 1);
            continue;
        }
        const int32_t twin = support_lean_twin_of(i);
        if (twin < 0) continue;
        paired++;
        tile_variant_info w = {.struct_size = sizeof w};
        assert_int_equal(tile_variant_get(twin, &w), TILE_STATUS_SUCCESS);
        assert_string_equal(v.op, w.op);
        assert_int_equal(v.dtype, w.dtype);
        assert_int_equal(v.max_cols, w.max_cols);
        assert_int_equal(v.threads, w.threads);
    }
    assert_int_equal(leans, 30); /* rowslean 12, rowslean1024 6, rowsleannc 12 */
    assert_true(paired > leans); /* the rowsreg tiles share their rows siblings' twins */
    const int32_t lean = tile_variant_find("norm_bf16_r1_n8192_w16_v8_d0_lean");
    assert_true(lean >= 0);
    assert_int_equal(support_lean_twin_of(tile_variant_find("norm_bf16_r1_n8192_w16_v8_d0")), lean);
    assert_int_equal(support_lean_twin_of(tile_variant_find("norm_bf16_r1_n8192_w16_v8_d0_reg40")),
                     lean);
    /* the read-only-path tile pairs with its own twin, not the evict-first one's */
    const int32_t lean_nc = tile_variant_find("norm_bf16_r1_n8192_w16_v8_d0_nc_lean");
    assert_true(lean_nc >= 0 && lean_nc != lean);
    assert_int_equal(support_lean_twin_of(tile_variant_find("norm_bf16_r1_n8192_w16_v8_d0_nc")),
                     lean_nc);
    const int32_t nc8 = tile_variant_find("norm_bf16_r1_n4096_w16_v8_d0_nc"); /* 8 a thread */
    assert_true(nc8 >= 0);
    assert_int_equal(support_lean_twin_of(nc8), -1);
    assert_int_equal(support_lean_twin_of(tile_variant_find("norm_bf16_r1_n8192_w16_v8_d1")), -1);
    assert_int_equal(support_lean_twin_of(tile_variant_find("norm_bf16_loop_n8192_w16_v8_d0")), -1);
    assert_int_equal(support_lean_twin_of(tile_variant_find("softmax_bf16_r1_n8192_w16_v8")), -1);
    assert_int_equal(support_lean_twin_of(-1), -1);
}

static void test_cap_rows(void **state) {
    (void)state;
    assert_int_equal(support_cap_rows(1823, 0), 1823); /* no cap */
    assert_int_equal(support_cap_rows(1823, 301), 301);
    assert_int_equal(support_cap_rows(301, 301), 301);
    assert_int_equal(support_cap_rows(97, 301), 97);
    assert_int_equal(support_cap_rows(3, 1), 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_variant_filter),
        cmocka_unit_test(test_max_rows_parse),
        cmocka_unit_test(test_max_rows_environment),
        cmocka_unit_test(test_cap_rows),
        cmocka_unit_test(test_lean_twins),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
