/* The grouped matmul test support (support/), on the host: the Dirichlet group ends (the exact
 * draw bench/vs_torch.py reproduces in Python), the float64 and fp32-accumulated references on
 * cases small enough to work out by hand, the error rule, and the GPU test's setup and check run
 * against a stand-in driver whose device memory is host memory: a correct "kernel" written from
 * the host must pass, and each kind of wrong output must be caught. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "support.h"

static void sizes_of(const int32_t *ends, int32_t groups, int64_t *sizes) {
    for (int32_t g = 0; g < groups; g++) sizes[g] = ends[g] - (g ? ends[g - 1] : 0);
}

static void test_skewed_ends(void **state) {
    (void)state;
    /* pinned: bench/gmm_routing.py's skewed_group_ends (vs_torch.py's draw) gives these too:
     * tests/python/test_gmm_routing.py checks it */
    static const int32_t want[8] = {1260, 1330, 1478, 2457, 2921, 3698, 4050, 4096};
    int32_t ends[64], again[64];
    int64_t sizes[64];
    support_skewed_group_ends(8, 4096, 1.0, 7, ends);
    for (int g = 0; g < 8; g++) assert_int_equal(ends[g], want[g]);
    for (int a = 0; a < 3; a++) {
        const double alpha = a == 0 ? 0.3 : a == 1 ? 1.0 : 5.0;
        support_skewed_group_ends(64, 10000, alpha, 11, ends);
        support_skewed_group_ends(64, 10000, alpha, 11, again);
        assert_memory_equal(ends, again, sizeof ends); /* deterministic */
        assert_int_equal(ends[63], 10000);
        sizes_of(ends, 64, sizes);
        int64_t most = 0, empty = 0;
        for (int g = 0; g < 64; g++) {
            assert_true(sizes[g] >= 0);
            most = sizes[g] > most ? sizes[g] : most;
            empty += sizes[g] == 0;
        }
        /* skew: the largest group holds several times the mean (156) at alpha 0.3 and 1, and
         * alpha 0.3 leaves groups empty */
        if (alpha < 2.0) assert_true(most > 3 * 10000 / 64);
        if (alpha < 0.5) assert_true(empty > 0);
    }
    support_skewed_group_ends(3, 0, 1.0, 1, ends); /* no rows */
    for (int g = 0; g < 3; g++) assert_int_equal(ends[g], 0);
}

/* Two groups, k = 3, n = 2: A rows [1 2 3], [4 5 6], [7 8 9]; B_0 = [[1 0] [0 1] [1 1]],
 * B_1 = 2 I (third row 0); bias [0.5 -0.5], [10 20]. */
static const float A[] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
static const float B_kn[] = {1, 0, 0, 1, 1, 1, 2, 0, 0, 2, 0, 0};
static const float B_nk[] = {1, 0, 1, 0, 1, 1, 2, 0, 0, 0, 2, 0};
static const float BIAS[] = {0.5f, -0.5f, 10, 20};

static void test_reference_by_hand(void **state) {
    (void)state;
    const int32_t ends[] = {1, 2};
    tile_grouped_matmul_args a = {
        .struct_size = sizeof a, .dtype = TILE_DTYPE_BF16, .groups = 2, .total_m = 3, .n = 2,
        .k = 3, .a = A, .b = B_kn, .lda = 3, .ldc = 2, .b_group_stride = 6, .b_k_stride = 2,
        .b_n_stride = 1, .bias = BIAS, .bias_group_stride = 2, .offsets = ends};
    double out[2];
    float lp[2];
    for (int layout = 0; layout < 2; layout++) {
        if (layout) a.b = B_nk, a.b_k_stride = 1, a.b_n_stride = 3;
        assert_int_equal(support_grouped_matmul_reference(&a, 0, NULL, 2, out, lp), 0);
        assert_true(out[0] == 4.5 && out[1] == 4.5 && lp[0] == 4.5f && lp[1] == 4.5f);
        assert_int_equal(support_grouped_matmul_reference(&a, 1, NULL, 2, out, lp), 1);
        assert_true(out[0] == 18.0 && out[1] == 30.0);
        const int64_t col1 = 1;
        assert_int_equal(support_grouped_matmul_reference(&a, 1, &col1, 1, out, NULL), 1);
        assert_true(out[0] == 30.0);
        /* row 2 is past the last end: no group */
        assert_int_equal(support_grouped_matmul_reference(&a, 2, NULL, 2, out, lp), -1);
    }
    /* ends clamped into [previous end, total_m]: {5, 1} is {3, 3}, group 1 empty */
    const int32_t wild[] = {5, 1};
    a.offsets = wild;
    for (int64_t m = 0; m < 3; m++)
        assert_int_equal(support_grouped_matmul_reference(&a, m, NULL, 2, out, NULL), 0);
    /* no bias */
    a.offsets = ends, a.bias = NULL;
    support_grouped_matmul_reference(&a, 0, NULL, 2, out, lp);
    assert_true(out[0] == 4.0 && out[1] == 5.0);
}

