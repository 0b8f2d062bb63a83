/* Argument validation of the public calls: every invalid argument gives its own status and a
 * message naming the argument, and the output is not touched. Validation runs before the
 * driver is loaded, so none of this needs a GPU; no call here has valid arguments AND host
 * pointers, so nothing is ever launched, even on a machine with a GPU. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "fusedops.h"

#define BUF_BYTES 4096
#define PATTERN 0xa5

/* y and x: host buffers that validation must never write (or read). */
static _Alignas(256) unsigned char ybuf[BUF_BYTES];
static _Alignas(256) unsigned char xbuf[BUF_BYTES];

static int setup(void **state) {
    (void)state;
    memset(ybuf, PATTERN, sizeof ybuf);
    memset(xbuf, 0x3c, sizeof xbuf);
    return 0;
}

static void assert_untouched(void) {
    for (size_t i = 0; i < sizeof ybuf; i++)
        if (ybuf[i] != PATTERN) {
            print_error("y was written at byte %zu\n", i);
            fail();
        }
    for (size_t i = 0; i < sizeof xbuf; i++)
        if (xbuf[i] != 0x3c) {
            print_error("x was written at byte %zu\n", i);
            fail();
        }
}

static void assert_message(const char *needle) {
    const char *e = tile_last_error();
    assert_non_null(e);
    if (!strstr(e, needle)) {
        print_error("tile_last_error() \"%s\" does not mention \"%s\"\n", e, needle);
        fail();
    }
}

/* One row-wise call, through each of the three entry points that validate alike. */
typedef enum entry { ENTRY_SOFTMAX, ENTRY_LOG_SOFTMAX, ENTRY_VARIANT, ENTRY_COUNT } entry;
static const char *const entry_names[] = {"tile_softmax", "tile_log_softmax",
                                          "tile_softmax_variant"};

static tile_status call(entry e, tile_dtype dtype, void *y, const void *x, int64_t rows,
                        int64_t cols, int64_t ld_y, int64_t ld_x) {
    switch (e) {
    case ENTRY_SOFTMAX: return tile_softmax(dtype, y, x, rows, cols, ld_y, ld_x, NULL);
    case ENTRY_LOG_SOFTMAX: return tile_log_softmax(dtype, y, x, rows, cols, ld_y, ld_x, NULL);
    default: return tile_softmax_variant(0, 0, dtype, y, x, rows, cols, ld_y, ld_x, NULL);
    }
}

typedef struct bad_call {
    const char *what;
    tile_dtype dtype;
    int y_offset, x_offset; /* bytes into the buffers; -1: NULL */
    int same;               /* y == x */
    int64_t rows, cols, ld_y, ld_x;
    tile_status status;
    const char *message; /* what tile_last_error() must mention */
} bad_call;

#define T40 ((int64_t)1 << 40)
#define F32 TILE_DTYPE_F32
#define F16 TILE_DTYPE_F16
#define BF16 TILE_DTYPE_BF16
#define INV TILE_STATUS_INVALID_ARGUMENT
#define MIS TILE_STATUS_MISALIGNED

