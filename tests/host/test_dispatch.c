/* Dispatch for architectures given by number (tile_softmax_explain, tile_norm_explain and
 * tile_flash_attention_explain and tile_grouped_matmul_explain with arch != 0: no GPU needed), the
 * heuristic's costs, and the variant registry. Linked with the static library, so the internal helpers
 * (src/internal.h) are checked too. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "attention_tune_grid.h"
#include "fusedops.h"
#include "internal.h"
#include "tuning_parse.h"

static const tile_dtype dtypes[] = {TILE_DTYPE_F32, TILE_DTYPE_F16, TILE_DTYPE_BF16};
static const int32_t arches[] = {80, 86, 87, 89, 90, 100, 120};
/* Architectures the fatbinary holds SASS for (FUSEDOPS_CUDA_TARGETS): other GPUs run the
 * embedded PTX, which is built for a pre-Hopper target and so has no thread-block clusters. */
static const int32_t sass_archs[] = {FUSEDOPS_SASS_ARCHS};

typedef struct shape {
    int64_t rows, cols;
} shape;

static const shape shapes[] = {
    {1, 1},          {1, 17},         {1, 32},          {2, 33},       {97, 781},
    {1823, 781},     {64, 512},       {4096, 4096},     {8192, 8192},  {2, 16384},
    {1, 65536},      {1, 131073},     {1024, 131072},   {4, 1048576},  {3, (1 << 20) + 7},
    {1000000, 1},    {100000, 64},    {7, 1000},        {1, 1 << 24},
};

static size_t elem_size(tile_dtype d) { return d == TILE_DTYPE_F32 ? 4 : 2; }

static int32_t align_of(uint64_t x) {
    int32_t a = 1;
    while (a < 256 && x % (uint64_t)(2 * a) == 0) a *= 2;
    return a;
}

/* The alignment the library should see: pointers, and for rows > 1 the row strides in bytes. */
static int32_t expected_align(tile_dtype d, int64_t rows, int64_t ld_y, int64_t ld_x,
                              int32_t pointer_align) {
    int32_t a = pointer_align > 256 ? 256 : pointer_align;
    if (rows > 1) {
        int32_t s = align_of((uint64_t)ld_y * elem_size(d));
        int32_t t = align_of((uint64_t)ld_x * elem_size(d));
        if (s < a) a = s;
        if (t < a) a = t;
    }
    return a;
}

/* Attention's Hopper families: warpgroup products (wgmma, and the warp-specialized ws that
 * copies by tensor maps), sm_90 only, one program a block. */
static int is_wgmma_variant(const tile_variant_info *v) {
    return !strcmp(v->op, "attention") &&
           (strstr(v->name, "_wgmma_sm90") != NULL || strstr(v->name, "_ws_sm90") != NULL);
}

/* sm_90-only variants: clusters, Hopper bulk copies, warpgroup products (the `_sm90` name
 * suffix). */
static int is_sm90_variant(const tile_variant_info *v) {
    size_t n = strlen(v->name);
    return v->cluster > 1 || (n > 5 && !strcmp(v->name + n - 5, "_sm90")) ||
           strstr(v->name, "_c2") || strstr(v->name, "_c4") || strstr(v->name, "_c8");
}

static int has_sass(int32_t arch) {
    for (size_t i = 0; i < sizeof sass_archs / sizeof *sass_archs; i++)
        if (sass_archs[i] == arch) return 1;
    return 0;
}

static int arch_holds(const tile_variant_info *v, int32_t arch) {
    return arch >= v->arch_min && (v->arch_max == 0 || arch <= v->arch_max);
}

static tile_variant_info get_info(int32_t index) {
    tile_variant_info v;
    memset(&v, 0, sizeof v);
    v.struct_size = sizeof v;
    assert_int_equal(tile_variant_get(index, &v), TILE_STATUS_SUCCESS);
    return v;
}

/* How many variants should be eligible, from the public introspection alone. */
static int32_t count_eligible_of(const char *op, tile_dtype d, int64_t cols, int32_t align,
                                 int32_t arch, int pointwise) {
    int32_t n = 0;
    for (int32_t i = 0; i < tile_variant_count(); i++) {
        tile_variant_info v = get_info(i);
        if (strcmp(v.op, op) || v.dtype != d || !arch_holds(&v, arch)) continue;
        if (v.smem_bytes > tile_arch_smem_limit(arch)) continue; /* 128 KiB stages on sm_86 */
        if (v.max_cols && v.max_cols < cols) continue;
        if (align % v.align_bytes) continue;
        if (strstr(v.params, "LEAN=1") && cols != v.max_cols) continue; /* explain: no extras */
        if (strstr(v.params, "POINTWISE=1") && !pointwise) continue; /* no row statistics */
        n++;
    }
    return n;
}

/* The index in vs of the variant dispatch's heuristic would pick for p (the first of the
 * lowest cost among the eligible), or -1. Over the registry (vs = tile_registry): the
 * heuristic's pick whatever the tuned tables say, for tests of the heuristic's choices on
 * problems that a tuned entry may decide. */
static int best_variant(const tile_variant *vs, int count, const tile_problem *p) {
    int best = -1;
    double best_cost = 0;
    for (int i = 0; i < count; i++) {
        if (!tile_variant_eligible(&vs[i], p, NULL)) continue;
        const double cost = tile_heuristic_cost(&vs[i], p);
        if (best < 0 || cost < best_cost) {
            best = i;
            best_cost = cost;
        }
    }
    return best;
}

static tile_decision new_decision(void) {
    tile_decision d;
    memset(&d, 0xab, sizeof d);
    d.struct_size = sizeof d;
    return d;
}

/* Explains the problem and checks that the decision is a variant that can run it. */
static tile_decision check_decision_of(const char *op, tile_dtype dt, int64_t rows, int64_t cols,
                                       int64_t ld_y, int64_t ld_x, int32_t pointer_align,
                                       int32_t arch) {
    tile_decision d = new_decision();
    tile_status s = (strcmp(op, "norm") ? tile_softmax_explain : tile_norm_explain)(
        dt, rows, cols, ld_y, ld_x, pointer_align, arch, &d);
    if (s != TILE_STATUS_SUCCESS)
        print_error("explain %s %lldx%lld ld %lld/%lld align %d sm_%d: %s: %s\n",
                    tile_dtype_string(dt), (long long)rows, (long long)cols, (long long)ld_y,
                    (long long)ld_x, pointer_align, arch, tile_status_string(s),
                    tile_last_error());
    assert_int_equal(s, TILE_STATUS_SUCCESS);
    assert_string_equal(tile_last_error(), "");
    assert_in_range(d.variant, 0, tile_variant_count() - 1);
    assert_int_equal(d.arch, arch);
    assert_true(d.rule == TILE_RULE_TUNED || d.rule == TILE_RULE_NEAREST ||
                d.rule == TILE_RULE_HEURISTIC);
    assert_non_null(memchr(d.reason, '\0', sizeof d.reason));
    assert_true(strlen(d.reason) > 0);
    /* the reason starts with the rule that decided */
    assert_true(!strncmp(d.reason, tile_rule_string(d.rule), strlen(tile_rule_string(d.rule))));

    const int32_t align = expected_align(dt, rows, ld_y, ld_x, pointer_align);
    assert_int_equal(d.eligible, count_eligible_of(op, dt, cols, align, arch, 0));
    assert_true(d.eligible >= 1);

    tile_variant_info v = get_info(d.variant);
    if (strcmp(v.op, op) || v.dtype != dt || (v.max_cols && v.max_cols < cols) ||
        !arch_holds(&v, arch) || align % v.align_bytes ||
        v.smem_bytes > tile_arch_smem_limit(arch)) {
        print_error("%s %lldx%lld (align %d) on sm_%d chose %s: max_cols %lld, sm_%d..%d, "
                    "align %d\n",
                    tile_dtype_string(dt), (long long)rows, (long long)cols, align, arch, v.name,
                    (long long)v.max_cols, v.arch_min, v.arch_max, v.align_bytes);
        fail();
    }
    /* the library's own predicate agrees */
    tile_problem p = {.op = op, .dtype = dt, .rows = rows, .cols = cols, .align = align,
                      .arch = arch, .smem_limit = tile_arch_smem_limit(arch)};
    const char *why = "unset";
    assert_true(tile_variant_eligible(&tile_registry[d.variant], &p, &why));
    assert_null(why);
    return d;
}

static tile_decision check_decision(tile_dtype dt, int64_t rows, int64_t cols, int64_t ld_y,
                                    int64_t ld_x, int32_t pointer_align, int32_t arch) {
    return check_decision_of("softmax", dt, rows, cols, ld_y, ld_x, pointer_align, arch);
}

/* ---------------------------------------------------------------- shapes */

static void test_every_shape_dtype_arch(void **state) {
    (void)state;
    for (size_t a = 0; a < sizeof arches / sizeof *arches; a++)
        for (size_t t = 0; t < 3; t++)
            for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
                const shape *sh = &shapes[s];
                tile_decision d = check_decision(dtypes[t], sh->rows, sh->cols, sh->cols,
                                                 sh->cols, 16, arches[a]);
                tile_variant_info v = get_info(d.variant);
                /* Clusters need sm_90+ and SASS for the arch (the PTX has none). */
                if (is_sm90_variant(&v) && !(arches[a] >= 90 && has_sass(arches[a]))) {
                    print_error("sm_%d picked cluster variant %s for %lldx%lld\n", arches[a],
                                v.name, (long long)sh->rows, (long long)sh->cols);
                    fail();
                }
            }
}

static void test_sm80_never_clusters(void **state) {
    (void)state;
    for (size_t t = 0; t < 3; t++)
        for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
            for (int32_t palign = 2; palign <= 256; palign *= 2) {
                if (dtypes[t] == TILE_DTYPE_F32 && palign < 4) continue;
                const shape *sh = &shapes[s];
                tile_decision d = check_decision(dtypes[t], sh->rows, sh->cols, sh->cols + 8,
                                                 sh->cols, palign, 80);
                tile_variant_info v = get_info(d.variant);
                assert_false(is_sm90_variant(&v));
                assert_int_equal(v.cluster, 1);
                assert_true(v.arch_min <= 80);
            }
}

/* On sm_90 the cluster variants join the candidates for wide rows: the extra candidates are
 * exactly the variants compiled for sm_90 and newer only (arch_min 90) that fit the shape. */
