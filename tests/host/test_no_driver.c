/* A machine without a CUDA driver: FUSEDOPS_LIBCUDA names a library that does not exist. The
 * library still loads and answers TILE_STATUS_NO_DEVICE, with a message about the driver;
 * what needs no device (explain for a named arch, introspection) keeps working. The driver is
 * loaded once per process, so this is a program of its own, and the variable is set before
 * the first library call. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "first_variant.h"
#include "fusedops.h"

#define MISSING "/nonexistent/libcuda.so.1"

static _Alignas(256) unsigned char ybuf[4096];
static _Alignas(256) unsigned char xbuf[4096];

static void assert_untouched(void) {
    for (size_t i = 0; i < sizeof ybuf; i++)
        if (ybuf[i] != 0xa5) {
            print_error("y was written at byte %zu\n", i);
            fail();
        }
}

static void assert_driver_message(void) {
    const char *e = tile_last_error();
    if (!strstr(e, "driver") || !strstr(e, MISSING)) {
        print_error("tile_last_error() \"%s\" should mention the driver and %s\n", e, MISSING);
        fail();
    }
}

/* Valid attention arguments over the host buffers: q, k, v in xbuf (read only), o in ybuf;
 * BHSD, 2 sequences of 8 queries and 12 keys, 4 query heads over 2 key/value heads, 16 wide,
 * or the same tokens packed as varlen. */
static tile_flash_attention_args attention_args(tile_dtype dtype, int varlen) {
    static const int32_t cu_q[3] = {0, 5, 8}, cu_k[3] = {0, 12, 12};
    tile_flash_attention_args a = {
        .struct_size = sizeof a, .dtype = dtype, .batch = 2, .heads_q = 4, .heads_kv = 2,
        .head_dim = 16, .seqlen_q = varlen ? 5 : 8, .seqlen_k = 12,
        .o = ybuf, .q = xbuf, .k = xbuf, .v = xbuf,
        .q_batch_stride = 4 * 8 * 16, .q_seq_stride = 16, .q_head_stride = 8 * 16,
        .k_batch_stride = 2 * 12 * 16, .k_seq_stride = 16, .k_head_stride = 12 * 16,
        .v_batch_stride = 2 * 12 * 16, .v_seq_stride = 16, .v_head_stride = 12 * 16,
        .o_batch_stride = 4 * 8 * 16, .o_seq_stride = 16, .o_head_stride = 8 * 16,
        .cu_seqlens_q = varlen ? cu_q : NULL, .cu_seqlens_k = varlen ? cu_k : NULL,
        .total_q = varlen ? 8 : 0, .total_k = varlen ? 12 : 0,
        .lse = (float *)(void *)(ybuf + 2048)};
    return a;
}

/* Every attention entry point passes validation on host pointers and answers NO_DEVICE. */
static void test_attention_answers_no_device(void **state) {
    (void)state;
    for (int round = 0; round < 2; round++)
        for (tile_dtype t = TILE_DTYPE_F16; t <= TILE_DTYPE_BF16; t++)
            for (int varlen = 0; varlen < 2; varlen++) {
                tile_flash_attention_args a = attention_args(t, varlen);
                a.causal = varlen;
                assert_int_equal(tile_flash_attention(&a, NULL), TILE_STATUS_NO_DEVICE);
                assert_driver_message();
                assert_int_equal(
                    tile_flash_attention_variant(first_variant_of("attention", t), &a, NULL),
                    TILE_STATUS_NO_DEVICE);
                assert_driver_message();
                tile_decision d = {.struct_size = sizeof d};
                assert_int_equal(tile_flash_attention_explain(&a, 0, &d), TILE_STATUS_NO_DEVICE);
                assert_driver_message();
                /* a named arch needs no device */
                assert_int_equal(tile_flash_attention_explain(&a, 80, &d), TILE_STATUS_SUCCESS);
                assert_string_equal(tile_last_error(), "");
                assert_untouched();
            }
    /* validation comes first, and the variant's op before the device */
    tile_flash_attention_args a = attention_args(TILE_DTYPE_BF16, 0);
    a.heads_q = 3;
    assert_int_equal(tile_flash_attention(&a, NULL), TILE_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(tile_last_error(), "heads_q is 3"));
    a = attention_args(TILE_DTYPE_BF16, 0);
    assert_int_equal(tile_flash_attention_variant(first_variant_of("softmax", TILE_DTYPE_BF16), &a,
                                                  NULL),
                     TILE_STATUS_NOT_SUPPORTED);
    assert_int_equal(tile_flash_attention_variant(first_variant_of("attention", TILE_DTYPE_F16), &a,
                                                  NULL),
                     TILE_STATUS_NOT_SUPPORTED);
    assert_untouched();
}