/* The fp32-accumulated reference rounds its sum to the dtype; the float64 one does not. */
static void test_reference_rounding(void **state) {
    (void)state;
    const float a_row[] = {1.0f, 1.0f / 256};
    const float b[] = {1.0f, 1.0f};
    const int32_t end = 1;
    tile_grouped_matmul_args a = {
        .struct_size = sizeof a, .dtype = TILE_DTYPE_BF16, .groups = 1, .total_m = 1, .n = 1,
        .k = 2, .a = a_row, .b = b, .lda = 2, .ldc = 1, .b_k_stride = 1, .b_n_stride = 1,
        .offsets = &end};
    double out;
    float lp;
    support_grouped_matmul_reference(&a, 0, NULL, 1, &out, &lp);
    assert_true(out == 1.0 + 1.0 / 256);
    assert_true(lp == 1.0f); /* 1 + 2^-8 is a tie in bf16 (8 bits): to even, 1 */
    a.dtype = TILE_DTYPE_F16;
    support_grouped_matmul_reference(&a, 0, NULL, 1, &out, &lp);
    assert_true(lp == 1.0f + 1.0f / 256); /* exact in fp16 */
}

static void test_error_rule(void **state) {
    (void)state;
    support_grouped_matmul_errors e = {.err = 0.1, .err_lp = 0.06, .scale = 4.0, .checked = 8};
    const double allowed = support_grouped_matmul_allowed(TILE_DTYPE_BF16, &e);
    assert_true(fabs(allowed - (0.12 + 4.0 / 256 / 8)) < 1e-12);
    assert_true(e.err <= allowed);
    e.scale = 0.5; /* the slack never shrinks below that at scale 1 */
    assert_true(fabs(support_grouped_matmul_allowed(TILE_DTYPE_F16, &e) - (0.12 + 1.0 / 2048 / 8)) <
                1e-12);
    /* a NaN output makes err infinite: never within the rule */
    const float got = NAN;
    const int32_t end = 1;
    const float one = 1.0f;
    const tile_grouped_matmul_args a = {
        .struct_size = sizeof a, .dtype = TILE_DTYPE_BF16, .groups = 1, .total_m = 1, .n = 1,
        .k = 1, .a = &one, .b = &one, .lda = 1, .ldc = 1, .b_k_stride = 1, .b_n_stride = 1,
        .offsets = &end};
    support_grouped_matmul_errors nan_e = {0};
    assert_int_equal(support_grouped_matmul_check_row(&a, 0, NULL, 1, &got, &nan_e), 0);
    assert_true(isinf(nan_e.err));
    assert_false(nan_e.err <= support_grouped_matmul_allowed(TILE_DTYPE_BF16, &nan_e));
}

/* ---------------------------------------- a stand-in driver: device memory is host memory */

static int live_allocations;