static void test_sm90_adds_cluster_candidates(void **state) {
    (void)state;
    for (size_t t = 0; t < 3; t++) {
        tile_decision d80 = check_decision(dtypes[t], 2, 16384, 16384, 16384, 16, 80);
        tile_decision d90 = check_decision(dtypes[t], 2, 16384, 16384, 16384, 16, 90);
        assert_true(d90.eligible > d80.eligible);
        int clusters = 0, extra = 0;
        for (int32_t i = 0; i < tile_variant_count(); i++) {
            tile_variant_info v = get_info(i);
            if (v.dtype == dtypes[t] && is_sm90_variant(&v)) { /* clusters, bulk copies, wgmma */
                assert_true(v.arch_min >= 90);
                clusters += v.cluster > 1;
            }
            /* sm_90-only code carries the _sm90 suffix, no other */
            if (v.arch_min >= 90) {
                if (!is_sm90_variant(&v)) {
                    print_error("%s is sm_%d..%d only but not named _sm90\n", v.name,
                                v.arch_min, v.arch_max);
                    fail();
                }
                if (is_wgmma_variant(&v)) {
                    assert_int_equal(v.cluster, 1);
                    assert_int_equal(v.arch_min, 90);
                    assert_int_equal(v.arch_max, 90);
                }
            }
            /* the softmax candidates sm_90 has and sm_80 lacks */
            if (!strcmp(v.op, "softmax") && v.dtype == dtypes[t] && v.arch_min > 80 &&
                arch_holds(&v, 90) &&
                (!v.max_cols || v.max_cols >= 16384) && 16 % v.align_bytes == 0 &&
                v.smem_bytes <= tile_arch_smem_limit(90)) {
                assert_int_equal(v.arch_min, 90);
                assert_true(is_sm90_variant(&v));
                extra++;
            }
        }
        assert_true(clusters > 0);
        assert_true(extra > 0);
        assert_int_equal(d90.eligible - d80.eligible, extra);
    }
}

/* Rows past the grid's 2^31 - 1 blocks for a variant of short row blocks: dispatch passes such
 * variants over (a persistent variant or taller blocks take the call), as the launch would
 * refuse them; explain named one the call then refused (a review found bf16 2^35 x 64). */
static void test_row_grid_limit(void **state) {
    (void)state;
    const int64_t rows = (int64_t)1 << 35;
    for (size_t t = 0; t < 3; t++)
        for (int norm = 0; norm < 2; norm++) {
            tile_decision d = new_decision();
            const tile_status s =
                norm ? tile_norm_explain(dtypes[t], rows, 64, 64, 64, 256, 90, &d)
                     : tile_softmax_explain(dtypes[t], rows, 64, 64, 64, 256, 90, &d);
            assert_int_equal(s, TILE_STATUS_SUCCESS);
            const tile_variant *v = &tile_registry[d.variant];
            assert_true(v->persistent || tile_row_programs(v, rows, 64) * v->cluster <= INT32_MAX);
        }
    /* forced, a variant of 16-row blocks is refused before the device, with the figures */
    int32_t r16 = -1;
    for (int32_t i = 0; i < tile_registry_count && r16 < 0; i++)
        if (!strcmp(tile_registry[i].name, "softmax_bf16_r16_n64_w4_v8")) r16 = i;
    assert_true(r16 >= 0);
    const tile_problem p = {.op = "softmax", .dtype = TILE_DTYPE_BF16, .rows = rows, .cols = 64,
                            .align = 16, .arch = 90, .smem_limit = tile_arch_smem_limit(90)};
    const char *why = NULL;
    assert_false(tile_variant_eligible(&tile_registry[r16], &p, &why));
    assert_string_equal(why, "grid");
    assert_int_equal(tile_check_variant("test", r16, &p), TILE_STATUS_NOT_SUPPORTED);
    assert_non_null(strstr(tile_last_error(), "past the grid limit"));
    /* 2^40 rows no sm_80 norm variant launches, aligned or not: NOT_SUPPORTED whatever the
     * alignment (a misaligned call answered MISALIGNED, as if aligning would let it run) */
    for (int32_t align = 2; align <= 16; align *= 8) {
        tile_decision d = new_decision();
        assert_int_equal(tile_norm_explain(TILE_DTYPE_F16, (int64_t)1 << 40, 64, 64, 64, align, 80,
                                           &d),
                         TILE_STATUS_NOT_SUPPORTED);
        assert_non_null(strstr(tile_last_error(), "variant covers"));
    }
    /* (where aligning would let a variant run, MISALIGNED: test_pointer_alignment) */
}

static void test_old_arch_mismatch(void **state) {
    (void)state;
    const int32_t old[] = {70, 75, 10, 79};
    for (size_t t = 0; t < 3; t++)
        for (size_t i = 0; i < sizeof old / sizeof *old; i++) {
            tile_decision d = new_decision(), copy = d;
            assert_int_equal(tile_softmax_explain(dtypes[t], 4, 1000, 1000, 1000, 16, old[i], &d),
                             TILE_STATUS_ARCH_MISMATCH);
            /* on failure the decision is not written */
            assert_int_equal(memcmp(&d, &copy, sizeof d), 0);
            char sm[16];
            snprintf(sm, sizeof sm, "sm_%d", old[i]);
            assert_non_null(strstr(tile_last_error(), sm));
        }
    /* arch below 10 is not 10*major+minor */
    tile_decision d = new_decision();
    assert_int_equal(tile_softmax_explain(TILE_DTYPE_F16, 4, 1000, 1000, 1000, 16, 9, &d),
                     TILE_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(tile_last_error(), "arch"));
    assert_int_equal(tile_softmax_explain(TILE_DTYPE_F16, 4, 1000, 1000, 1000, 16, -90, &d),
                     TILE_STATUS_INVALID_ARGUMENT);
}

/* ---------------------------------------------------------------- alignment */

static void test_pointer_alignment(void **state) {
    (void)state;
    const int32_t archs[] = {80, 90};
    for (size_t a = 0; a < 2; a++)
        for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
            const shape *sh = &shapes[s];
            /* 2-byte aligned pointers: f16 and bf16 take the scalar variants */
            for (int t = 1; t < 3; t++) {
                tile_decision d = check_decision(dtypes[t], sh->rows, sh->cols, sh->cols,
                                                 sh->cols, 2, archs[a]);
                assert_int_equal(get_info(d.variant).align_bytes, 2);
                d = check_decision(dtypes[t], sh->rows, sh->cols, sh->cols, sh->cols, 4,
                                   archs[a]);
                assert_true(get_info(d.variant).align_bytes <= 4);
                d = check_decision(dtypes[t], sh->rows, sh->cols, sh->cols, sh->cols, 8,
                                   archs[a]);
                assert_true(get_info(d.variant).align_bytes <= 8);
            }
            tile_decision d = check_decision(TILE_DTYPE_F32, sh->rows, sh->cols, sh->cols,
                                             sh->cols, 4, archs[a]);
            assert_int_equal(get_info(d.variant).align_bytes, 4);
            /* f32 needs at least 4-byte pointers */
            for (int32_t pa = 1; pa <= 2; pa++) {
                tile_decision m = new_decision();
                assert_int_equal(tile_softmax_explain(TILE_DTYPE_F32, sh->rows, sh->cols,
                                                      sh->cols, sh->cols, pa, archs[a], &m),
                                 TILE_STATUS_MISALIGNED);
                assert_true(strlen(tile_last_error()) > 0);
            }
            /* f16 needs at least 2-byte pointers */
            tile_decision m = new_decision();
            assert_int_equal(tile_softmax_explain(TILE_DTYPE_F16, sh->rows, sh->cols, sh->cols,
                                                  sh->cols, 1, archs[a], &m),
                             TILE_STATUS_MISALIGNED);
            /* huge alignments are capped, not rejected */
            check_decision(dtypes[s % 3], sh->rows, sh->cols, sh->cols, sh->cols, 1 << 30,
                           archs[a]);
        }
}

static void test_odd_leading_dimension(void **state) {
    (void)state;
    const int32_t archs[] = {80, 90};
    const int64_t rows[] = {2, 97, 1823};
    for (size_t a = 0; a < 2; a++)
        for (size_t r = 0; r < 3; r++) {
            /* bf16/f16 with ld 1001: strides are 2-byte aligned only */
            for (int t = 1; t < 3; t++) {
                tile_decision d = check_decision(dtypes[t], rows[r], 1000, 1001, 1001, 16, archs[a]);
                assert_int_equal(2 % get_info(d.variant).align_bytes, 0);
                /* one odd stride is enough */
                d = check_decision(dtypes[t], rows[r], 1000, 1000, 1001, 16, archs[a]);
                assert_int_equal(2 % get_info(d.variant).align_bytes, 0);
                d = check_decision(dtypes[t], rows[r], 1000, 1001, 1000, 16, archs[a]);
                assert_int_equal(2 % get_info(d.variant).align_bytes, 0);
                /* ld 1004: 8-byte strides */
                d = check_decision(dtypes[t], rows[r], 1000, 1004, 1004, 16, archs[a]);
                assert_int_equal(8 % get_info(d.variant).align_bytes, 0);
                /* a wide odd row still finds a (loop) variant */
                d = check_decision(dtypes[t], rows[r], 300001, 300001, 300003, 16, archs[a]);
                assert_int_equal(2 % get_info(d.variant).align_bytes, 0);
            }
            tile_decision d = check_decision(TILE_DTYPE_F32, rows[r], 1000, 1001, 1001, 16, archs[a]);
            assert_int_equal(get_info(d.variant).align_bytes, 4);
        }
}

/* A single row has no stride: ld does not change the decision. */
static void test_single_row_ignores_stride(void **state) {
    (void)state;
    const int32_t archs[] = {80, 90};
    const int64_t widths[] = {1, 17, 781, 1000, 4096, 70001};
    for (size_t a = 0; a < 2; a++)
        for (int t = 0; t < 3; t++)
            for (size_t w = 0; w < sizeof widths / sizeof *widths; w++) {
                const int64_t c = widths[w];
                tile_decision even = check_decision(dtypes[t], 1, c, c + 64, c + 64, 16, archs[a]);
                tile_decision odd = check_decision(dtypes[t], 1, c, c + 1, c + 3, 16, archs[a]);
                assert_int_equal(odd.variant, even.variant);
                assert_int_equal(odd.eligible, even.eligible);
                assert_int_equal(odd.rule, even.rule);
                /* while two rows with the odd stride lose the 16-byte variants */
                if (t > 0) {
                    tile_decision two = check_decision(dtypes[t], 2, c, c + 1, c + 3, 16, archs[a]);
                    assert_int_equal(get_info(two.variant).align_bytes, 2);
                }
            }
}

/* ---------------------------------------------------------------- determinism and ABI */