static const bad_call bad_calls[] = {
    {"NULL y", F32, -1, 0, 0, 4, 8, 8, 8, INV, "y is NULL"},
    {"NULL x", F16, 0, -1, 0, 4, 8, 8, 8, INV, "x is NULL"},
    {"NULL y and x", BF16, -1, -1, 0, 4, 8, 8, 8, INV, "y is NULL"},
    {"rows 0", F32, 0, 0, 0, 0, 8, 8, 8, INV, "rows is 0"},
    {"rows -1", F16, 0, 0, 0, -1, 8, 8, 8, INV, "rows is -1"},
    {"rows INT64_MIN", BF16, 0, 0, 0, INT64_MIN, 8, 8, 8, INV, "rows"},
    {"cols 0", F32, 0, 0, 0, 4, 0, 8, 8, INV, "cols is 0"},
    {"cols -5", BF16, 0, 0, 0, 4, -5, 8, 8, INV, "cols is -5"},
    {"ld_x < cols", F32, 0, 0, 0, 4, 8, 8, 7, INV, "ld_x is 7"},
    {"ld_y < cols", F16, 0, 0, 0, 4, 8, 7, 8, INV, "ld_y is 7"},
    {"ld_y negative", F16, 0, 0, 0, 4, 8, -8, 8, INV, "ld_y"},
    {"ld_x 0", BF16, 0, 0, 0, 1, 8, 8, 0, INV, "ld_x"},
    {"rows * ld_y overflows", F32, 0, 0, 0, T40, 1, T40, 1, INV, "overflow"},
    {"rows * ld_x overflows", F16, 0, 0, 0, T40, 1, 1, T40, INV, "overflow"},
    {"rows * ld overflows (bf16)", BF16, 0, 0, 0, T40, T40, T40, T40, INV, "overflow"},
    {"cols bytes overflow (one row)", F32, 0, 0, 0, 1, INT64_MAX / 2, INT64_MAX / 2,
     INT64_MAX / 2, INV, "overflow"},
    {"cols INT64_MAX", F16, 0, 0, 0, 1, INT64_MAX, INT64_MAX, INT64_MAX, INV, "overflow"},
    {"extent just over", F16, 0, 0, 0, 2, 1, INT64_MAX / 2, 1, INV, "ld_y"},
    {"dtype 7", (tile_dtype)7, 0, 0, 0, 4, 8, 8, 8, TILE_STATUS_UNSUPPORTED_DTYPE, "dtype 7"},
    {"dtype -1", (tile_dtype)-1, 0, 0, 0, 4, 8, 8, 8, TILE_STATUS_UNSUPPORTED_DTYPE, "dtype"},
    {"dtype COUNT_", TILE_DTYPE_COUNT_, 0, 0, 0, 4, 8, 8, 8, TILE_STATUS_UNSUPPORTED_DTYPE,
     "dtype"},
    {"odd y for f16", F16, 1, 0, 0, 4, 8, 8, 8, MIS, "y ("},
    {"odd y for bf16", BF16, 3, 0, 0, 4, 8, 8, 8, MIS, "y ("},
    {"y % 4 == 2 for f32", F32, 2, 0, 0, 4, 8, 8, 8, MIS, "y ("},
    {"y % 4 == 1 for f32", F32, 1, 0, 0, 4, 8, 8, 8, MIS, "y ("},
    {"odd x for f16", F16, 0, 1, 0, 4, 8, 8, 8, MIS, "x ("},
    {"x % 4 == 2 for f32", F32, 0, 2, 0, 4, 8, 8, 8, MIS, "x ("},
    {"in place with different ld", F32, 0, 0, 1, 4, 8, 8, 16, INV, "y == x"},
    {"in place with different ld (f16)", F16, 0, 0, 1, 4, 8, 16, 8, INV, "ld_y == ld_x"},
};

static void test_bad_row_arguments(void **state) {
    (void)state;
    for (int e = 0; e < ENTRY_COUNT; e++)
        for (size_t i = 0; i < sizeof bad_calls / sizeof *bad_calls; i++) {
            const bad_call *b = &bad_calls[i];
            void *y = b->y_offset < 0 ? NULL : ybuf + b->y_offset;
            const void *x = b->x_offset < 0 ? NULL : xbuf + b->x_offset;
            if (b->same) x = y;
            tile_status s = call((entry)e, b->dtype, y, x, b->rows, b->cols, b->ld_y, b->ld_x);
            if (s != b->status)
                print_error("%s via %s: got %s (%s), want %s\n", b->what, entry_names[e],
                            tile_status_string(s), tile_last_error(),
                            tile_status_string(b->status));
            assert_int_equal(s, b->status);
            assert_message(b->message);
            assert_message(entry_names[e]); /* the message names the function too */
            assert_untouched();
        }
}

