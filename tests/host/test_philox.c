/* Dropout's random numbers and the add-and-norm reference (support/), on the host: Philox4x32-10
 * against Random123's known answers, the element-to-counter mapping of docs/api.md, the keep
 * rule's statistics, and the float64 reference on cases small enough to work out by hand. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "support.h"

/* Random123 tests/kat_vectors, the three "philox4x32 10" lines: counter[4], key[2], result[4]. */
static const struct {
    uint32_t ctr[4], key[2], out[4];
} kat[] = {
    {{0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u},
     {0x00000000u, 0x00000000u},
     {0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}},
    {{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu},
     {0xffffffffu, 0xffffffffu},
     {0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}},
    {{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u},
     {0xa4093822u, 0x299f31d0u},
     {0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}},
};

static void test_known_answers(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof kat / sizeof *kat; i++) {
        uint32_t out[4];
        support_philox4x32_10(kat[i].ctr, kat[i].key, out);
        for (int j = 0; j < 4; j++) assert_int_equal(out[j], kat[i].out[j]);
    }
}

/* Element (row, col): key (seed low, seed high), counter (col / 8, row, offset low, offset high
 * ^ row high ^ (col / 8) high), half col % 2 (0: low 16 bits) of word (col / 2) % 4. */
static void test_counter_mapping(void **state) {
    (void)state;
    const uint64_t seed = 0x0123456789abcdefull, offset = 0xfedcba9876543210ull;
    const uint32_t key[2] = {0x89abcdefu, 0x01234567u};
    uint32_t out[4];
    const uint32_t ctr[4] = {3, 5, 0x76543210u, 0xfedcba98u};
    support_philox4x32_10(ctr, key, out);
    for (int64_t c = 24; c < 32; c++) {
        const uint32_t word = out[(c - 24) / 2];
        assert_int_equal(support_dropout_draw(seed, offset, 5, c),
                         c % 2 ? word >> 16 : word & 0xffffu);
    }
    /* the high words of row and column group fold into the last counter word */
    const int64_t row = ((int64_t)7 << 32) | 9, col = ((int64_t)3 << 35) | (6 << 3) | 5;
    const uint32_t ctr_high[4] = {6, 9, 0x76543210u, 0xfedcba98u ^ 7u ^ 3u};
    support_philox4x32_10(ctr_high, key, out);
    assert_int_equal(support_dropout_draw(seed, offset, row, col), out[2] >> 16);
    /* the counter of KAT 3 as (row, col, offset): the pi digits again */
    const uint64_t kseed = ((uint64_t)kat[2].key[1] << 32) | kat[2].key[0];
    const uint64_t koff = ((uint64_t)kat[2].ctr[3] << 32) | kat[2].ctr[2];
    for (int64_t j = 0; j < 8; j++)
        assert_int_equal(support_dropout_draw(kseed, koff, kat[2].ctr[1],
                                              (int64_t)kat[2].ctr[0] * 8 + j),
                         j % 2 ? kat[2].out[j / 2] >> 16 : kat[2].out[j / 2] & 0xffffu);
}

static void test_threshold_and_scale(void **state) {
    (void)state;
    assert_int_equal(support_dropout_threshold(0.0f), 0u);
    assert_int_equal(support_dropout_threshold(0.5f), 0x8000u);
    assert_int_equal(support_dropout_threshold(0.25f), 0x4000u);
    /* 0.1f is 0.100000001490116..., times 2^16 6553.600098, truncated; 1e-4f (9.99999975e-5)
     * times 2^16 is 6.5536, truncated; below 2^-16, p draws nothing */
    assert_int_equal(support_dropout_threshold(0.1f), 6553u);
    assert_int_equal(support_dropout_threshold(1e-4f), 6u);
    assert_int_equal(support_dropout_threshold(1e-5f), 0u);
    assert_int_equal(support_dropout_threshold(nextafterf(1.0f, 0.0f)), 0xffffu);
    const float p = 0.1f, scale = support_dropout_scale(p);
    assert_true(scale == 1.0f / (1.0f - p));
    assert_true(support_dropout_scale(0.0f) == 1.0f);
    assert_true(support_dropout_scale(0.5f) == 2.0f);
}

/* The keep fraction of 10^6 draws is within 5 standard deviations of 1 - p, in each of the
 * eight halves of a Philox output; p = 0 keeps everything. */
static void test_keep_fraction(void **state) {
    (void)state;
    const int64_t rows = 1000, cols = 1000;
    const float ps[] = {0.1f, 0.5f};
    for (size_t i = 0; i < sizeof ps / sizeof *ps; i++) {
        const double p = ps[i];
        int64_t kept = 0, lane[8] = {0};
        for (int64_t r = 0; r < rows; r++)
            for (int64_t c = 0; c < cols; c++) {
                const int k = support_dropout_keep(ps[i], 1234, 77, r, c);
                kept += k;
                lane[c & 7] += k;
            }
        const double n = (double)(rows * cols), sigma = sqrt(n * p * (1 - p));
        assert_true(fabs((double)kept - n * (1 - p)) <= 5 * sigma);
        for (int j = 0; j < 8; j++)
            assert_true(fabs((double)lane[j] - n / 8 * (1 - p)) <= 5 * sigma / sqrt(8.0));
    }
    for (int64_t c = 0; c < 1000; c++) assert_true(support_dropout_keep(0.0f, 1, 2, 3, c));
}