static void test_explain_is_deterministic(void **state) {
    (void)state;
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        tile_decision a = check_decision(TILE_DTYPE_BF16, shapes[s].rows, shapes[s].cols,
                                         shapes[s].cols, shapes[s].cols, 16, 90);
        tile_decision b = check_decision(TILE_DTYPE_BF16, shapes[s].rows, shapes[s].cols,
                                         shapes[s].cols, shapes[s].cols, 16, 90);
        assert_int_equal(a.variant, b.variant);
        assert_int_equal(a.rule, b.rule);
        assert_int_equal(a.eligible, b.eligible);
        assert_string_equal(a.reason, b.reason);
    }
}

/* A caller built against a newer header passes a larger struct: accepted. */
static void test_decision_struct_size(void **state) {
    (void)state;
    union {
        tile_decision d;
        unsigned char bytes[sizeof(tile_decision) + 64];
    } big;
    memset(&big, 0, sizeof big);
    big.d.struct_size = sizeof big;
    assert_int_equal(tile_softmax_explain(TILE_DTYPE_F32, 8, 100, 100, 100, 16, 80, &big.d),
                     TILE_STATUS_SUCCESS);
    assert_true(big.d.variant >= 0);
    for (size_t i = sizeof(tile_decision); i < sizeof big; i++) assert_int_equal(big.bytes[i], 0);

    tile_decision small = new_decision();
    small.struct_size = sizeof small - 1;
    assert_int_equal(tile_softmax_explain(TILE_DTYPE_F32, 8, 100, 100, 100, 16, 80, &small),
                     TILE_STATUS_INVALID_ARGUMENT);
    assert_non_null(strstr(tile_last_error(), "struct_size"));
}

/* ---------------------------------------------------------------- the registry */