/* Checks come in a fixed order: the first bad argument is the one reported. */
static void test_first_bad_argument_wins(void **state) {
    (void)state;
    assert_int_equal(tile_softmax((tile_dtype)9, NULL, NULL, 0, 0, 0, 0, NULL),
                     TILE_STATUS_UNSUPPORTED_DTYPE);
    assert_int_equal(tile_softmax(F32, ybuf, xbuf, 0, -1, 0, 0, NULL), INV);
    assert_message("rows");
    assert_int_equal(tile_softmax(F32, ybuf + 1, xbuf, 4, 8, 2, 8, NULL), INV);
    assert_message("ld_y");
    assert_untouched();
}

/* tile_softmax_variant: the variant index is checked before the device is needed. */
static void test_variant_index(void **state) {
    (void)state;
    const int32_t bad[] = {-1, -1000, tile_variant_count(), tile_variant_count() + 7, INT32_MAX,
                           INT32_MIN};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        for (int log = 0; log < 2; log++) {
            tile_status s = tile_softmax_variant(bad[i], log, F32, ybuf, xbuf, 4, 8, 8, 8, NULL);
            assert_int_equal(s, INV);
            char text[32];
            snprintf(text, sizeof text, "variant %d", bad[i]);
            assert_message(text);
            assert_untouched();
        }
    }
    /* a bad argument is reported before a bad index */
    assert_int_equal(tile_softmax_variant(-1, 0, F32, NULL, xbuf, 4, 8, 8, 8, NULL), INV);
    assert_message("y is NULL");
}

/* tile_softmax_explain validates as the ops do, plus its own arguments. */
static void test_explain_arguments(void **state) {
    (void)state;
    tile_decision d;
    memset(&d, 0x5a, sizeof d);
    d.struct_size = sizeof d;
    tile_decision copy = d;

    assert_int_equal(tile_softmax_explain(F32, 4, 8, 8, 8, 16, 90, NULL), INV);
    assert_message("decision is NULL");

    d.struct_size = 0;
    assert_int_equal(tile_softmax_explain(F32, 4, 8, 8, 8, 16, 90, &d), INV);
    assert_message("struct_size");
    d.struct_size = sizeof d - 1;
    assert_int_equal(tile_softmax_explain(F32, 4, 8, 8, 8, 16, 90, &d), INV);
    assert_message("struct_size");
    d.struct_size = sizeof d;

    const int32_t bad_align[] = {0, -16, 3, 6, 24, INT32_MIN, INT32_MAX};
    for (size_t i = 0; i < sizeof bad_align / sizeof *bad_align; i++) {
        assert_int_equal(tile_softmax_explain(F32, 4, 8, 8, 8, bad_align[i], 90, &d), INV);
        assert_message("pointer_align");
    }
    assert_int_equal(tile_softmax_explain((tile_dtype)7, 4, 8, 8, 8, 16, 90, &d),
                     TILE_STATUS_UNSUPPORTED_DTYPE);
    assert_message("dtype 7");
    assert_int_equal(tile_softmax_explain(F32, 0, 8, 8, 8, 16, 90, &d), INV);
    assert_message("rows is 0");
    assert_int_equal(tile_softmax_explain(F32, 4, -5, 8, 8, 16, 90, &d), INV);
    assert_message("cols is -5");
    assert_int_equal(tile_softmax_explain(F32, 4, 8, 8, 7, 16, 90, &d), INV);
    assert_message("ld_x is 7");
    assert_int_equal(tile_softmax_explain(F32, 4, 8, 7, 8, 16, 90, &d), INV);
    assert_message("ld_y is 7");
    assert_int_equal(tile_softmax_explain(F32, T40, 1, T40, 1, 16, 90, &d), INV);
    assert_message("overflow");
    assert_int_equal(tile_softmax_explain(F32, 4, 8, 8, 8, 2, 90, &d), MIS);
    assert_int_equal(tile_softmax_explain(F16, 4, 8, 8, 8, 1, 90, &d), MIS);
    assert_int_equal(tile_softmax_explain(F16, 4, 8, 8, 8, 16, 5, &d), INV);
    assert_message("arch is 5");
    assert_int_equal(tile_softmax_explain(F16, 4, 8, 8, 8, 16, -1, &d), INV);
    assert_message("arch");
    /* the byte extent check is exact: the last element's end may be INT64_MAX / 2 elements of
     * two bytes, one element more overflows */
    assert_int_equal(tile_softmax_explain(F16, 2, 1, INT64_MAX / 2, 1, 16, 90, &d), INV);
    assert_message("overflow");
    assert_int_equal(tile_softmax_explain(F16, 1, INT64_MAX / 2 + 1, INT64_MAX / 2 + 1,
                                          INT64_MAX / 2 + 1, 16, 90, &d),
                     INV);
    assert_message("overflow");
    /* nothing written to the decision by a failed validation */
    assert_int_equal(memcmp(&d, &copy, sizeof d), 0);
    assert_untouched();

    /* and a good call clears the last error */
    assert_int_equal(tile_softmax_explain(F16, 4, 8, 8, 8, 16, 90, &d), TILE_STATUS_SUCCESS);
    assert_string_equal(tile_last_error(), "");
    assert_int_equal(tile_softmax_explain(F16, 2, 1, INT64_MAX / 2 - 1, 1, 16, 90, &d),
                     TILE_STATUS_SUCCESS);
    assert_int_equal(tile_softmax_explain(F16, 1, INT64_MAX / 2, INT64_MAX / 2, INT64_MAX / 2, 16,
                                          90, &d),
                     TILE_STATUS_SUCCESS);
}