static CUresult fake_alloc(CUdeviceptr *p, size_t bytes) {
    if (!bytes) return CUDA_ERROR_INVALID_VALUE; /* as cuMemAlloc */
    void *m = aligned_alloc(256, (bytes + 255) / 256 * 256);
    if (!m) return CUDA_ERROR_OUT_OF_MEMORY;
    *p = (CUdeviceptr)(uintptr_t)m;
    live_allocations++;
    return CUDA_SUCCESS;
}
static CUresult fake_free(CUdeviceptr p) {
    free((void *)(uintptr_t)p);
    live_allocations--;
    return CUDA_SUCCESS;
}
static CUresult fake_htod(CUdeviceptr dst, const void *src, size_t bytes) {
    memcpy((void *)(uintptr_t)dst, src, bytes);
    return CUDA_SUCCESS;
}
static CUresult fake_dtoh(void *dst, CUdeviceptr src, size_t bytes) {
    memcpy(dst, (const void *)(uintptr_t)src, bytes);
    return CUDA_SUCCESS;
}
static CUresult fake_memset(CUdeviceptr dst, unsigned char v, size_t bytes) {
    memset((void *)(uintptr_t)dst, v, bytes);
    return CUDA_SUCCESS;
}

static CUresult fake_synchronize(void) { return CUDA_SUCCESS; } /* host memory: nothing pending */

static tile_driver fake_driver;
static support_gpu fake_gpu;

static int setup_fake(void **state) {
    (void)state;
    fake_driver.cuMemAlloc = fake_alloc;
    fake_driver.cuMemFree = fake_free;
    fake_driver.cuMemcpyHtoD = fake_htod;
    fake_driver.cuMemcpyDtoH = fake_dtoh;
    fake_driver.cuMemsetD8 = fake_memset;
    fake_driver.cuCtxSynchronize = fake_synchronize;
    fake_gpu.drv = &fake_driver;
    return 0;
}

/* What a correct kernel writes: every group row of C, columns below n, from the fp32-accumulated
 * reference (rounded to the dtype), nothing else. */
static void emulate_kernel(const support_grouped_matmul_problem *p) {
    const tile_grouped_matmul_args *a = &p->args;
    tile_grouped_matmul_args ref = *a;
    ref.a = p->a, ref.b = p->b, ref.bias = a->bias ? p->bias : NULL, ref.offsets = p->ends;
    double *want = support_xmalloc((size_t)a->n * sizeof *want);
    float *lp = support_xmalloc((size_t)a->n * sizeof *lp);
    for (int64_t m = 0; m < a->total_m; m++)
        if (support_grouped_matmul_reference(&ref, m, NULL, a->n, want, lp) >= 0)
            support_pack(a->dtype, (uint16_t *)a->c + m * a->ldc, lp, (size_t)a->n);
    free(want);
    free(lp);
}

static uint16_t *c_at(const support_grouped_matmul_problem *p, int64_t m, int64_t j) {
    return (uint16_t *)p->args.c + m * p->args.ldc + j;
}