static void test_registry(void **state) {
    (void)state;
    const int32_t n = tile_variant_count();
    assert_true(n > 0);
    assert_int_equal(n, tile_registry_count);
    int per_dtype[3] = {0, 0, 0};
    for (int32_t i = 0; i < n; i++) {
        tile_variant_info v = get_info(i);
        assert_string_equal(tile_last_error(), "");
        assert_non_null(v.name);
        assert_non_null(v.op);
        assert_non_null(v.params);
        assert_in_range(v.dtype, 0, TILE_DTYPE_COUNT_ - 1);
        per_dtype[v.dtype]++;
        char prefix[64];
        snprintf(prefix, sizeof prefix, "%s_%s_", v.op, tile_dtype_string(v.dtype));
        if (strncmp(v.name, prefix, strlen(prefix))) {
            print_error("variant %d: %s does not start with %s\n", i, v.name, prefix);
            fail();
        }
        /* a C identifier: it is the kernel's symbol */
        for (const char *c = v.name; *c; c++)
            assert_true((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
                        (*c >= '0' && *c <= '9') || *c == '_');
        assert_int_equal(tile_variant_find(v.name), i);
        for (int32_t j = 0; j < i; j++) {
            tile_variant_info w = get_info(j);
            if (!strcmp(v.name, w.name)) {
                print_error("variants %d and %d are both %s\n", j, i, v.name);
                fail();
            }
        }
        assert_true(strlen(v.params) > 0);
        assert_true(v.threads >= 32 && v.threads <= 1024 && v.threads % 32 == 0);
        assert_true(v.cluster == 1 || v.cluster == 2 || v.cluster == 4 || v.cluster == 8);
        assert_true(v.smem_bytes >= 0);
        assert_true(v.max_cols >= 0);
        /* align: a power of two, at least the element, at most a 16-byte vector */
        assert_true(v.align_bytes >= (int32_t)elem_size(v.dtype) && v.align_bytes <= 16);
        assert_int_equal(v.align_bytes & (v.align_bytes - 1), 0);
        assert_true(v.arch_min >= 80);
        assert_true(v.arch_max == 0 || v.arch_max >= v.arch_min);
        if (v.cluster > 1) assert_true(v.arch_min >= 90);
        /* the `_sm90` suffix marks exactly the sm_90-only variants (clusters, bulk copies) */
        const size_t len = strlen(v.name);
        const int sm90_name = len > 5 && !strcmp(v.name + len - 5, "_sm90");
        if (sm90_name != (v.arch_min >= 90)) {
            print_error("%s: arch sm_%d..%d but %s the _sm90 suffix\n", v.name, v.arch_min,
                        v.arch_max, sm90_name ? "has" : "lacks");
            fail();
        }
        /* the internal table says the same */
        const tile_variant *r = &tile_registry[i];
        assert_string_equal(r->name, v.name);
        assert_int_equal(r->threads, v.threads);
        assert_int_equal(r->max_cols, v.max_cols);
        assert_int_equal(r->align_bytes, v.align_bytes);
        assert_true(r->rows_per_program >= 1);
        assert_int_equal(r->rows_per_program > 1 ? v.cluster : 1, 1);
        /* every variant is eligible for some problem: its own width, at its arch */
        tile_problem p = {.op = v.op, .dtype = v.dtype, .rows = 1,
                          .cols = v.max_cols ? v.max_cols : 12345, .align = v.align_bytes,
                          .arch = v.arch_min, .smem_limit = tile_arch_smem_limit(v.arch_min),
                          .pointwise = r->column_tile > 0}; /* norm-less calls: theirs */
        assert_true(tile_variant_eligible(r, &p, NULL));
    }
    for (int t = 0; t < 3; t++) assert_true(per_dtype[t] > 0);
    assert_int_equal(tile_variant_find("no_such_variant"), -1);
    assert_int_equal(tile_variant_find(""), -1);
    assert_int_equal(tile_variant_find(NULL), -1);
}

/* sm_90-only variants (clusters, bulk copies, warpgroup products) may only be eligible where
 * the fatbinary has sm_90 SASS: the compute_80 PTX of their kernels traps. */
static void test_sm90_variants_have_code(void **state) {
    (void)state;
    for (int32_t i = 0; i < tile_variant_count(); i++) {
        tile_variant_info v = get_info(i);
        if (!is_sm90_variant(&v)) continue;
        for (int32_t arch = 80; arch <= 130; arch++) {
            if (!arch_holds(&v, arch)) continue;
            if (!has_sass(arch)) {
                print_error("%s (sm_%d..%d) is eligible on sm_%d, which runs the PTX (no "
                            "clusters, no bulk copies)\n",
                            v.name, v.arch_min, v.arch_max, arch);
                fail();
            }
        }
    }
}

static tile_flash_attention_args attention_problem(tile_dtype dt, int32_t head_dim);
/* Whether `taken` is `entry`'s twin of 160-key tiles that a full call of 2048 to 8191 keys
 * takes in its place (perf-notes A65, A65b): the same block and stages, from 128 or 144 keys. */
static int key_tile_twin(const tile_variant *entry, const tile_variant *taken, const char *reason) {
    const int64_t entry_keys = tile_variant_param(entry, "BLOCK_N");
    return strstr(reason, "its twin of 160-key tiles") && tile_variant_param(taken, "BLOCK_N") == 160 &&
           (entry_keys == 128 || entry_keys == 144) && taken->dtype == entry->dtype &&
           tile_variant_param(taken, "HEAD_DIM") == tile_variant_param(entry, "HEAD_DIM") &&
           tile_variant_param(taken, "BLOCK_M") == tile_variant_param(entry, "BLOCK_M") &&
           tile_variant_param(taken, "STAGES") == tile_variant_param(entry, "STAGES");
}
static tile_grouped_matmul_args grouped_matmul_problem(tile_dtype dt, int32_t groups,
                                                       int64_t rows_per_group, int64_t n,
                                                       int64_t k);

/* Explain's decision for a problem whose dispatch problem is exactly rows x cols: rows x cols
 * for the row ops; for attention the tune grid's shape of `rows` query rows (else one sequence
 * of `rows` queries and keys with one head) of head_dim `cols`, with a workspace; for grouped
 * matmul one group of `rows` rows, n = cols, k = 64. */
static tile_decision decision_at(const char *op, tile_dtype dt, int64_t rows, int64_t cols,
                                 int32_t arch) {
    if (strcmp(op, "attention") && strcmp(op, "grouped_matmul"))
        return check_decision_of(op, dt, rows, cols, cols, cols, 16, arch);
    tile_decision d = new_decision();
    tile_status s;
    if (!strcmp(op, "attention")) {
        tile_flash_attention_args a = attention_problem(dt, (int32_t)cols);
        int64_t shape[4] = {1, 1, 1, rows}; /* {batch, heads_q, heads_kv, seqlen} */
        const int64_t *tuned = attention_tune_shape(rows);
        if (tuned) memcpy(shape, tuned, sizeof shape); /* the shape tuned, as tuned */
        a.batch = (int32_t)shape[0], a.heads_q = (int32_t)shape[1], a.heads_kv = (int32_t)shape[2];
        a.seqlen_q = a.seqlen_k = shape[3];
        a.q_seq_stride = a.o_seq_stride = shape[1] * cols;
        a.k_seq_stride = a.v_seq_stride = shape[2] * cols;
        a.q_batch_stride = a.o_batch_stride = shape[3] * a.q_seq_stride;
        a.k_batch_stride = a.v_batch_stride = shape[3] * a.k_seq_stride;
        a.workspace = a.o; /* (never read by explain) tune passes one */
        s = tile_flash_attention_explain(&a, arch, &d);
    } else {
        const tile_grouped_matmul_args g = grouped_matmul_problem(dt, 1, rows, cols, 64);
        s = tile_grouped_matmul_explain(&g, arch, &d);
    }
    if (s != TILE_STATUS_SUCCESS)
        print_error("explain %s %s %lldx%lld sm_%d: %s: %s\n", op, tile_dtype_string(dt),
                    (long long)rows, (long long)cols, arch, tile_status_string(s),
                    tile_last_error());
    assert_int_equal(s, TILE_STATUS_SUCCESS);
    assert_int_equal(d.arch, arch);
    return d;
}

/* Explain's decision for the call `fusedops tune` times a dropout variant's norm entry on (the
 * fused dropout + LayerNorm) or a residual_dropout entry on (the norm-less call): residual,
 * bias, p = 0.1 and s, on 16-byte aligned stand-in pointers. */
static tile_decision dropout_decision_at(const char *table_op, tile_dtype dt, int64_t rows,
                                         int64_t cols, int32_t arch) {
    static _Alignas(256) unsigned char buf[6][256];
    const int norm = strcmp(table_op, "residual_dropout") != 0;
    tile_add_norm_args a = {.struct_size = sizeof a, .dtype = dt, .rows = rows, .cols = cols,
                            .norm = norm ? TILE_NORM_LAYER : TILE_NORM_NONE, .x = buf[0],
                            .ld_x = cols, .residual = buf[1], .ld_residual = cols,
                            .bias = buf[2], .s = buf[3], .ld_s = cols, .p = 0.1f, .eps = 1e-5f};
    if (norm) a.y = buf[4], a.ld_y = cols, a.weight = a.norm_bias = buf[5];
    tile_decision d = new_decision();
    const tile_status s = tile_add_norm_explain(&a, arch, &d);
    if (s != TILE_STATUS_SUCCESS)
        print_error("explain %s %s %lldx%lld sm_%d: %s\n", table_op, tile_dtype_string(dt),
                    (long long)rows, (long long)cols, arch, tile_last_error());
    assert_int_equal(s, TILE_STATUS_SUCCESS);
    return d;
}

/* Tuned entries win their own bucket, for every op a table has (softmax, norm with and without
 * dropout, residual_dropout, attention, grouped_matmul). */
static void test_tuned_table(void **state) {
    (void)state;
    int dropout_entries = 0, tagged_entries = 0;
    for (int32_t i = 0; i < tile_tuned_count; i++) {
        const tile_tuned_entry *e = &tile_tuned_table[i];
        assert_in_range(e->variant, 0, tile_registry_count - 1);
        const tile_variant *v = &tile_registry[e->variant];
        const tuning_table_op *table_op = tuning_table_op_find(e->op);
        assert_string_equal(v->op, tuning_variant_op(e->op));
        assert_int_equal(v->dtype, e->dtype);
        const int64_t rows = 1LL << e->rows_log2, cols = tuning_cols_of_step(e->cols_step);
        tile_problem p = {.op = v->op, .dtype = e->dtype, .rows = rows, .cols = cols, .align = 16,
                          .arch = e->arch, .smem_limit = tile_arch_smem_limit(e->arch),
                          .features = v->features, .pointwise = table_op != NULL};
        if (!tile_variant_eligible(v, &p, NULL)) continue;
        /* dropout variants (and every residual_dropout entry) through their own call; lines
         * kept to one memory bandwidth (sm_90@GBPS) on a device of it, which explain for a
         * named arch does not know: dispatch's problem, as the call would make it */
        const int dropout = v->features || table_op;
        dropout_entries += dropout;
        tile_decision d;
        if (e->bandwidth_gbs) {
            tile_problem q = p;
            q.table_op = table_op ? e->op : NULL;
            q.optional_inputs = dropout;
            q.mem_bandwidth_gbs = e->bandwidth_gbs;
            d = new_decision();
            assert_int_equal(tile_dispatch(&q, &d), TILE_STATUS_SUCCESS);
            tagged_entries++;
        } else {
            d = dropout ? dropout_decision_at(e->op, e->dtype, rows, cols, e->arch)
                        : decision_at(e->op, e->dtype, rows, cols, e->arch);
        }
        assert_int_equal(d.rule, TILE_RULE_TUNED);
        int listed = 0;
        for (int32_t j = 0; j < tile_tuned_count; j++) {
            const tile_tuned_entry *f = &tile_tuned_table[j];
            if (f->arch == e->arch && f->bandwidth_gbs == e->bandwidth_gbs &&
                f->dtype == e->dtype && !strcmp(f->op, e->op) &&
                f->rows_log2 == e->rows_log2 && f->cols_step == e->cols_step &&
                (f->variant == d.variant || tile_registry[f->variant].lean_twin == d.variant ||
                 key_tile_twin(&tile_registry[f->variant], &tile_registry[d.variant], d.reason)))
                listed = 1; /* the entry, its lean twin, or its key tile's twin in its place */
        }
        if (!listed)
            print_error("%s %s %lldx%lld: explain took %s\n", e->op, tile_dtype_string(e->dtype),
                        (long long)rows, (long long)cols, tile_registry[d.variant].name);
        assert_true(listed);
    }
    assert_true(dropout_entries > 0);
    print_message("tuned entries checked: %d with dropout, %d kept to a memory bandwidth\n",
                  dropout_entries, tagged_entries);
}

/* ---------------------------------------------------------------- internal helpers */

static void test_internal_helpers(void **state) {
    (void)state;
    /* column buckets: powers of two and 3 x powers of two, in half-power steps */
    static const struct { int64_t cols; int32_t step; int64_t bucket; } buckets[] = {
        {1, 0, 1},      {2, 2, 2},      {3, 3, 3},       {4, 4, 4},       {5, 5, 6},
        {7, 6, 8},      {700, 19, 768}, {768, 19, 768},  {769, 20, 1024}, {781, 20, 1024},
        {9000, 27, 12288}, {50000, 32, 65536}, {1LL << 40, 80, 1LL << 40}};
    for (size_t i = 0; i < sizeof buckets / sizeof *buckets; i++) {
        assert_int_equal(tuning_cols_step_up(buckets[i].cols), buckets[i].step);
        assert_int_equal(tuning_cols_of_step(buckets[i].step), buckets[i].bucket);
        assert_int_equal(tuning_cols_step_exact(buckets[i].bucket), buckets[i].step);
    }
    assert_int_equal(tuning_cols_step_exact(7), -1);
    assert_int_equal(tuning_cols_step_exact(9), -1);
    assert_int_equal(tuning_cols_step_exact(0), -1);
    assert_int_equal(tile_alignment_of(0), 256);
    assert_int_equal(tile_alignment_of(1), 1);
    assert_int_equal(tile_alignment_of(6), 2);
    assert_int_equal(tile_alignment_of(48), 16);
    assert_int_equal(tile_alignment_of(1024), 256);
    assert_int_equal(tile_alignment_of(UINT64_MAX), 1);
    assert_int_equal(tile_dtype_size(TILE_DTYPE_F32), 4);
    assert_int_equal(tile_dtype_size(TILE_DTYPE_F16), 2);
    assert_int_equal(tile_dtype_size(TILE_DTYPE_BF16), 2);
    assert_int_equal(tile_dtype_size((tile_dtype)7), 0);

    /* tile_variant_eligible names the predicate that failed */
    int32_t idx = -1;
    for (int32_t i = 0; i < tile_registry_count && idx < 0; i++)
        if (!strcmp(tile_registry[i].op, "softmax") && tile_registry[i].max_cols > 0 &&
            tile_registry[i].align_bytes == 16 &&
            tile_registry[i].arch_min == 80 && tile_registry[i].dtype == TILE_DTYPE_F16)
            idx = i;
    assert_true(idx >= 0);
    const tile_variant *v = &tile_registry[idx];
    const char *why;
    tile_problem p = {.op = "softmax", .dtype = TILE_DTYPE_F16, .rows = 3, .cols = v->max_cols,
                      .align = 16, .arch = 80, .smem_limit = tile_arch_smem_limit(80)};
    assert_true(tile_variant_eligible(v, &p, &why));
    assert_null(why);
    p.dtype = TILE_DTYPE_BF16;
    assert_false(tile_variant_eligible(v, &p, &why));
    assert_string_equal(why, "another op or dtype");
    p.dtype = TILE_DTYPE_F16;
    p.op = "layernorm";
    assert_false(tile_variant_eligible(v, &p, &why));
    assert_string_equal(why, "another op or dtype");
    p.op = "softmax";
    p.arch = 75;
    assert_false(tile_variant_eligible(v, &p, &why));
    assert_string_equal(why, "arch");
    p.arch = 80;
    p.cols = v->max_cols + 1;
    assert_false(tile_variant_eligible(v, &p, &why));
    assert_string_equal(why, "cols");
    p.cols = v->max_cols;
    p.align = 8;
    assert_false(tile_variant_eligible(v, &p, &why));
    assert_string_equal(why, "alignment");
    p.align = 32;
    assert_true(tile_variant_eligible(v, &p, NULL));
}

/* ---------------------------------------------------------------- attention */

/* BSHD attention arguments for explain: pointers 256-byte aligned (never dereferenced),
 * 2 x 1024 tokens, 16 query heads over 4 key/value heads. */
static tile_flash_attention_args attention_problem(tile_dtype dt, int32_t head_dim) {
    static _Alignas(256) unsigned char buf[1024];
    tile_flash_attention_args a = {.struct_size = sizeof a, .dtype = dt, .batch = 2,
                                   .heads_q = 16, .heads_kv = 4, .head_dim = head_dim,
                                   .seqlen_q = 1024, .seqlen_k = 1024};
    a.q = a.k = a.v = buf;
    a.o = buf + 256;
    a.q_head_stride = a.k_head_stride = a.v_head_stride = a.o_head_stride = head_dim;
    a.q_seq_stride = a.o_seq_stride = 16 * (int64_t)head_dim;
    a.k_seq_stride = a.v_seq_stride = 4 * (int64_t)head_dim;
    a.q_batch_stride = a.o_batch_stride = 1024 * a.q_seq_stride;
    a.k_batch_stride = a.v_batch_stride = 1024 * a.k_seq_stride;
    return a;
}

/* The variant the heuristic picks for a call (dense, 16-byte aligned) on arch, given explain's
 * decision d for it: d's own where the heuristic made it (and then the same as best_variant
 * over the registry), else best_variant's (a tuned entry decided the call: the tests of the
 * heuristic's choices hold whatever sm_90's table says). */
static int32_t attention_heuristic_pick(const tile_flash_attention_args *a, int32_t arch,
                                        const tile_decision *d) {
    const tile_problem p = {.op = "attention", .dtype = a->dtype,
                            .rows = (int64_t)a->batch * a->heads_q * a->seqlen_q,
                            .cols = a->head_dim, .align = 16, .arch = arch,
                            .smem_limit = tile_arch_smem_limit(arch)};
    const int32_t pick = best_variant(tile_registry, tile_registry_count, &p);
    if (d->rule == TILE_RULE_HEURISTIC) assert_int_equal(pick, d->variant);
    return pick;
}

/* Which head width the heuristic picks (where sm_90's tuned table decides the call instead,
 * explain's pick is only checked to be eligible). Before and after sm_90 (and on sm_90 for heads over 128) only the
 * mma.sync family runs, and the narrowest compiled HEAD_DIM that holds the head wins: a wider
 * one pays its zero padding (cost x HEAD_DIM / head_dim), which no other term of
 * src/dispatch.c's tile_heuristic_cost makes up for; within the width, the one variant whose warps
 * own 32 query rows (m128 over 4 warps: cost x threads / (2 * BLOCK_M) = 0.5, against 1 for the
 * 16-row warps) wins, which at these 32768 query rows (256 programs of 128 rows against 2 * 132
 * SMs: x 1.03) is 2x ahead of the rest. Heads over 128 have one variant, d256_m64_n32_w4.
 * On sm_90 the wgmma family (HEAD_DIM 64 and 128, cost x 0.25, 16-row warps: x 1) joins for
 * heads up to 128, and its narrowest width that holds the head wins: against mma's narrowest
 * fit its padding costs at most 2x more (heads up to 32: d64 against d32; 72 to 96: 128 against
 * 96 is 1.33x), which its 0.25 against mma's best 0.5 cancels or beats. Where the two cancel
 * (heads up to 32) the small terms decide: d32_m128_n64_w4's 20 KiB of shared memory is charged
 * 1 + 2048/20480 = 1.10 and its 256 programs 1.03, the 64-row wgmma tiles (512 programs) about
 * 1.03 (head 8: 2.08 against 2.30). The wgmma pick's block shape is left to the small terms.
 * Heads over 128 on sm_90 go to the warp-specialized d256 family (`ws256`: x 1.5 for its
 * 128-row blocks, x 0.25 x 0.66 for warpgroup products and tensor maps, against mma d256's x 2
 * for its 64-row ones), not to mma (perf-notes A41: 2.4-3.1x faster).
 * sm_86 and sm_89 (99 KiB of shared memory a block) hold every mma variant. */
static void test_attention_head_dims(void **state) {
    (void)state;
    static const struct {
        int32_t head_dim, mma_dim, wgmma_dim; /* wgmma_dim: the sm_90 warpgroup variants' */
    } cases[] = {{8, 32, 64},    {32, 32, 64},   {40, 64, 64},  {64, 64, 64},
                 {72, 96, 128},  {96, 96, 128},  {104, 128, 128}, {128, 128, 128},
                 {136, 256, 256}, {200, 256, 256}, {256, 256, 256}};
    const int32_t archs[] = {80, 86, 89, 90, 100};
    const tile_dtype dts[] = {TILE_DTYPE_F16, TILE_DTYPE_BF16};
    for (size_t a = 0; a < sizeof archs / sizeof *archs; a++)
        for (size_t t = 0; t < 2; t++)
            for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
                const int32_t arch = archs[a], head_dim = cases[c].head_dim;
                const tile_flash_attention_args args = attention_problem(dts[t], head_dim);
                tile_decision d = new_decision();
                tile_status s = tile_flash_attention_explain(&args, arch, &d);
                if (s != TILE_STATUS_SUCCESS)
                    print_error("head_dim %d sm_%d: %s\n", head_dim, arch, tile_last_error());
                assert_int_equal(s, TILE_STATUS_SUCCESS);
                assert_string_equal(tile_last_error(), "");
                assert_int_equal(d.arch, arch);
                assert_int_equal(d.eligible,
                                 count_eligible_of("attention", dts[t], head_dim, 16, arch, 0));
                tile_variant_info v = get_info(d.variant);
                assert_string_equal(v.op, "attention");
                assert_int_equal(v.dtype, dts[t]);
                /* eligible: arch range, shared memory, head width */
                assert_true(arch_holds(&v, arch));
                assert_true(v.smem_bytes <= tile_arch_smem_limit(arch));
                assert_true(v.max_cols >= head_dim);
                /* the heuristic's choice, also where a tuned entry decides the call */
                v = get_info(attention_heuristic_pick(&args, arch, &d));
                const int wgmma = arch == 90 && cases[c].wgmma_dim > 0;
                const int32_t want_dim = wgmma ? cases[c].wgmma_dim : cases[c].mma_dim;
                char want[64];
                if (wgmma)
                    snprintf(want, sizeof want, "_d%d_", want_dim);
                else if (want_dim == 256)
                    snprintf(want, sizeof want, "_d256_m64_n32_w4");
                else
                    snprintf(want, sizeof want, "_d%d_m128_n64_w4", want_dim);
                const size_t n = strlen(v.name), wn = strlen(want);
                const int name_ok =
                    wgmma ? strstr(v.name, want) && is_wgmma_variant(&v) && v.arch_min == 90
                          : n > wn && !strcmp(v.name + n - wn, want) && !is_wgmma_variant(&v) &&
                                v.arch_min == 80;
                if (v.max_cols != want_dim || !name_ok) {
                    print_error("head_dim %d on sm_%d picked %s, want a%s variant ending %s\n",
                                head_dim, arch, v.name, wgmma ? " wgmma" : "n mma",
                                wgmma ? "in _wgmma_sm90" : want);
                    fail();
                }
            }
}