/* Valid grouped matmul arguments over the host buffers: a, b and bias in xbuf (read only), c
 * in ybuf, the offsets a static array. 3 groups over 12 rows, n 16, k 8; B stored
 * [groups, k, n] or [groups, n, k]. */
static tile_grouped_matmul_args grouped_matmul_args(tile_dtype dtype, int kmajor) {
    static const int32_t offsets[3] = {5, 5, 12};
    tile_grouped_matmul_args a = {
        .struct_size = sizeof a, .dtype = dtype, .groups = 3, .total_m = 12, .n = 16, .k = 8,
        .c = ybuf, .a = xbuf, .b = xbuf + 256, .ldc = 16, .lda = 8,
        .b_group_stride = 8 * 16, .b_k_stride = kmajor ? 1 : 16, .b_n_stride = kmajor ? 8 : 1,
        .bias = xbuf + 2048, .bias_group_stride = 16, .offsets = offsets};
    return a;
}

/* Every grouped matmul entry point passes validation on host pointers and answers NO_DEVICE,
 * no rows (total_m 0) included: the device is checked before a call finds nothing to do.
 * tile_grouped_matmul_variant needs a grouped_matmul variant to get that far: while the
 * registry has none, its index is refused first (INVALID_ARGUMENT), and explain for a named
 * arch says none is compiled (ARCH_MISMATCH). */
static void test_grouped_matmul_answers_no_device(void **state) {
    (void)state;
    for (int round = 0; round < 2; round++)
        for (tile_dtype t = TILE_DTYPE_F16; t <= TILE_DTYPE_BF16; t++)
            for (int kmajor = 0; kmajor < 2; kmajor++)
                for (int64_t total_m = 0; total_m <= 12; total_m += 12) {
                    tile_grouped_matmul_args a = grouped_matmul_args(t, kmajor);
                    a.total_m = total_m;
                    const int32_t v = first_variant_of("grouped_matmul", t);
                    assert_int_equal(tile_grouped_matmul(&a, NULL), TILE_STATUS_NO_DEVICE);
                    assert_driver_message();
                    if (v >= 0) {
                        assert_int_equal(tile_grouped_matmul_variant(v, &a, NULL),
                                         TILE_STATUS_NO_DEVICE);
                        assert_driver_message();
                    } else {
                        assert_int_equal(tile_grouped_matmul_variant(v, &a, NULL),
                                         TILE_STATUS_INVALID_ARGUMENT);
                        assert_non_null(strstr(tile_last_error(), "variant -1"));
                    }
                    tile_decision d = {.struct_size = sizeof d};
                    assert_int_equal(tile_grouped_matmul_explain(&a, 0, &d),
                                     TILE_STATUS_NO_DEVICE);
                    assert_driver_message();
                    /* a named arch needs no device */
                    assert_int_equal(tile_grouped_matmul_explain(&a, 90, &d),
                                     v >= 0 ? TILE_STATUS_SUCCESS : TILE_STATUS_ARCH_MISMATCH);
                    if (v >= 0) assert_string_equal(tile_last_error(), "");
                    assert_untouched();
                }
    /* validation comes first, and the variant's op before the device */
    tile_grouped_matmul_args a = grouped_matmul_args(TILE_DTYPE_BF16, 0);
    a.b_n_stride = 2;
    assert_int_equal(tile_grouped_matmul(&a, NULL), TILE_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(tile_last_error(), "b_n_stride 2"));
    a = grouped_matmul_args(TILE_DTYPE_BF16, 0);
    assert_int_equal(tile_grouped_matmul_variant(first_variant_of("attention", TILE_DTYPE_BF16),
                                                 &a, NULL),
                     TILE_STATUS_NOT_SUPPORTED);
    assert_untouched();
}