static void test_variant_get_arguments(void **state) {
    (void)state;
    const int32_t n = tile_variant_count();
    assert_true(n > 0);
    tile_variant_info info, copy;
    memset(&info, 0x5a, sizeof info);
    info.struct_size = sizeof info;
    copy = info;

    assert_int_equal(tile_variant_get(0, NULL), INV);
    assert_message("info is NULL");
    const int32_t bad[] = {-1, n, n + 1, INT32_MAX, INT32_MIN};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        assert_int_equal(tile_variant_get(bad[i], &info), INV);
        assert_message("index");
        assert_int_equal(memcmp(&info, &copy, sizeof info), 0);
    }
    info.struct_size = 0;
    copy.struct_size = 0;
    assert_int_equal(tile_variant_get(0, &info), INV);
    assert_message("struct_size");
    assert_int_equal(memcmp(&info, &copy, sizeof info), 0);
    info.struct_size = sizeof info - 1;
    assert_int_equal(tile_variant_get(0, &info), INV);
    assert_message("struct_size");

    /* success clears the last error */
    info.struct_size = sizeof info;
    assert_int_equal(tile_variant_get(n - 1, &info), TILE_STATUS_SUCCESS);
    assert_string_equal(tile_last_error(), "");
    assert_non_null(info.name);
}

static void test_device_arch_null(void **state) {
    (void)state;
    assert_int_equal(tile_device_arch(NULL), INV);
    assert_message("arch is NULL");
}

/* ---------------------------------------------------------------- strings and version */

static void test_status_strings(void **state) {
    (void)state;
    for (int s = 0; s < TILE_STATUS_COUNT_; s++) {
        const char *text = tile_status_string((tile_status)s);
        assert_non_null(text);
        assert_true(strlen(text) > 0);
        assert_string_not_equal(text, "unknown");
        for (int t = 0; t < s; t++) assert_string_not_equal(text, tile_status_string((tile_status)t));
    }
    assert_string_equal(tile_status_string(TILE_STATUS_SUCCESS), "success");
    assert_string_equal(tile_status_string(TILE_STATUS_COUNT_), "unknown");
    assert_string_equal(tile_status_string((tile_status)-1), "unknown");
    assert_string_equal(tile_status_string((tile_status)1000), "unknown");
    assert_string_equal(tile_status_string((tile_status)INT32_MIN), "unknown");
}