/* Before sm_80 nothing runs attention; misaligned strides leave nothing eligible. */
static void test_attention_mismatch(void **state) {
    (void)state;
    const int32_t old[] = {70, 75, 79};
    for (size_t i = 0; i < sizeof old / sizeof *old; i++) {
        const tile_flash_attention_args args = attention_problem(TILE_DTYPE_BF16, 64);
        tile_decision d = new_decision(), copy = d;
        assert_int_equal(tile_flash_attention_explain(&args, old[i], &d),
                         TILE_STATUS_ARCH_MISMATCH);
        assert_int_equal(memcmp(&d, &copy, sizeof d), 0);
        char sm[16];
        snprintf(sm, sizeof sm, "sm_%d", old[i]);
        assert_non_null(strstr(tile_last_error(), sm));
        assert_non_null(strstr(tile_last_error(), "attention"));
    }
    /* A decode call whose query heads fold (no tensor map then) and a norm with dropout (a
     * feature): variants refused for those first are still no old arch's, so the status stays
     * ARCH_MISMATCH, not NOT_SUPPORTED (a review found the fold's case answering the latter). */
    for (size_t i = 0; i < sizeof old / sizeof *old; i++) {
        tile_flash_attention_args folded = attention_problem(TILE_DTYPE_F16, 128);
        folded.heads_q = 8, folded.heads_kv = 1, folded.batch = 1, folded.causal = 1;
        folded.seqlen_q = 4, folded.seqlen_k = 4096;
        folded.q_seq_stride = folded.o_seq_stride = 8 * 128;
        folded.k_seq_stride = folded.v_seq_stride = 128;
        folded.q_batch_stride = folded.o_batch_stride = 4 * folded.q_seq_stride;
        folded.k_batch_stride = folded.v_batch_stride = 4096 * folded.k_seq_stride;
        tile_decision d = new_decision();
        assert_int_equal(tile_flash_attention_explain(&folded, 90, &d), TILE_STATUS_SUCCESS);
        assert_int_equal(tile_flash_attention_explain(&folded, old[i], &d),
                         TILE_STATUS_ARCH_MISMATCH);
        static _Alignas(256) unsigned char buf[4][256];
        const tile_add_norm_args dropout = {
            .struct_size = sizeof dropout, .dtype = TILE_DTYPE_BF16, .rows = 1024, .cols = 4096,
            .norm = TILE_NORM_NONE, .x = buf[0], .ld_x = 4096, .residual = buf[1],
            .ld_residual = 4096, .bias = buf[2], .s = buf[3], .ld_s = 4096, .p = 0.1f};
        d = new_decision();
        assert_int_equal(tile_add_norm_explain(&dropout, 90, &d), TILE_STATUS_SUCCESS);
        assert_int_equal(tile_add_norm_explain(&dropout, old[i], &d), TILE_STATUS_ARCH_MISMATCH);
    }
    tile_flash_attention_args args = attention_problem(TILE_DTYPE_F16, 64);
    args.k_seq_stride = 4 * 64 + 4; /* 8-byte aligned rows of k */
    tile_decision d = new_decision();
    assert_int_equal(tile_flash_attention_explain(&args, 90, &d), TILE_STATUS_MISALIGNED);
    assert_non_null(strstr(tile_last_error(), "k_seq_stride 260"));
}

/* Lean twins: each names a lean variant of its own op, dtype, width and program size;
 * dispatch takes the twin for a call it can run (rows of exactly its width, no bias, residual
 * or s) and keeps the general variant otherwise. */
static void test_lean_twins(void **state) {
    (void)state;
    int twins = 0;
    for (int32_t i = 0; i < tile_registry_count; i++) {
        const tile_variant *v = &tile_registry[i];
        if (v->lean) {
            assert_true(v->max_cols > 0);
            assert_int_equal(v->features, 0);
            assert_int_equal(v->lean_twin, -1);
            assert_non_null(strstr(v->params, "LEAN=1"));
        }
        if (v->lean_twin < 0) continue;
        assert_in_range(v->lean_twin, 0, tile_registry_count - 1);
        const tile_variant *t = &tile_registry[v->lean_twin];
        assert_true(t->lean && !v->lean);
        assert_int_equal(tile_variant_param(t, "BLOCK_N"), t->max_cols); /* one tile a row */
        assert_int_equal(t->cluster, 1);
        assert_string_equal(t->op, v->op);
        assert_int_equal(t->dtype, v->dtype);
        assert_int_equal(t->max_cols, v->max_cols);
        assert_int_equal(t->threads, v->threads);
        assert_int_equal(t->align_bytes, v->align_bytes);

        tile_problem p = {.op = v->op, .dtype = v->dtype, .rows = 1000, .cols = v->max_cols,
                          .align = 16, .arch = 90, .smem_limit = tile_arch_smem_limit(90)};
        const char *why = "unset";
        assert_true(tile_variant_eligible(t, &p, &why));
        p.optional_inputs = 1; /* a bias, residual or s */
        assert_false(tile_variant_eligible(t, &p, &why));
        assert_string_equal(why, "lean");
        p.optional_inputs = 0;
        p.cols = v->max_cols - 8; /* a narrower row */
        assert_false(tile_variant_eligible(t, &p, &why));
        assert_string_equal(why, "lean");
        twins++;
    }
    assert_true(twins > 0);

    /* bf16 LayerNorm of 8192 columns: the lean twin of whatever general variant decides, and
     * that general variant on 8000 columns or with a residual */
    tile_decision d = new_decision();
    assert_int_equal(tile_norm_explain(TILE_DTYPE_BF16, 8192, 8192, 8192, 8192, 16, 90, &d),
                     TILE_STATUS_SUCCESS);
    const tile_variant *lean = &tile_registry[d.variant];
    if (!lean->lean || !strstr(d.reason, "lean twin")) {
        print_error("8192x8192 chose %s: %s\n", lean->name, d.reason);
        fail();
    }
    tile_problem p = {.op = "norm", .dtype = TILE_DTYPE_BF16, .rows = 8192, .cols = 8192,
                      .align = 16, .arch = 90, .smem_limit = tile_arch_smem_limit(90),
                      .optional_inputs = 1};
    tile_decision with_residual = new_decision();
    assert_int_equal(tile_dispatch(&p, &with_residual), TILE_STATUS_SUCCESS);
    assert_int_equal(tile_registry[with_residual.variant].lean_twin, d.variant);
    assert_null(strstr(with_residual.reason, "lean twin"));
    tile_decision narrower = new_decision();
    assert_int_equal(tile_norm_explain(TILE_DTYPE_BF16, 8192, 8000, 8000, 8000, 16, 90, &narrower),
                     TILE_STATUS_SUCCESS);
    assert_false(tile_registry[narrower.variant].lean);
}