static void test_ops_answer_no_device(void **state) {
    (void)state;
    for (int round = 0; round < 3; round++) { /* the answer does not change on later calls */
        for (int t = 0; t < TILE_DTYPE_COUNT_; t++) {
            assert_int_equal(tile_softmax((tile_dtype)t, ybuf, xbuf, 4, 100, 100, 100, NULL),
                             TILE_STATUS_NO_DEVICE);
            assert_driver_message();
            assert_int_equal(tile_log_softmax((tile_dtype)t, ybuf, xbuf, 1, 7, 7, 7, NULL),
                             TILE_STATUS_NO_DEVICE);
            assert_driver_message();
            /* in place */
            assert_int_equal(tile_softmax((tile_dtype)t, ybuf, ybuf, 2, 8, 8, 8, NULL),
                             TILE_STATUS_NO_DEVICE);
            assert_driver_message();
        }
        assert_int_equal(tile_softmax_variant(first_variant_of("softmax", TILE_DTYPE_F32), 0,
                                              TILE_DTYPE_F32, ybuf, xbuf, 4, 8, 8, 8, NULL),
                         TILE_STATUS_NO_DEVICE);
        assert_driver_message();
        assert_untouched();
    }
}

static void test_validation_still_comes_first(void **state) {
    (void)state;
    assert_int_equal(tile_softmax(TILE_DTYPE_F32, ybuf, xbuf, 0, 8, 8, 8, NULL),
                     TILE_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(tile_last_error(), "rows"));
    assert_int_equal(tile_softmax(TILE_DTYPE_F16, ybuf + 1, xbuf, 4, 8, 8, 8, NULL),
                     TILE_STATUS_MISALIGNED);
    assert_int_equal(tile_softmax_variant(-1, 0, TILE_DTYPE_F32, ybuf, xbuf, 4, 8, 8, 8, NULL),
                     TILE_STATUS_INVALID_ARGUMENT);
    assert_untouched();
}

static void test_device_arch(void **state) {
    (void)state;
    int32_t arch = -12345;
    assert_int_equal(tile_device_arch(&arch), TILE_STATUS_NO_DEVICE);
    assert_driver_message();
    assert_int_equal(arch, -12345); /* not written */
}

static void test_explain(void **state) {
    (void)state;
    tile_decision d;
    memset(&d, 0, sizeof d);
    d.struct_size = sizeof d;
    /* a named architecture needs no device */
    assert_int_equal(tile_softmax_explain(TILE_DTYPE_BF16, 4096, 4096, 4096, 4096, 16, 90, &d),
                     TILE_STATUS_SUCCESS);
    assert_string_equal(tile_last_error(), "");
    assert_true(d.variant >= 0 && d.variant < tile_variant_count());
    assert_int_equal(d.arch, 90);
    assert_true(d.eligible > 0);
    assert_int_equal(tile_softmax_explain(TILE_DTYPE_F32, 3, 17, 17, 17, 4, 80, &d),
                     TILE_STATUS_SUCCESS);
    /* the current device's does */
    memset(&d, 0, sizeof d);
    d.struct_size = sizeof d;
    assert_int_equal(tile_softmax_explain(TILE_DTYPE_BF16, 4096, 4096, 4096, 4096, 16, 0, &d),
                     TILE_STATUS_NO_DEVICE);
    assert_driver_message();
}

static void test_introspection(void **state) {
    (void)state;
    assert_true(tile_variant_count() > 0);
    tile_variant_info v;
    memset(&v, 0, sizeof v);
    v.struct_size = sizeof v;
    assert_int_equal(tile_variant_get(0, &v), TILE_STATUS_SUCCESS);
    assert_int_equal(tile_variant_find(v.name), 0);
    assert_int_equal(tile_version(), TILE_VERSION);
}

int main(void) {
    /* before any library call: the driver is looked up once per process */
    if (setenv("FUSEDOPS_LIBCUDA", MISSING, 1)) return 1;
    memset(ybuf, 0xa5, sizeof ybuf);
    memset(xbuf, 0x3c, sizeof xbuf);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ops_answer_no_device),
        cmocka_unit_test(test_attention_answers_no_device),
        cmocka_unit_test(test_grouped_matmul_answers_no_device),
        cmocka_unit_test(test_validation_still_comes_first),
        cmocka_unit_test(test_device_arch),
        cmocka_unit_test(test_explain),
        cmocka_unit_test(test_introspection),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