static void test_dtype_and_rule_strings(void **state) {
    (void)state;
    assert_string_equal(tile_dtype_string(TILE_DTYPE_F32), "f32");
    assert_string_equal(tile_dtype_string(TILE_DTYPE_F16), "f16");
    assert_string_equal(tile_dtype_string(TILE_DTYPE_BF16), "bf16");
    assert_string_equal(tile_dtype_string(TILE_DTYPE_COUNT_), "unknown");
    assert_string_equal(tile_dtype_string((tile_dtype)-1), "unknown");
    assert_string_equal(tile_dtype_string((tile_dtype)99), "unknown");

    assert_string_equal(tile_rule_string(TILE_RULE_TUNED), "tuned");
    assert_string_equal(tile_rule_string(TILE_RULE_NEAREST), "nearest");
    assert_string_equal(tile_rule_string(TILE_RULE_HEURISTIC), "heuristic");
    assert_string_equal(tile_rule_string(TILE_RULE_COUNT_), "unknown");
    assert_string_equal(tile_rule_string((tile_rule)-3), "unknown");
    for (int r = 0; r < TILE_RULE_COUNT_; r++)
        for (int q = 0; q < r; q++)
            assert_string_not_equal(tile_rule_string((tile_rule)r), tile_rule_string((tile_rule)q));
}

static void test_version(void **state) {
    (void)state;
    assert_int_equal(tile_version(), TILE_VERSION);
    assert_int_equal(TILE_VERSION,
                     TILE_VERSION_MAJOR * 10000 + TILE_VERSION_MINOR * 100 + TILE_VERSION_PATCH);
}

/* ---------------------------------------------------------------- last error */

static void test_last_error_lifecycle(void **state) {
    (void)state;
    tile_variant_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    assert_int_equal(tile_softmax(F32, NULL, xbuf, 4, 8, 8, 8, NULL), INV);
    assert_true(strlen(tile_last_error()) > 0);
    /* reading it twice does not change it */
    assert_message("y is NULL");
    assert_message("y is NULL");
    assert_int_equal(tile_variant_get(0, &info), TILE_STATUS_SUCCESS);
    assert_string_equal(tile_last_error(), "");
    /* a later failure replaces an earlier one */
    assert_int_equal(tile_softmax(F32, ybuf, xbuf, 0, 8, 8, 8, NULL), INV);
    assert_int_equal(tile_softmax(F32, ybuf, xbuf, 4, -2, 8, 8, NULL), INV);
    assert_message("cols is -2");
    assert_null(strstr(tile_last_error(), "rows"));
}

static void *fail_in_thread(void *arg) {
    (void)arg;
    tile_status s = tile_log_softmax(F16, ybuf, xbuf, 4, 8, 8, 3, NULL);
    static char copy[512];
    snprintf(copy, sizeof copy, "%d:%s", (int)s, tile_last_error());
    return copy;
}

/* The last error is per thread. */
static void test_last_error_is_thread_local(void **state) {
    (void)state;
    tile_variant_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    assert_int_equal(tile_softmax(F32, ybuf, xbuf, -7, 8, 8, 8, NULL), INV);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, fail_in_thread, NULL), 0);
    void *result;
    assert_int_equal(pthread_join(t, &result), 0);
    char want[16];
    snprintf(want, sizeof want, "%d:", (int)INV);
    assert_true(!strncmp(result, want, strlen(want)));
    assert_non_null(strstr(result, "ld_x is 3"));
    /* this thread still sees its own */
    assert_message("rows is -7");
    assert_untouched();
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_bad_row_arguments, setup),
        cmocka_unit_test_setup(test_first_bad_argument_wins, setup),
        cmocka_unit_test_setup(test_variant_index, setup),
        cmocka_unit_test_setup(test_explain_arguments, setup),
        cmocka_unit_test(test_variant_get_arguments),
        cmocka_unit_test(test_device_arch_null),
        cmocka_unit_test(test_status_strings),
        cmocka_unit_test(test_dtype_and_rule_strings),
        cmocka_unit_test(test_version),
        cmocka_unit_test_setup(test_last_error_lifecycle, setup),
        cmocka_unit_test_setup(test_last_error_is_thread_local, setup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