/* Pointwise variants (column_tile): norm-less calls of any width alone, rows x column tiles
 * of programs, and a norm call refused with its reason; explain of a norm-less call counts
 * them eligible, of a LayerNorm not. */
static void test_pointwise_variants(void **state) {
    (void)state;
    int pointwise = 0;
    for (int32_t i = 0; i < tile_registry_count; i++) {
        const tile_variant *v = &tile_registry[i];
        assert_int_equal(v->column_tile > 0, strstr(v->params, "POINTWISE=1") != NULL);
        if (!v->column_tile) {
            assert_int_equal(tile_row_programs(v, 1000, 70000),
                             (1000 + v->rows_per_program - 1) / v->rows_per_program);
            continue;
        }
        pointwise++;
        assert_int_equal(v->max_cols, 0);
        assert_int_equal(v->cluster, 1);
        assert_int_equal(tile_variant_param(v, "BLOCK_N"), v->column_tile);
        /* 1000 rows of 70000 columns: ceil(70000 / BLOCK_N) tiles a row block */
        assert_int_equal(tile_row_programs(v, 1000, 70000),
                         (1000 + v->rows_per_program - 1) / v->rows_per_program *
                             ((70000 + v->column_tile - 1) / v->column_tile));
        tile_problem p = {.op = v->op, .dtype = v->dtype, .rows = 1000, .cols = 70000,
                          .align = 16, .arch = 90, .smem_limit = tile_arch_smem_limit(90),
                          .features = v->features, .pointwise = 1};
        const char *why = "unset";
        assert_true(tile_variant_eligible(v, &p, &why));
        p.pointwise = 0; /* a norm */
        assert_false(tile_variant_eligible(v, &p, &why));
        assert_string_equal(why, "row statistics");
        assert_int_equal(tile_check_variant("test", i, &p), TILE_STATUS_NOT_SUPPORTED);
        assert_non_null(strstr(tile_last_error(), "norm-less calls"));
        p.pointwise = 1, p.rows = (int64_t)1 << 40; /* past the grid limit */
        assert_false(tile_variant_eligible(v, &p, &why));
        assert_string_equal(why, "grid");
    }
    assert_true(pointwise > 0);
    /* the same dropout call with and without a norm: the norm-less one has the bf16 dropout
     * pointwise variants eligible besides, and the norm's decision is never one */
    int32_t with_dropout = 0;
    for (int32_t i = 0; i < tile_registry_count; i++) {
        const tile_variant *v = &tile_registry[i];
        with_dropout += !strcmp(v->op, "norm") && v->dtype == TILE_DTYPE_BF16 &&
                        v->column_tile && (v->features & 1); /* dropout (norm_args.h) */
    }
    const tile_decision none = dropout_decision_at("residual_dropout", TILE_DTYPE_BF16, 1024,
                                                   65536, 90);
    const tile_decision norm = dropout_decision_at("norm", TILE_DTYPE_BF16, 1024, 65536, 90);
    assert_true(with_dropout > 0);
    assert_int_equal(none.eligible - norm.eligible, with_dropout);
    assert_int_equal(tile_registry[norm.variant].column_tile, 0);
}

/* A varlen call dispatches as the dense call of its maximum lengths does, tensor-map variants
 * included (their windows end at each sequence's end, perf-notes A35): where the dense call
 * picks one (a tuned entry at 32768 query rows on sm_90), the varlen call picks the same. */
static void test_attention_varlen_as_dense(void **state) {
    (void)state;
    static _Alignas(256) int32_t cu[3];
    for (int32_t head_dim = 64; head_dim <= 128; head_dim += 64) {
        tile_flash_attention_args a = attention_problem(TILE_DTYPE_BF16, head_dim);
        tile_decision dense = new_decision();
        assert_int_equal(tile_flash_attention_explain(&a, 90, &dense), TILE_STATUS_SUCCESS);
        a.cu_seqlens_q = a.cu_seqlens_k = cu;
        a.total_q = a.total_k = 2048;
        a.q_batch_stride = a.k_batch_stride = a.v_batch_stride = a.o_batch_stride = 0;
        tile_decision varlen = new_decision();
        assert_int_equal(tile_flash_attention_explain(&a, 90, &varlen), TILE_STATUS_SUCCESS);
        assert_int_equal(varlen.variant, dense.variant);
        /* the test means something only where the dense pick copies by tensor maps */
        assert_true(tile_variant_uses_tensor_maps(&tile_registry[dense.variant]));
    }
}

/* With a workspace, a causal varlen call at head dim 64 takes the line's variant that walks
 * blocks from the counter (the handing 128-row kernel) where the dense call of its maximum
 * lengths takes the 192-row one of a fixed walk: a ragged batch's blocks are device data
 * (perf-notes A35c). A full varlen call, or one without a workspace, is weighed as before. */
static void test_attention_varlen_with_workspace_walks_counter(void **state) {
    (void)state;
    static _Alignas(256) int32_t cu[33];
    static _Alignas(64) unsigned char workspace[TILE_FLASH_ATTENTION_WORKSPACE_BYTES];
    tile_flash_attention_args a = attention_problem(TILE_DTYPE_BF16, 64);
    a.batch = 32, a.seqlen_q = a.seqlen_k = 1024;
    a.q_batch_stride = a.o_batch_stride = 1024 * a.q_seq_stride;
    a.k_batch_stride = a.v_batch_stride = 1024 * a.k_seq_stride;
    a.workspace = workspace;
    a.causal = 1;
    tile_decision dense = new_decision();
    assert_int_equal(tile_flash_attention_explain(&a, 90, &dense), TILE_STATUS_SUCCESS);
    assert_int_equal(tile_variant_param(&tile_registry[dense.variant], "HANDED"), 0);
    assert_true(tile_variant_uses_tensor_maps(&tile_registry[dense.variant]));
    a.cu_seqlens_q = a.cu_seqlens_k = cu;
    a.total_q = a.total_k = 32 * 1024;
    a.q_batch_stride = a.k_batch_stride = a.v_batch_stride = a.o_batch_stride = 0;
    tile_decision varlen = new_decision();
    assert_int_equal(tile_flash_attention_explain(&a, 90, &varlen), TILE_STATUS_SUCCESS);
    assert_int_equal(tile_variant_param(&tile_registry[varlen.variant], "HANDED"), 1);
    assert_non_null(strstr(varlen.reason, "takes blocks from its counter"));
    a.causal = 0; /* full: weighed as the dense call of its maximum lengths */
    tile_decision full = new_decision();
    assert_int_equal(tile_flash_attention_explain(&a, 90, &full), TILE_STATUS_SUCCESS);
    assert_int_equal(tile_variant_param(&tile_registry[full.variant], "HANDED"), 0);
    a.causal = 1, a.workspace = NULL; /* the fixed walk: as the dense call */
    tile_decision fixed = new_decision();
    assert_int_equal(tile_flash_attention_explain(&a, 90, &fixed), TILE_STATUS_SUCCESS);
    assert_int_equal(fixed.variant, dense.variant);
}

/* From 8192 keys a head-128 call whose line names the 128-key `ws` tile takes its twin of
 * 144-key tiles (perf-notes A36); at 2048 keys a full call takes its twin of 160-key tiles
 * (A65; from a nearest line's 144-key pick too, A65b), a causal one and a varlen call
 * (lengths on the device) the line's pick, as does any call at head dim 64 (no twin).
 * 262144 query rows either way: one bucket. */