/* Different offsets, seeds and rows draw different numbers: 16-bit draws agree by chance
 * once in 2^16 (0.06 expected of 4096). */
static void test_streams_differ(void **state) {
    (void)state;
    int same_offset = 0, same_seed = 0, same_row = 0, same_high = 0;
    for (int64_t c = 0; c < 4096; c++) {
        const uint32_t w = support_dropout_draw(42, 1000, 3, c);
        same_offset += w == support_dropout_draw(42, 1001, 3, c);
        same_seed += w == support_dropout_draw(43, 1000, 3, c);
        same_row += w == support_dropout_draw(42, 1000, 4, c);
        same_high += w == support_dropout_draw(42, 1000 + (1ull << 32), 3, c);
    }
    assert_true(same_offset < 4 && same_seed < 4 && same_row < 4 && same_high < 4);
}

/* LayerNorm of [1, 2, 3, 4] by hand, with a residual and p = 0: s is the plain fp32 sum. */
static void test_reference_layernorm(void **state) {
    (void)state;
    const float x[4] = {0.5f, 1.5f, 2.5f, 3.5f}, residual[4] = {0.5f, 0.5f, 0.5f, 0.5f};
    const float weight[4] = {1, 2, 1, 2}, norm_bias[4] = {0, 0, 1, 1};
    float s[4];
    double y[4], mean, rstd;
    uint8_t mask[4];
    support_add_norm_ref_args a = {.dtype = TILE_DTYPE_F32, .norm = TILE_NORM_LAYER, .rows = 1,
                                   .cols = 4, .x = x, .ld_x = 4, .residual = residual,
                                   .ld_residual = 4, .weight = weight, .norm_bias = norm_bias,
                                   .eps = 0.0f, .s = s, .y = y, .mask = mask, .mean = &mean,
                                   .rstd = &rstd};
    support_add_norm_reference(&a);
    for (int c = 0; c < 4; c++) {
        assert_true(s[c] == (float)(c + 1));
        assert_int_equal(mask[c], 1);
    }
    assert_true(mean == 2.5);
    assert_true(fabs(rstd - 1 / sqrt(1.25)) < 1e-15);
    const double want[4] = {-1.5 * rstd * 1, -0.5 * rstd * 2, 0.5 * rstd + 1, 1.5 * rstd * 2 + 1};
    for (int c = 0; c < 4; c++) assert_true(fabs(y[c] - want[c]) < 1e-12);
    /* RMSNorm: rstd = 1 / sqrt(mean(s^2) + eps) = 1 / sqrt(7.5 + 0.5); norm_bias is ignored */
    a.norm = TILE_NORM_RMS;
    a.eps = 0.5f;
    mean = -1;
    support_add_norm_reference(&a);
    assert_true(mean == -1);
    assert_true(fabs(rstd - 1 / sqrt(8.0)) < 1e-15);
    for (int c = 0; c < 4; c++) assert_true(fabs(y[c] - (c + 1) * rstd * weight[c]) < 1e-12);
}

/* Dropout in the reference: kept elements are (x + bias) * scale + residual in fp32, dropped
 * ones the residual alone; the mask says which; fp16 storage rounds s. */
static void test_reference_dropout(void **state) {
    (void)state;
    enum { ROWS = 3, COLS = 37, LD = 40 };
    float x[ROWS * LD], residual[ROWS * COLS], bias[COLS], s[ROWS * COLS];
    uint8_t mask[ROWS * COLS];
    support_fill_uniform(x, ROWS * LD, 1, -8.0f, 8.0f);
    support_fill_uniform(residual, ROWS * COLS, 2, -4.0f, 4.0f);
    support_fill_uniform(bias, COLS, 3, -1.0f, 1.0f);
    const float p = 0.5f, scale = support_dropout_scale(p);
    const tile_dtype dtypes[] = {TILE_DTYPE_F32, TILE_DTYPE_F16, TILE_DTYPE_BF16};
    for (size_t d = 0; d < 3; d++) {
        support_add_norm_ref_args a = {.dtype = dtypes[d], .norm = TILE_NORM_NONE, .rows = ROWS,
                                       .cols = COLS, .x = x, .ld_x = LD, .residual = residual,
                                       .ld_residual = COLS, .bias = bias, .p = p, .seed = 99,
                                       .offset = 7, .s = s, .mask = mask};
        support_add_norm_reference(&a);
        int kept = 0;
        for (int r = 0; r < ROWS; r++)
            for (int c = 0; c < COLS; c++) {
                const int keep = support_dropout_keep(p, 99, 7, r, c);
                assert_int_equal(mask[r * COLS + c], keep);
                kept += keep;
                float t = x[r * LD + c] + bias[c];
                t = keep ? t * scale : 0.0f;
                t = t + residual[r * COLS + c];
                float want;
                if (dtypes[d] == TILE_DTYPE_F32) want = t;
                else if (dtypes[d] == TILE_DTYPE_F16)
                    want = support_half_to_float(support_float_to_half(t));
                else want = support_bf16_to_float(support_float_to_bf16(t));
                assert_memory_equal(&s[r * COLS + c], &want, sizeof want);
            }
        assert_true(kept > 0 && kept < ROWS * COLS);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_known_answers),
        cmocka_unit_test(test_counter_mapping),
        cmocka_unit_test(test_threshold_and_scale),
        cmocka_unit_test(test_keep_fraction),
        cmocka_unit_test(test_streams_differ),
        cmocka_unit_test(test_reference_layernorm),
        cmocka_unit_test(test_reference_dropout),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