/* A correct output passes, in every layout and dtype; the problem's layout is as documented. */
static void test_harness_passes_correct_output(void **state) {
    (void)state;
    static const int32_t clamped[] = {50, 30, 100, 90, 100};
    const support_grouped_matmul_case cases[] = {
        {-1, TILE_DTYPE_BF16, 8, 300, 200, 136, NULL, 0, 0.3, 0, 1, 8, 1, 0, 0},
        {-1, TILE_DTYPE_F16, 8, 300, 200, 136, NULL, 0, 0.3, 1, 0, 0, 2, 1, 0},
        {-1, TILE_DTYPE_BF16, 6, 150, 100, 50, NULL, 20, 1.0, 1, 1, 8, 3, 0, 0},
        {-1, TILE_DTYPE_F16, 5, 120, 64, 72, clamped, 0, 0, 0, 1, 0, 4, 1, 0},
        {-1, TILE_DTYPE_BF16, 4, 0, 64, 64, NULL, 0, 1.0, 0, 1, 0, 5, 0, 0},
        /* one row whose A and C rows lie 1 element past 16 bytes apart (row_pad) */
        {-1, TILE_DTYPE_BF16, 1, 1, 200, 136, NULL, 0, 1.0, 1, 1, 0, 6, 0, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const support_grouped_matmul_case *c = &cases[i];
        support_grouped_matmul_problem p;
        support_grouped_matmul_setup(&fake_gpu, c, &p);
        const tile_grouped_matmul_args *a = &p.args;
        /* strides: extents rounded up to 8 elements, plus pad (and row_pad for A and C); B as
         * the case says */
        const int64_t lda = (c->k + 7) / 8 * 8 + c->pad + c->row_pad,
                      ldc = (c->n + 7) / 8 * 8 + c->pad + c->row_pad;
        assert_int_equal(a->lda, lda);
        assert_int_equal(a->ldc, ldc);
        assert_int_equal(c->b_nk ? a->b_k_stride : a->b_n_stride, 1);
        assert_true((c->bias != 0) == (a->bias != NULL));
        assert_int_equal((uintptr_t)a->c % 256, 0);
        assert_true((c->fixed_schedule == 0) == (a->workspace != NULL)); /* zeroed by setup */
        if (c->ends)
            assert_memory_equal(p.ends, c->ends, (size_t)c->groups * sizeof *p.ends);
        else
            assert_int_equal(p.ends[c->groups - 1], c->total_m - c->tail);
        /* A's padding is NaN (kernels must not use it) */
        if (lda > c->k && c->total_m) assert_true(isnan(p.a[c->k]));
        support_grouped_matmul_errors e = {0};
        emulate_kernel(&p);
        assert_int_equal(support_grouped_matmul_check(&fake_gpu, &p, "correct", &e), 0);
        if (c->total_m) assert_true(e.checked > 0 && e.err <= 2 * e.err_lp + 1e-12);
        support_grouped_matmul_free(&fake_gpu, &p);
    }
    assert_int_equal(live_allocations, 0);
}

/* Each kind of wrong output is caught. */
static void test_harness_catches_faults(void **state) {
    (void)state;
    const support_grouped_matmul_case c = {-1, TILE_DTYPE_BF16, 8, 400, 96, 72, NULL, 37, 1.0,
                                           0, 1, 8, 9, 0, 0};
    for (int fault = 0; fault < 7; fault++) {
        support_grouped_matmul_problem p;
        support_grouped_matmul_setup(&fake_gpu, &c, &p);
        emulate_kernel(&p);
        const int64_t last = p.ends[c.groups - 1]; /* rows last .. total_m - 1: no group */
        switch (fault) {
        case 0: *c_at(&p, last + 3, 5) = 0; break;                /* a row in no group */
        case 1: *c_at(&p, 10, c.n + 2) = 0; break;                /* row padding */
        case 2: *c_at(&p, 0, 7) = 0xffff; break;                  /* not written */
        case 3: ((unsigned char *)p.args.c)[p.c_bytes - 1] = 0; break; /* past C */
        case 4: {                                                 /* off by 1 (C ~ +-10) */
            float v;
            support_unpack(c.dtype, &v, c_at(&p, 0, 3), 1);
            v += 1.0f;
            support_pack(c.dtype, c_at(&p, 0, 3), &v, 1);
            break;
        }
        case 5: *c_at(&p, last - 1, 0) = 0x7fc0; break;           /* NaN, last group row */
        default: ((unsigned char *)p.args.workspace)[9] = 1; break; /* a counter left set */
        }
        char label[32];
        snprintf(label, sizeof label, "fault %d (expected)", fault);
        assert_true(support_grouped_matmul_check(&fake_gpu, &p, label, NULL) > 0);
        support_grouped_matmul_free(&fake_gpu, &p);
    }
    assert_int_equal(live_allocations, 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_skewed_ends),
        cmocka_unit_test(test_reference_by_hand),
        cmocka_unit_test(test_reference_rounding),
        cmocka_unit_test(test_error_rule),
        cmocka_unit_test_setup(test_harness_passes_correct_output, setup_fake),
        cmocka_unit_test_setup(test_harness_catches_faults, setup_fake),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