static void test_attention_long_keys_take_wider_key_tiles(void **state) {
    (void)state;
    static _Alignas(256) int32_t cu[2];
    const tile_dtype dtypes[] = {TILE_DTYPE_BF16, TILE_DTYPE_F16};
    for (size_t t = 0; t < sizeof dtypes / sizeof *dtypes; t++)
        for (int32_t head_dim = 64; head_dim <= 128; head_dim += 64) {
            tile_flash_attention_args a = attention_problem(dtypes[t], head_dim);
            a.batch = 8, a.heads_kv = 16, a.seqlen_q = a.seqlen_k = 2048;
            a.k_seq_stride = a.v_seq_stride = 16 * (int64_t)head_dim;
            a.q_batch_stride = a.o_batch_stride = 2048 * a.q_seq_stride;
            a.k_batch_stride = a.v_batch_stride = 2048 * a.k_seq_stride;
            tile_decision short_keys = new_decision();
            assert_int_equal(tile_flash_attention_explain(&a, 90, &short_keys), TILE_STATUS_SUCCESS);
            assert_null(strstr(short_keys.reason, "144-key"));
            a.causal = 1;
            tile_decision short_causal = new_decision();
            assert_int_equal(tile_flash_attention_explain(&a, 90, &short_causal), TILE_STATUS_SUCCESS);
            a.causal = 0;
            assert_null(strstr(short_causal.reason, "-key tiles"));
            if (head_dim == 128) {
                /* the line at 262144 x 128 names the 128-key tile (autotune_results/sm_90.tsv) */
                assert_int_equal(tile_variant_param(&tile_registry[short_causal.variant], "BLOCK_N"), 128);
                assert_int_equal(tile_variant_param(&tile_registry[short_keys.variant], "BLOCK_N"), 160);
                assert_non_null(strstr(short_keys.reason, "its twin of 160-key tiles (full, 2048 to 8191 keys)"));
            } else {
                assert_null(strstr(short_keys.reason, "-key tiles"));
            }
            a.batch = 1, a.seqlen_q = a.seqlen_k = 16384;
            a.q_batch_stride = a.o_batch_stride = 16384 * a.q_seq_stride;
            a.k_batch_stride = a.v_batch_stride = 16384 * a.k_seq_stride;
            tile_decision long_keys = new_decision();
            assert_int_equal(tile_flash_attention_explain(&a, 90, &long_keys), TILE_STATUS_SUCCESS);
            const tile_variant *v = &tile_registry[long_keys.variant];
            if (head_dim == 64) {
                assert_null(strstr(long_keys.reason, "144-key"));
                continue;
            }
            assert_int_equal(tile_variant_param(v, "BLOCK_N"), 144);
            assert_int_equal(tile_variant_param(v, "BLOCK_M"),
                             tile_variant_param(&tile_registry[short_causal.variant], "BLOCK_M"));
            assert_non_null(strstr(long_keys.reason, "its twin of 144-key tiles (8192 keys or more)"));
            {   /* GQA 4 x 32 x 4096 on 8 kv heads: 524288 query rows take the nearest line,
                 * timed at 8192 keys, whose 144-key pick a full call trades for 160 (A65b) */
                tile_flash_attention_args g = attention_problem(dtypes[t], head_dim);
                g.batch = 4, g.heads_q = 32, g.heads_kv = 8, g.seqlen_q = g.seqlen_k = 4096;
                g.q_seq_stride = g.o_seq_stride = 32 * (int64_t)head_dim;
                g.k_seq_stride = g.v_seq_stride = 8 * (int64_t)head_dim;
                g.q_batch_stride = g.o_batch_stride = 4096 * g.q_seq_stride;
                g.k_batch_stride = g.v_batch_stride = 4096 * g.k_seq_stride;
                tile_decision gqa = new_decision();
                assert_int_equal(tile_flash_attention_explain(&g, 90, &gqa), TILE_STATUS_SUCCESS);
                assert_int_equal(tile_variant_param(&tile_registry[gqa.variant], "BLOCK_N"), 160);
                assert_non_null(strstr(gqa.reason, "its twin of 160-key tiles"));
                g.causal = 1;
                tile_decision gqa_causal = new_decision();
                assert_int_equal(tile_flash_attention_explain(&g, 90, &gqa_causal), TILE_STATUS_SUCCESS);
                assert_int_not_equal(tile_variant_param(&tile_registry[gqa_causal.variant], "BLOCK_N"), 160);
                /* the rule's edges: 8191 keys take 160, 8192 the long keys' 144; 1024 keys, or
                 * fewer queries than 2048, keep the line's pick (not 160) */
                const int64_t edges[][3] = {{8191, 8191, 160}, {8192, 8192, 144}, {1024, 1024, 0}, {100, 4096, 0}};
                for (size_t i = 0; i < sizeof edges / sizeof *edges; i++) {
                    g.causal = 0, g.batch = 1, g.seqlen_q = edges[i][0], g.seqlen_k = edges[i][1];
                    g.q_batch_stride = g.o_batch_stride = g.seqlen_q * g.q_seq_stride;
                    g.k_batch_stride = g.v_batch_stride = g.seqlen_k * g.k_seq_stride;
                    tile_decision edge = new_decision();
                    assert_int_equal(tile_flash_attention_explain(&g, 90, &edge), TILE_STATUS_SUCCESS);
                    const int64_t keys = tile_variant_param(&tile_registry[edge.variant], "BLOCK_N");
                    if (edges[i][2]) assert_int_equal(keys, edges[i][2]);
                    else assert_null(strstr(edge.reason, "160-key"));
                }
            }
            {   /* varlen at 2048 keys, full: the line's pick, not the 160-key twin */
                tile_flash_attention_args w = a;
                w.seqlen_q = w.seqlen_k = 2048, w.cu_seqlens_q = w.cu_seqlens_k = cu;
                w.total_q = w.total_k = 2048;
                w.q_batch_stride = w.k_batch_stride = w.v_batch_stride = w.o_batch_stride = 0;
                tile_decision varlen_short = new_decision();
                assert_int_equal(tile_flash_attention_explain(&w, 90, &varlen_short), TILE_STATUS_SUCCESS);
                assert_null(strstr(varlen_short.reason, "160-key"));
            }
            a.cu_seqlens_q = a.cu_seqlens_k = cu; /* varlen, one sequence of 16384 */
            a.total_q = a.total_k = 16384;
            a.q_batch_stride = a.k_batch_stride = a.v_batch_stride = a.o_batch_stride = 0;
            tile_decision varlen = new_decision();
            assert_int_equal(tile_flash_attention_explain(&a, 90, &varlen), TILE_STATUS_SUCCESS);
            assert_int_equal(tile_variant_param(&tile_registry[varlen.variant], "BLOCK_N"), 128);
            /* past the tuned buckets (2^24 query rows: one head of 131072... 128 heads of it)
             * the heuristic keeps to 128-key tiles, and the long call takes the twin after it */
            a = attention_problem(dtypes[t], head_dim);
            a.batch = 1, a.heads_q = a.heads_kv = 128, a.seqlen_q = a.seqlen_k = 131072;
            a.q_seq_stride = a.o_seq_stride = a.k_seq_stride = a.v_seq_stride = 128 * (int64_t)head_dim;
            a.q_batch_stride = a.o_batch_stride = a.k_batch_stride = a.v_batch_stride = 0;
            tile_decision huge = new_decision();
            assert_int_equal(tile_flash_attention_explain(&a, 90, &huge), TILE_STATUS_SUCCESS);
            assert_int_equal(huge.rule, TILE_RULE_HEURISTIC);
            assert_int_equal(tile_variant_param(&tile_registry[huge.variant], "BLOCK_N"), 144);
            assert_non_null(strstr(huge.reason, "its twin of 144-key tiles"));
            a.heads_q = a.heads_kv = 1, a.seqlen_q = a.seqlen_k = 64; /* 64 rows: heuristic too */
            a.q_seq_stride = a.o_seq_stride = a.k_seq_stride = a.v_seq_stride = head_dim;
            tile_decision tiny = new_decision();
            assert_int_equal(tile_flash_attention_explain(&a, 90, &tiny), TILE_STATUS_SUCCESS);
            assert_int_equal(tiny.rule, TILE_RULE_HEURISTIC);
            assert_true(tile_variant_param(&tile_registry[tiny.variant], "BLOCK_N") <= 128);
        }
}

/* Decode-shaped calls pass the tuned lines over (perf-notes D1): 64 sequences of one query a
 * head (32 query heads on 8 key/value heads, folded to 4 rows each) against 4096 keys sit 2048
 * query rows from the 4096-row line, whose pick at head dim 128 is a 128-row `ws` block; the
 * heuristic's 64-row block is what runs. At 64 queries a sequence the line still decides. */
static tile_decision explained_on_sm90(const tile_flash_attention_args *a) {
    tile_decision d = new_decision();
    assert_int_equal(tile_flash_attention_explain(a, 90, &d), TILE_STATUS_SUCCESS);
    return d;
}
static void test_attention_decode_passes_tuned_lines_over(void **state) {
    (void)state;
    for (int32_t head_dim = 64; head_dim <= 128; head_dim += 64) {
        tile_flash_attention_args a = attention_problem(TILE_DTYPE_BF16, head_dim);
        a.batch = 64, a.heads_q = 32, a.heads_kv = 8, a.seqlen_q = 1, a.seqlen_k = 4096;
        a.q_seq_stride = a.o_seq_stride = 32 * (int64_t)head_dim;
        a.k_seq_stride = a.v_seq_stride = 8 * (int64_t)head_dim;
        a.q_batch_stride = a.o_batch_stride = a.q_seq_stride;
        a.k_batch_stride = a.v_batch_stride = 4096 * a.k_seq_stride;
        const tile_decision decode = explained_on_sm90(&a);
        assert_int_equal(decode.rule, TILE_RULE_HEURISTIC);
        assert_non_null(strstr(decode.reason, "decode-shaped (seqlen_q 4 against seqlen_k 4096)"));
        assert_int_equal(tile_registry[decode.variant].rows_per_program, 64);
        a.heads_q = a.heads_kv = 8, a.seqlen_q = 64; /* a chunk of 64 queries: the lines' */
        a.q_seq_stride = a.o_seq_stride = a.k_seq_stride;
        a.q_batch_stride = a.o_batch_stride = 64 * a.q_seq_stride;
        const tile_decision chunk = explained_on_sm90(&a);
        assert_int_not_equal(chunk.rule, TILE_RULE_HEURISTIC);
        assert_null(strstr(chunk.reason, "decode-shaped"));
    }
}

/* A short sequence: 4096 query rows (8 heads of 512) fill 32 programs of 128 rows or 64 of 64
 * against 2 * 132 program slots (explain for an arch assumes 132 SMs), so tile_heuristic_cost charges
 * the 128-row blocks 1 + 232/264 = 1.88 and the 64-row ones 1 + 200/264 = 1.76. On sm_90 every
 * wgmma variant gives a warp 16 rows (threads / (2 * BLOCK_M) = 1), so that term decides for the
 * 64-row block with 128-key tiles: head 128: 0.45 against 0.48 and 0.49 for the 128-row blocks
 * (no 64x64 tile at head 128); head 64: 0.46 against 0.47 for the 64x64 tile (smaller shared
 * memory: 1 + 2048/43008 against 1 + 2048/75776) and 0.49 and 0.50 for the 128-row blocks. On
 * sm_80, sm_86 and sm_100 (mma only) the 128-row block over 4 warps (32 rows a warp, x 0.5)
 * outweighs the 1.07x program-count charge and wins (0.98 against 1.85 for d128_m64_n64_w4). */
static void test_attention_small_batch_prefers_short_blocks(void **state) {
    (void)state;
    static const struct {
        int32_t arch, head_dim;
        const char *want;
    } cases[] = {
        {90, 128, "attention_bf16_d128_m64_n128_w4_s2_wgmma_sm90"},
        {90, 64, "attention_bf16_d64_m64_n128_w4_s2_wgmma_sm90"},
        {80, 128, "attention_bf16_d128_m128_n64_w4"},
        {86, 128, "attention_bf16_d128_m128_n64_w4"},
        {100, 128, "attention_bf16_d128_m128_n64_w4"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        const int32_t hd = cases[c].head_dim;
        tile_flash_attention_args args = attention_problem(TILE_DTYPE_BF16, hd);
        args.batch = 1;
        args.heads_q = args.heads_kv = 8;
        args.seqlen_q = 512;
        args.q_seq_stride = args.o_seq_stride = 8 * (int64_t)hd;
        args.k_seq_stride = args.v_seq_stride = 8 * (int64_t)hd;
        tile_decision d = new_decision();
        assert_int_equal(tile_flash_attention_explain(&args, cases[c].arch, &d),
                         TILE_STATUS_SUCCESS);
        tile_variant_info v = get_info(attention_heuristic_pick(&args, cases[c].arch, &d));
        if (strcmp(v.name, cases[c].want)) {
            print_error("head_dim %d, 4096 query rows on sm_%d picked %s, want %s\n", hd,
                        cases[c].arch, v.name, cases[c].want);
            fail();
        }
    }
}

/* ---------------------------------------------------------------- grouped matmul */

/* Grouped matmul arguments for explain: `groups` groups of `rows_per_group` rows, B stored
 * [groups, k, n], pointers 256-byte aligned (never dereferenced). */
static tile_grouped_matmul_args grouped_matmul_problem(tile_dtype dt, int32_t groups,
                                                       int64_t rows_per_group, int64_t n,
                                                       int64_t k) {
    static _Alignas(256) unsigned char buf[1024];
    tile_grouped_matmul_args a = {.struct_size = sizeof a, .dtype = dt, .groups = groups,
                                  .total_m = groups * rows_per_group, .n = n, .k = k};
    a.a = a.b = buf;
    a.c = buf + 256;
    a.offsets = (const int32_t *)(const void *)(buf + 512);
    a.lda = k;
    a.ldc = n;
    a.b_k_stride = n;
    a.b_n_stride = 1;
    a.b_group_stride = k * n;
    return a;
}

/* A grouped_matmul variant as a grid would describe it, with what the heuristic reads. */
static tile_variant gemm_variant(int32_t threads, int32_t block_m, int32_t arch_min,
                                 int32_t arch_max) {
    return (tile_variant){.name = "fake_grouped_matmul", .op = "grouped_matmul",
                          .dtype = TILE_DTYPE_BF16, .threads = threads,
                          .rows_per_program = block_m, .cluster = 1, .smem_bytes = 65536,
                          .align_bytes = 16, .arch_min = arch_min, .arch_max = arch_max,
                          .persistent = 1, .params = "BLOCK_N=128"};
}

/* The heuristic on a made-up family (the registry may hold no grouped_matmul variant yet):
 * the highest arch_min that runs wins whatever the tiles (wgmma against mma.sync), then the
 * larger tile (BLOCK_M x BLOCK_N) for groups of 256 rows and more (measured: perf-notes G25)
 * and C at least 256 wide; the smaller one for short groups (64 rows: a group's last block is
 * half padding), a narrow C or tiny problems. */
static void test_grouped_matmul_heuristic(void **state) {
    (void)state;
    /* Rows past 2^31 - 1, which no tensor map addresses: explain names a variant without one,
     * as the call runs (it named a tensor-map variant, which the call then passed over). */
    {
        tile_grouped_matmul_args big = grouped_matmul_problem(TILE_DTYPE_BF16, 2, (int64_t)1 << 30, 4096, 64);
        tile_decision d = new_decision();
        assert_int_equal(tile_grouped_matmul_explain(&big, 90, &d), TILE_STATUS_SUCCESS);
        assert_false(tile_variant_uses_tensor_maps(&tile_registry[d.variant]));
        big.total_m -= 1; /* 2^31 - 1 rows: the Hopper kernels again */
        assert_int_equal(tile_grouped_matmul_explain(&big, 90, &d), TILE_STATUS_SUCCESS);
        assert_true(tile_variant_uses_tensor_maps(&tile_registry[d.variant]));
    }
    enum { MMA_SMALL, MMA_LARGE, WGMMA_SMALL, WGMMA_LARGE, WGMMA_MID, COUNT };
    const tile_variant vs[COUNT] = {
        [MMA_SMALL] = gemm_variant(128, 64, 80, 0),
        [MMA_LARGE] = gemm_variant(256, 128, 80, 0),
        [WGMMA_SMALL] = gemm_variant(128, 64, 90, 90),
        [WGMMA_LARGE] = gemm_variant(256, 256, 90, 90),
        [WGMMA_MID] = gemm_variant(256, 128, 90, 90),
    };
    static const struct {
        int64_t rows, cols;
        int large;
    } shapes_[] = {
        {1024, 1024, 1}, {4096, 8192, 1}, {1 << 20, 1 << 20, 1}, {4096, 256, 1}, /* tall */
        {256, 1408, 1}, {512, 4096, 1},
        {64, 4096, 0}, {15, 4096, 0}, {4096, 255, 0}, {1, 1, 0}, {8, 14336, 0},
        {100000, 64, 0},
    };
    for (size_t s = 0; s < sizeof shapes_ / sizeof *shapes_; s++)
        for (int32_t arch = 80; arch <= 100; arch += 10) {
            tile_problem p = {.op = "grouped_matmul", .dtype = TILE_DTYPE_BF16,
                              .rows = shapes_[s].rows, .cols = shapes_[s].cols, .align = 16,
                              .arch = arch, .sm_count = 132,
                              .smem_limit = tile_arch_smem_limit(arch)};
            const int hopper = arch == 90, large = shapes_[s].large;
            const int want = hopper ? (large ? WGMMA_LARGE : WGMMA_SMALL)
                                    : (large ? MMA_LARGE : MMA_SMALL);
            const int got = best_variant(vs, COUNT, &p);
            if (got != want) {
                print_error("%lldx%lld on sm_%d: picked variant %d, want %d\n",
                            (long long)p.rows, (long long)p.cols, arch, got, want);
                fail();
            }
            /* every eligible sm_90-only variant is cheaper than every mma.sync one */
            for (int i = 0; hopper && i < COUNT; i++)
                for (int j = 0; j < COUNT; j++)
                    if (vs[i].arch_min == 90 && vs[j].arch_min == 80)
                        assert_true(tile_heuristic_cost(&vs[i], &p) <
                                    tile_heuristic_cost(&vs[j], &p));
            /* and the tile order is monotonic: the middle tile sits between the two */
            if (hopper) {
                const double lo = tile_heuristic_cost(&vs[WGMMA_SMALL], &p);
                const double mid = tile_heuristic_cost(&vs[WGMMA_MID], &p);
                const double hi = tile_heuristic_cost(&vs[WGMMA_LARGE], &p);
                assert_true(large ? hi < mid && mid < lo : lo < mid && mid < hi);
            }
        }
}

/* The registry's grouped_matmul variants, where there are any: explain picks an eligible one,
 * the heuristic's cheapest where no tuned entry decides (test_tuned_table checks those), a
 * Hopper-only one on sm_90 when it holds one. Until the kernels land there are none, and explain says so (ARCH_MISMATCH, the
 * decision unwritten). Before sm_80 nothing runs it either way. */
static void test_grouped_matmul_registry(void **state) {
    (void)state;
    const tile_dtype dts[] = {TILE_DTYPE_F16, TILE_DTYPE_BF16};
    static const struct {
        int32_t groups;
        int64_t rows, n, k;
    } cases[] = {{8, 512, 4096, 2048}, {128, 16, 2048, 7168}, {1, 1, 8, 8}, {64, 0, 1024, 1024}};
    for (size_t t = 0; t < 2; t++)
        for (size_t c = 0; c < sizeof cases / sizeof *cases; c++)
            for (size_t a = 0; a < sizeof arches / sizeof *arches; a++) {
                const int32_t arch = arches[a];
                const tile_grouped_matmul_args args = grouped_matmul_problem(
                    dts[t], cases[c].groups, cases[c].rows, cases[c].n, cases[c].k);
                /* 256-byte pointers; the strides of axes of more than one position */
                int32_t align = 256;
                const int64_t strides[4] = {args.total_m > 1 ? args.lda : 0,
                                            args.total_m > 1 ? args.ldc : 0,
                                            args.k > 1 ? args.b_k_stride : 0,
                                            args.groups > 1 ? args.b_group_stride : 0};
                for (int i = 0; i < 4; i++) {
                    const int32_t x = align_of((uint64_t)strides[i] * 2);
                    if (x < align) align = x;
                }
                const int32_t eligible =
                    count_eligible_of("grouped_matmul", dts[t], cases[c].n, align, arch, 0);
                tile_decision d = new_decision(), copy = d;
                const tile_status s = tile_grouped_matmul_explain(&args, arch, &d);
                if (eligible == 0) {
                    assert_int_equal(s, TILE_STATUS_ARCH_MISMATCH);
                    assert_non_null(strstr(tile_last_error(), "grouped_matmul"));
                    assert_int_equal(memcmp(&d, &copy, sizeof d), 0);
                    continue;
                }
                assert_int_equal(s, TILE_STATUS_SUCCESS);
                assert_int_equal(d.eligible, eligible);
                tile_variant_info v = get_info(d.variant);
                assert_string_equal(v.op, "grouped_matmul");
                assert_int_equal(v.dtype, dts[t]);
                assert_true(arch_holds(&v, arch));
                if (d.rule != TILE_RULE_HEURISTIC) continue;
                const int64_t rows = cases[c].rows > 1 ? cases[c].rows : 1;
                tile_problem p = {.op = "grouped_matmul", .dtype = dts[t], .rows = rows,
                                  .cols = cases[c].n, .align = align, .arch = arch,
                                  .smem_limit = tile_arch_smem_limit(arch)};
                const double cost = tile_heuristic_cost(&tile_registry[d.variant], &p);
                int hopper_only = 0;
                for (int32_t i = 0; i < tile_registry_count; i++) {
                    if (!tile_variant_eligible(&tile_registry[i], &p, NULL)) continue;
                    assert_true(cost <= tile_heuristic_cost(&tile_registry[i], &p));
                    hopper_only |= tile_registry[i].arch_min >= 90;
                }
                if (hopper_only) assert_true(v.arch_min >= 90);
            }
    const int32_t old[] = {70, 75, 79};
    for (size_t i = 0; i < sizeof old / sizeof *old; i++) {
        const tile_grouped_matmul_args args = grouped_matmul_problem(TILE_DTYPE_BF16, 8, 64, 256, 256);
        tile_decision d = new_decision();
        assert_int_equal(tile_grouped_matmul_explain(&args, old[i], &d),
                         TILE_STATUS_ARCH_MISMATCH);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_shape_dtype_arch),
        cmocka_unit_test(test_sm80_never_clusters),
        cmocka_unit_test(test_sm90_adds_cluster_candidates),
        cmocka_unit_test(test_old_arch_mismatch),
        cmocka_unit_test(test_row_grid_limit),
        cmocka_unit_test(test_pointer_alignment),
        cmocka_unit_test(test_odd_leading_dimension),
        cmocka_unit_test(test_single_row_ignores_stride),
        cmocka_unit_test(test_explain_is_deterministic),
        cmocka_unit_test(test_decision_struct_size),
        cmocka_unit_test(test_registry),
        cmocka_unit_test(test_sm90_variants_have_code),
        cmocka_unit_test(test_tuned_table),
        cmocka_unit_test(test_lean_twins),
        cmocka_unit_test(test_pointwise_variants),
        cmocka_unit_test(test_internal_helpers),
        cmocka_unit_test(test_attention_head_dims),
        cmocka_unit_test(test_attention_mismatch),
        cmocka_unit_test(test_attention_small_batch_prefers_short_blocks),
        cmocka_unit_test(test_attention_varlen_as_dense),
        cmocka_unit_test(test_attention_varlen_with_workspace_walks_counter),
        cmocka_unit_test(test_attention_long_keys_take_wider_key_tiles),
        cmocka_unit_test(test_attention_decode_passes_tuned_lines_over),
        cmocka_unit_test(test_grouped_matmul_heuristic),
        cmocka_unit_test(test_grouped_matmul_registry),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
