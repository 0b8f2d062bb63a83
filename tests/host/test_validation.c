/* Argument validation of the public calls (softmax, the norms, attention, grouped matmul,
 * introspection): every invalid argument gives its own status and a message naming the
 * argument, and no buffer is touched.
 * Validation runs before the driver is loaded, so none of this needs a GPU; no call here has
 * valid arguments AND host pointers (a bad variant index counts as invalid: it is checked
 * before the device), so nothing is ever launched, even on a machine with a GPU. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "first_variant.h"
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
#define NSUP TILE_STATUS_NOT_SUPPORTED

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

/* ---------------------------------------------------------------- norms */

/* The norm functions' other operands: host buffers, patterned, never to be written. */
static _Alignas(256) unsigned char sbuf[BUF_BYTES];
static _Alignas(256) unsigned char rbuf[BUF_BYTES];
static _Alignas(256) unsigned char biasbuf[BUF_BYTES];
static _Alignas(256) unsigned char weightbuf[BUF_BYTES];
static _Alignas(256) unsigned char nbiasbuf[BUF_BYTES];
static _Alignas(256) unsigned char maskbuf[BUF_BYTES];
static _Alignas(256) unsigned char meanbuf[BUF_BYTES];
static _Alignas(256) unsigned char rstdbuf[BUF_BYTES];

static unsigned char *const norm_bufs[] = {sbuf,      rbuf,    biasbuf, weightbuf,
                                           nbiasbuf, maskbuf, meanbuf, rstdbuf};
static const char *const norm_buf_names[] = {"s",         "residual", "bias", "weight",
                                             "norm_bias", "mask",     "mean", "rstd"};
#define NORM_PATTERN 0x5c

static int setup_norm(void **state) {
    setup(state);
    for (size_t b = 0; b < sizeof norm_bufs / sizeof *norm_bufs; b++)
        memset(norm_bufs[b], NORM_PATTERN, BUF_BYTES);
    return 0;
}

static void assert_norm_untouched(void) {
    assert_untouched();
    for (size_t b = 0; b < sizeof norm_bufs / sizeof *norm_bufs; b++)
        for (size_t i = 0; i < BUF_BYTES; i++)
            if (norm_bufs[b][i] != NORM_PATTERN) {
                print_error("%s was written at byte %zu\n", norm_buf_names[b], i);
                fail();
            }
}

/* The six entry points that validate tile_add_norm_args alike, as bits of a case's `entries`.
 * tile_add_norm_explain validates every field as tile_add_norm_variant does, so every case of
 * E_VAR runs through it too (norm_expect). */
enum {
    E_LN = 1 << 0,  /* tile_layernorm: y, x, weight, norm_bias (its `bias`), mean, rstd, eps */
    E_RMS = 1 << 1, /* tile_rmsnorm: y, x, weight, rstd, eps */
    E_RD = 1 << 2,  /* tile_residual_dropout: y, x, residual, bias, mask, p */
    E_RDN = 1 << 3, /* tile_residual_dropout_norm: every field */
    E_VAR = 1 << 4, /* tile_add_norm_variant (of a norm variant): every field */
    E_EXPLAIN = 1 << 5, /* tile_add_norm_explain (arch 90): every field */
    E_COUNT = 6,
    E_ALL = (1 << E_COUNT) - 1,
    E_NORMS = E_LN | E_RMS | E_RDN | E_VAR,  /* take eps */
    E_DROP = E_RD | E_RDN | E_VAR,           /* take p, residual, bias, mask */
    E_ARGS = E_RDN | E_VAR,                  /* take tile_add_norm_args */
};
static const char *const norm_entry_names[E_COUNT] = {
    "tile_layernorm", "tile_rmsnorm", "tile_residual_dropout", "tile_residual_dropout_norm",
    "tile_add_norm_variant", "tile_add_norm_explain"};

#define ABSENT (-1) /* a NULL pointer */
enum { ALIAS_NONE, S_IS_X, S_IS_R, Y_IS_X, Y_IS_R };

/* One norm call: byte offsets into the buffers (ABSENT: NULL), shape, scalars. */
typedef struct norm_spec {
    tile_dtype dtype;
    tile_norm_kind norm; /* tile_add_norm_args.norm (E_RDN, E_VAR) */
    int y, x, s, residual, bias, weight, norm_bias, mask, mean, rstd;
    int alias;
    int64_t rows, cols, ld_y, ld_x, ld_s, ld_residual;
    float eps, p;
} norm_spec;

/* A valid LayerNorm of 4 x 8 f16 for every entry point (with s and residual where taken):
 * each case breaks one thing. */
static norm_spec norm_base(void) {
    return (norm_spec){.dtype = F16, .norm = TILE_NORM_LAYER, .y = 0, .x = 0, .s = 0,
                       .residual = 0, .bias = ABSENT, .weight = ABSENT, .norm_bias = ABSENT,
                       .mask = ABSENT, .mean = ABSENT, .rstd = ABSENT, .alias = ALIAS_NONE,
                       .rows = 4, .cols = 8, .ld_y = 8, .ld_x = 8, .ld_s = 8, .ld_residual = 8,
                       .eps = 1e-5f, .p = 0.0f};
}

static void *at(unsigned char *buf, int offset) { return offset == ABSENT ? NULL : buf + offset; }

/* The variant tile_add_norm_variant runs: one of the base case's dtype. */
static int32_t first_norm_variant(void) { return first_variant_of("norm", F16); }

static tile_add_norm_args norm_args_of(const norm_spec *c) {
    tile_add_norm_args a = {.struct_size = sizeof a,
                            .dtype = c->dtype,
                            .norm = c->norm,
                            .rows = c->rows,
                            .cols = c->cols,
                            .y = at(ybuf, c->y),
                            .ld_y = c->ld_y,
                            .s = at(sbuf, c->s),
                            .ld_s = c->ld_s,
                            .x = at(xbuf, c->x),
                            .ld_x = c->ld_x,
                            .residual = at(rbuf, c->residual),
                            .ld_residual = c->ld_residual,
                            .bias = at(biasbuf, c->bias),
                            .weight = at(weightbuf, c->weight),
                            .norm_bias = at(nbiasbuf, c->norm_bias),
                            .eps = c->eps,
                            .p = c->p,
                            .seed = 1234,
                            .offset = 5,
                            .mask = (uint8_t *)at(maskbuf, c->mask),
                            .mean = (float *)at(meanbuf, c->mean),
                            .rstd = (float *)at(rstdbuf, c->rstd)};
    if (c->alias == S_IS_X) a.s = (void *)a.x;
    if (c->alias == S_IS_R) a.s = (void *)a.residual;
    if (c->alias == Y_IS_X) a.y = (void *)a.x;
    if (c->alias == Y_IS_R) a.y = (void *)a.residual;
    return a;
}

static tile_status norm_call(int e, const norm_spec *c) {
    const tile_add_norm_args a = norm_args_of(c);
    switch (1 << e) {
    case E_LN:
        return tile_layernorm(a.dtype, a.y, a.x, a.weight, a.norm_bias, a.mean, a.rstd, a.rows,
                              a.cols, a.ld_y, a.ld_x, a.eps, NULL);
    case E_RMS:
        return tile_rmsnorm(a.dtype, a.y, a.x, a.weight, a.rstd, a.rows, a.cols, a.ld_y, a.ld_x,
                            a.eps, NULL);
    case E_RD:
        return tile_residual_dropout(a.dtype, a.y, a.x, a.residual, a.bias, a.mask, a.rows,
                                     a.cols, a.ld_y, a.ld_x, a.ld_residual, a.p, a.seed, a.offset,
                                     NULL);
    case E_RDN: return tile_residual_dropout_norm(&a, NULL);
    case E_VAR: return tile_add_norm_variant(first_norm_variant(), &a, NULL);
    default: {
        tile_decision d;
        memset(&d, 0x5a, sizeof d);
        d.struct_size = sizeof d;
        const tile_decision copy = d;
        const tile_status s = tile_add_norm_explain(&a, 90, &d);
        if (s != TILE_STATUS_SUCCESS) /* a failed call writes no decision */
            assert_int_equal(memcmp(&d, &copy, sizeof d), 0);
        return s;
    }
    }
}

static int norm_calls; /* invalid norm calls made, for docs/reliability.md */

/* Runs case `c` through every entry point in `entries`: each must return `status`, name itself
 * and `message` in tile_last_error(), and write nothing. */
static void norm_expect(int line, const char *what, int entries, const norm_spec *c,
                        tile_status status, const char *message) {
    if (entries & E_VAR) entries |= E_EXPLAIN;
    for (int e = 0; e < E_COUNT; e++) {
        if (!(entries & (1 << e))) continue;
        setup_norm(NULL);
        const tile_status s = norm_call(e, c);
        norm_calls++;
        if (s != status || !strstr(tile_last_error(), message) ||
            !strstr(tile_last_error(), norm_entry_names[e]))
            print_error("line %d, %s via %s: got %s (\"%s\"), want %s mentioning \"%s\"\n", line,
                        what, norm_entry_names[e], tile_status_string(s), tile_last_error(),
                        tile_status_string(status), message);
        assert_int_equal(s, status);
        assert_message(message);
        assert_message(norm_entry_names[e]);
        assert_norm_untouched();
    }
}

/* NORM_CASE(entries, status, message, changes...): the base case with `changes` (statements
 * on `c`, separated by commas) must fail so through each of `entries`. */
#define NORM_CASE(entries, status, message, ...)                                                  \
    do {                                                                                          \
        norm_spec c = norm_base();                                                                \
        __VA_ARGS__;                                                                              \
        norm_expect(__LINE__, #__VA_ARGS__, entries, &c, status, message);                        \
    } while (0)

#define UNS TILE_STATUS_UNSUPPORTED_DTYPE

/* NULL pointers, sizes, strides, byte extents, dtype, misalignment and in place through every
 * entry point: the checks tile_softmax makes too. */
static void test_norm_row_arguments(void **state) {
    (void)state;
    assert_true(first_norm_variant() >= 0);
    NORM_CASE(E_ALL, INV, "y is NULL", c.y = ABSENT);
    NORM_CASE(E_ALL, INV, "x is NULL", c.x = ABSENT);
    NORM_CASE(E_ALL, INV, "y is NULL", c.y = ABSENT, c.x = ABSENT);
    NORM_CASE(E_ALL, INV, "rows is 0", c.rows = 0);
    NORM_CASE(E_ALL, INV, "rows is -1", c.rows = -1);
    NORM_CASE(E_ALL, INV, "rows", c.rows = INT64_MIN);
    NORM_CASE(E_ALL, INV, "cols is 0", c.cols = 0);
    NORM_CASE(E_ALL, INV, "cols is -3", c.cols = -3);
    NORM_CASE(E_ALL, INV, "ld_y is 7", c.ld_y = 7);
    NORM_CASE(E_ALL, INV, "ld_y is -8", c.ld_y = -8);
    NORM_CASE(E_ALL, INV, "ld_x is 7", c.ld_x = 7);
    NORM_CASE(E_ALL, INV, "ld_x is 0", c.ld_x = 0);
    NORM_CASE(E_ALL, INV, "ld_y", c.rows = T40, c.cols = 1, c.ld_y = T40, c.ld_x = 1, c.ld_s = 1,
              c.ld_residual = 1);
    NORM_CASE(E_ALL, INV, "overflow", c.rows = T40, c.cols = 1, c.ld_y = 1, c.ld_x = T40,
              c.ld_s = 1, c.ld_residual = 1);
    NORM_CASE(E_ALL, INV, "overflow", c.dtype = F32, c.rows = 1, c.cols = INT64_MAX / 2,
              c.ld_y = INT64_MAX / 2, c.ld_x = INT64_MAX / 2, c.ld_s = INT64_MAX / 2,
              c.ld_residual = INT64_MAX / 2);
    /* the exact edge: the last element ends one element past INT64_MAX bytes */
    NORM_CASE(E_ALL, INV, "ld_y", c.rows = 2, c.cols = 1, c.ld_y = INT64_MAX / 2, c.ld_x = 1,
              c.ld_s = 1, c.ld_residual = 1);
    NORM_CASE(E_ALL, UNS, "dtype 7", c.dtype = (tile_dtype)7);
    NORM_CASE(E_ALL, UNS, "dtype -1", c.dtype = (tile_dtype)-1);
    NORM_CASE(E_ALL, UNS, "dtype", c.dtype = TILE_DTYPE_COUNT_);
    NORM_CASE(E_ALL, MIS, ": y (", c.y = 1);
    NORM_CASE(E_ALL, MIS, ": y (", c.dtype = BF16, c.y = 3);
    NORM_CASE(E_ALL, MIS, ": y (", c.dtype = F32, c.y = 2);
    NORM_CASE(E_ALL, MIS, ": x (", c.x = 1);
    NORM_CASE(E_ALL, MIS, ": x (", c.dtype = F32, c.x = 2);
    NORM_CASE(E_ALL, INV, "y == x", c.alias = Y_IS_X, c.ld_y = 16);
    NORM_CASE(E_ALL, INV, "ld_y == ld_x", c.alias = Y_IS_X, c.ld_x = 16);
}

/* The operands beyond y and x: s, residual, the vectors, the row statistics. */
static void test_norm_operands(void **state) {
    (void)state;
    /* required pointers */
    NORM_CASE(E_RD | E_RDN, INV, "residual is NULL", c.residual = ABSENT);
    NORM_CASE(E_RDN, INV, "s is NULL", c.s = ABSENT);
    /* strides and byte extents of s and residual */
    NORM_CASE(E_ARGS, INV, "ld_s is 7", c.ld_s = 7);
    NORM_CASE(E_ARGS, INV, "ld_s is -1", c.ld_s = -1);
    NORM_CASE(E_DROP, INV, "ld_residual is 7", c.ld_residual = 7);
    NORM_CASE(E_DROP, INV, "ld_residual is 0", c.ld_residual = 0);
    NORM_CASE(E_ARGS, INV, "ld_s", c.rows = 2, c.cols = 1, c.ld_y = 1, c.ld_x = 1,
              c.ld_s = INT64_MAX / 2, c.ld_residual = 1);
    NORM_CASE(E_ARGS, INV, "overflow", c.rows = 2, c.cols = 1, c.ld_y = 1, c.ld_x = 1,
              c.ld_s = INT64_MAX / 2, c.ld_residual = 1);
    NORM_CASE(E_DROP, INV, "ld_residual", c.rows = T40, c.cols = 1, c.ld_y = 1, c.ld_x = 1,
              c.ld_s = 1, c.ld_residual = T40);
    NORM_CASE(E_DROP, INV, "overflow", c.rows = 2, c.cols = 1, c.ld_y = 1, c.ld_x = 1,
              c.ld_s = 1, c.ld_residual = INT64_MAX / 2);
    /* the row statistics: rows floats must fit in int64 bytes (2^61 f16 rows of one element
     * do; 2^61 floats of 4 bytes do not) */
    NORM_CASE(E_LN | E_ARGS, INV, "mean", c.rows = (int64_t)1 << 61, c.cols = 1, c.ld_y = 1,
              c.ld_x = 1, c.ld_s = 1, c.ld_residual = 1, c.mean = 0);
    NORM_CASE(E_NORMS, INV, "overflow", c.rows = (int64_t)1 << 61, c.cols = 1, c.ld_y = 1,
              c.ld_x = 1, c.ld_s = 1, c.ld_residual = 1, c.rstd = 0);
    /* misaligned: odd addresses for 2-byte dtypes, 2 mod 4 for f32, statistics to 4 bytes */
    NORM_CASE(E_ARGS, MIS, ": s (", c.s = 1);
    NORM_CASE(E_ARGS, MIS, ": s (", c.dtype = F32, c.s = 2);
    NORM_CASE(E_DROP, MIS, ": residual (", c.residual = 1);
    NORM_CASE(E_DROP, MIS, ": residual (", c.dtype = BF16, c.residual = 5);
    NORM_CASE(E_DROP, MIS, ": residual (", c.dtype = F32, c.residual = 2);
    NORM_CASE(E_DROP, MIS, ": bias (", c.bias = 1);
    NORM_CASE(E_DROP, MIS, ": bias (", c.dtype = F32, c.bias = 6);
    NORM_CASE(E_NORMS, MIS, ": weight (", c.weight = 1);
    NORM_CASE(E_NORMS, MIS, ": weight (", c.dtype = BF16, c.weight = 7);
    NORM_CASE(E_NORMS, MIS, ": weight (", c.dtype = F32, c.weight = 2);
    /* tile_layernorm's `bias` is the norm's shift */
    NORM_CASE(E_LN, MIS, ": bias (", c.norm_bias = 1);
    NORM_CASE(E_ARGS, MIS, ": norm_bias (", c.norm_bias = 1);
    NORM_CASE(E_LN, MIS, ": bias (", c.dtype = F32, c.norm_bias = 2);
    NORM_CASE(E_ARGS, MIS, ": norm_bias (", c.dtype = F32, c.norm_bias = 2);
    NORM_CASE(E_LN | E_ARGS, MIS, ": mean (", c.mean = 2);
    NORM_CASE(E_LN | E_ARGS, MIS, ": mean (", c.mean = 1);
    NORM_CASE(E_LN | E_ARGS, MIS, ": mean (", c.dtype = F32, c.mean = 6);
    NORM_CASE(E_NORMS, MIS, ": rstd (", c.rstd = 2);
    NORM_CASE(E_NORMS, MIS, ": rstd (", c.dtype = BF16, c.rstd = 3);
    /* RMSNorm's statistic: rstd only */
    NORM_CASE(E_ARGS, MIS, ": rstd (", c.norm = TILE_NORM_RMS, c.rstd = 1);
    /* in place needs one stride */
    NORM_CASE(E_ARGS, INV, "s == x", c.alias = S_IS_X, c.ld_s = 16);
    NORM_CASE(E_ARGS, INV, "ld_s == ld_x", c.alias = S_IS_X, c.ld_x = 16);
    NORM_CASE(E_ARGS, INV, "s == residual", c.alias = S_IS_R, c.ld_residual = 16);
    NORM_CASE(E_ARGS, INV, "ld_s == ld_residual", c.alias = S_IS_R, c.ld_s = 16);
    /* tile_residual_dropout: its y over residual */
    NORM_CASE(E_RD, INV, "y == residual", c.alias = Y_IS_R, c.ld_y = 16);
    NORM_CASE(E_RDN | E_VAR, INV, "y == residual", c.alias = Y_IS_R, c.ld_y = 16);
}

/* p, eps, the norm kind and the combinations of operands. */
static void test_norm_scalars_and_kinds(void **state) {
    (void)state;
    NORM_CASE(E_DROP, INV, "p is -0.1", c.p = -0.1f);
    NORM_CASE(E_DROP, INV, "p is 1", c.p = 1.0f);
    NORM_CASE(E_DROP, INV, "p is 1.5", c.p = 1.5f);
    NORM_CASE(E_DROP, INV, "p is", c.p = NAN);
    NORM_CASE(E_DROP, INV, "p is", c.p = INFINITY);
    NORM_CASE(E_DROP, INV, "p is", c.p = -INFINITY);
    NORM_CASE(E_DROP, INV, "p is", c.p = -FLT_MIN);
    NORM_CASE(E_NORMS, INV, "eps is -1e-05", c.eps = -1e-5f);
    NORM_CASE(E_NORMS, INV, "eps is", c.eps = -FLT_MIN);
    NORM_CASE(E_NORMS, INV, "eps is", c.eps = NAN);
    NORM_CASE(E_NORMS, INV, "eps is", c.eps = INFINITY);
    NORM_CASE(E_NORMS, INV, "eps is", c.eps = -INFINITY);
    /* RMSNorm through the args */
    NORM_CASE(E_ARGS, INV, "eps is", c.norm = TILE_NORM_RMS, c.eps = NAN);
    NORM_CASE(E_ARGS, INV, "p is", c.norm = TILE_NORM_RMS, c.p = 1.0f);
    /* the norm kind */
    NORM_CASE(E_ARGS, INV, "norm is 3", c.norm = (tile_norm_kind)3);
    NORM_CASE(E_ARGS, INV, "norm is -1", c.norm = (tile_norm_kind)-1);
    NORM_CASE(E_ARGS, INV, "norm is", c.norm = TILE_NORM_COUNT_);
    NORM_CASE(E_ARGS, INV, "norm is", c.norm = (tile_norm_kind)INT32_MAX);
    NORM_CASE(E_RDN, INV, "norm is 0", c.norm = TILE_NORM_NONE); /* the variant runner takes it */
    /* RMSNorm has no shift and no mean */
    NORM_CASE(E_ARGS, INV, "norm_bias is given for RMSNorm", c.norm = TILE_NORM_RMS,
              c.norm_bias = 0);
    NORM_CASE(E_ARGS, INV, "mean is given for RMSNorm", c.norm = TILE_NORM_RMS, c.mean = 0);
    /* the variant runner: without s, nothing may change x */
    NORM_CASE(E_VAR, INV, "s is NULL, but", c.s = ABSENT);                     /* residual */
    NORM_CASE(E_VAR, INV, "s is NULL, but", c.s = ABSENT, c.residual = ABSENT, c.bias = 0);
    NORM_CASE(E_VAR, INV, "s is NULL, but", c.s = ABSENT, c.residual = ABSENT, c.p = 0.5f);
    NORM_CASE(E_VAR, INV, "s is NULL, but", c.s = ABSENT, c.residual = ABSENT, c.mask = 0);
    NORM_CASE(E_VAR, INV, "s is NULL, but", c.norm = TILE_NORM_RMS, c.s = ABSENT);
    /* the variant runner without a norm: s is the output; y and the norm's operands must be
     * absent */
    NORM_CASE(E_VAR, INV, "need a norm", c.norm = TILE_NORM_NONE);                    /* y */
    NORM_CASE(E_VAR, INV, "need a norm", c.norm = TILE_NORM_NONE, c.y = ABSENT, c.weight = 0);
    NORM_CASE(E_VAR, INV, "need a norm", c.norm = TILE_NORM_NONE, c.y = ABSENT, c.norm_bias = 0);
    NORM_CASE(E_VAR, INV, "need a norm", c.norm = TILE_NORM_NONE, c.y = ABSENT, c.mean = 0);
    NORM_CASE(E_VAR, INV, "need a norm", c.norm = TILE_NORM_NONE, c.y = ABSENT, c.rstd = 0);
    NORM_CASE(E_VAR, INV, ": s is NULL", c.norm = TILE_NORM_NONE, c.y = ABSENT, c.s = ABSENT);
    NORM_CASE(E_VAR, INV, "p is 1", c.norm = TILE_NORM_NONE, c.y = ABSENT, c.p = 1.0f);
    NORM_CASE(E_VAR, INV, "s == residual", c.norm = TILE_NORM_NONE, c.y = ABSENT,
              c.alias = S_IS_R, c.ld_residual = 16);
}

/* tile_residual_dropout_norm and tile_add_norm_variant: args itself. */
static void test_norm_args_struct(void **state) {
    (void)state;
    setup_norm(NULL);
    const int32_t v = first_norm_variant();
    assert_int_equal(tile_residual_dropout_norm(NULL, NULL), INV);
    assert_message("tile_residual_dropout_norm: args is NULL");
    assert_int_equal(tile_add_norm_variant(v, NULL, NULL), INV);
    assert_message("tile_add_norm_variant: args is NULL");
    norm_calls += 2;
    const norm_spec base = norm_base();
    const size_t sizes[] = {0, 1, sizeof(size_t), offsetof(tile_add_norm_args, rstd),
                            sizeof(tile_add_norm_args) - 1};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        tile_add_norm_args a = norm_args_of(&base);
        a.struct_size = sizes[i];
        const tile_add_norm_args copy = a;
        assert_int_equal(tile_residual_dropout_norm(&a, NULL), INV);
        assert_message("struct_size");
        assert_message("tile_residual_dropout_norm");
        assert_int_equal(tile_add_norm_variant(v, &a, NULL), INV);
        assert_message("struct_size");
        assert_message("tile_add_norm_variant");
        assert_int_equal(memcmp(&a, &copy, sizeof a), 0); /* args are only read */
        norm_calls += 2;
    }
    assert_norm_untouched();
}

/* The variant index is checked after the arguments and before the device is needed. */
static void test_norm_variant_index(void **state) {
    (void)state;
    setup_norm(NULL);
    const norm_spec base = norm_base();
    const tile_add_norm_args a = norm_args_of(&base);
    const int32_t bad[] = {-1, -1000, tile_variant_count(), tile_variant_count() + 7, INT32_MAX,
                           INT32_MIN};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        assert_int_equal(tile_add_norm_variant(bad[i], &a, NULL), INV);
        char text[64];
        snprintf(text, sizeof text, "tile_add_norm_variant: variant %d", bad[i]);
        assert_message(text);
        norm_calls++;
    }
    tile_add_norm_args b = a;
    b.x = NULL;
    assert_int_equal(tile_add_norm_variant(-1, &b, NULL), INV);
    assert_message("x is NULL");
    b = a;
    b.norm = (tile_norm_kind)9;
    assert_int_equal(tile_add_norm_variant(-1, &b, NULL), INV);
    assert_message("norm is 9");
    norm_calls += 2;
    assert_norm_untouched();
}

/* The first bad argument in the documented order is the one reported. */
static void test_norm_first_bad_argument_wins(void **state) {
    (void)state;
    setup_norm(NULL);
    norm_spec c = norm_base();
    /* the norm kind, then (tile_residual_dropout_norm) s and residual, before the dtype */
    c.norm = (tile_norm_kind)5;
    c.dtype = (tile_dtype)7;
    c.s = ABSENT;
    norm_expect(__LINE__, "norm before dtype", E_ARGS, &c, INV, "norm is 5");
    c.norm = TILE_NORM_LAYER;
    norm_expect(__LINE__, "s before dtype", E_RDN, &c, INV, "s is NULL");
    c = norm_base();
    c.dtype = (tile_dtype)7;
    c.y = ABSENT;
    c.eps = NAN;
    norm_expect(__LINE__, "dtype first", E_ALL, &c, UNS, "dtype 7");
    /* y and x before s, residual and the vectors */
    c = norm_base();
    c.x = ABSENT;
    c.ld_s = 1;
    c.residual = 1;
    c.weight = 1;
    norm_expect(__LINE__, "x before the others", E_ALL, &c, INV, "x is NULL");
    /* s before residual, residual before the vectors, the vectors before the statistics */
    c = norm_base();
    c.s = 1;
    c.residual = 1;
    c.bias = 1;
    c.weight = 1;
    c.mean = 1;
    norm_expect(__LINE__, "s first", E_ARGS, &c, MIS, ": s (");
    norm_expect(__LINE__, "residual first", E_RD, &c, MIS, ": residual (");
    c.s = 0;
    norm_expect(__LINE__, "residual before bias", E_ARGS, &c, MIS, ": residual (");
    c.residual = 0;
    norm_expect(__LINE__, "bias before weight", E_DROP, &c, MIS, ": bias (");
    c.bias = ABSENT;
    norm_expect(__LINE__, "weight before mean", E_LN | E_ARGS, &c, MIS, ": weight (");
    c.weight = ABSENT;
    c.p = 2.0f;
    norm_expect(__LINE__, "mean before p", E_LN | E_ARGS, &c, MIS, ": mean (");
    /* p before eps, eps before the RMSNorm rules */
    c = norm_base();
    c.p = -1.0f;
    c.eps = -1.0f;
    c.norm = TILE_NORM_RMS;
    c.norm_bias = 0;
    norm_expect(__LINE__, "p before eps", E_ARGS, &c, INV, "p is -1");
    c.p = 0.0f;
    norm_expect(__LINE__, "eps before RMSNorm's shift", E_ARGS, &c, INV, "eps is -1");
    c.eps = 1e-5f;
    c.mean = 0;
    norm_expect(__LINE__, "shift before mean", E_ARGS, &c, INV, "norm_bias is given");
}

/* tile_norm_explain validates as tile_softmax_explain does, under its own name. */
static void test_norm_explain_arguments(void **state) {
    (void)state;
    setup_norm(NULL);
    tile_decision d;
    memset(&d, 0x5a, sizeof d);
    d.struct_size = sizeof d;
    const tile_decision copy = d;
    struct {
        tile_dtype dtype;
        int64_t rows, cols, ld_y, ld_x;
        int32_t align, arch;
        tile_status status;
        const char *message;
    } bad[] = {
        {F32, 4, 8, 8, 8, 0, 90, INV, "pointer_align is 0"},
        {F32, 4, 8, 8, 8, 3, 90, INV, "pointer_align is 3"},
        {F32, 4, 8, 8, 8, -16, 90, INV, "pointer_align"},
        {(tile_dtype)7, 4, 8, 8, 8, 16, 90, UNS, "dtype 7"},
        {F16, 0, 8, 8, 8, 16, 90, INV, "rows is 0"},
        {F16, 4, -5, 8, 8, 16, 90, INV, "cols is -5"},
        {F16, 4, 8, 7, 8, 16, 90, INV, "ld_y is 7"},
        {F16, 4, 8, 8, 7, 16, 90, INV, "ld_x is 7"},
        {BF16, T40, 1, T40, 1, 16, 90, INV, "overflow"},
        {F16, 2, 1, INT64_MAX / 2, 1, 16, 90, INV, "overflow"},
        {F32, 4, 8, 8, 8, 2, 90, MIS, "pointer_align is 2"},
        {BF16, 4, 8, 8, 8, 1, 90, MIS, "pointer_align is 1"},
        {F16, 4, 8, 8, 8, 16, 5, INV, "arch is 5"},
        {F16, 4, 8, 8, 8, 16, -1, INV, "arch is -1"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        const tile_status s = tile_norm_explain(bad[i].dtype, bad[i].rows, bad[i].cols,
                                                bad[i].ld_y, bad[i].ld_x, bad[i].align,
                                                bad[i].arch, &d);
        if (s != bad[i].status) print_error("explain case %zu: %s\n", i, tile_last_error());
        assert_int_equal(s, bad[i].status);
        assert_message(bad[i].message);
        assert_message("tile_norm_explain");
        norm_calls++;
    }
    assert_int_equal(tile_norm_explain(F16, 4, 8, 8, 8, 16, 90, NULL), INV);
    assert_message("tile_norm_explain: decision is NULL");
    d.struct_size = sizeof d - 1;
    assert_int_equal(tile_norm_explain(F16, 4, 8, 8, 8, 16, 90, &d), INV);
    assert_message("struct_size");
    d.struct_size = sizeof d;
    norm_calls += 2;
    assert_int_equal(memcmp(&d, &copy, sizeof d), 0); /* a failed call writes no decision */
    assert_norm_untouched();

    /* a good explain (no GPU needed for a named arch) picks a norm variant and clears the last
     * error; a row too wide for any one-pass variant still has one */
    const int64_t widths[] = {1, 8, 4096, 65536, 65537, 1000003};
    for (size_t i = 0; i < sizeof widths / sizeof *widths; i++) {
        for (int32_t arch = 80; arch <= 90; arch += 10) {
            assert_int_equal(tile_norm_explain(BF16, 64, widths[i], widths[i], widths[i], 16, arch,
                                               &d),
                             TILE_STATUS_SUCCESS);
            assert_string_equal(tile_last_error(), "");
            tile_variant_info info = {.struct_size = sizeof info};
            assert_int_equal(tile_variant_get(d.variant, &info), TILE_STATUS_SUCCESS);
            assert_string_equal(info.op, "norm");
            assert_int_equal(info.dtype, BF16);
        }
    }
}

/* tile_add_norm_explain: its own argument checks (the fields' are norm_expect's E_EXPLAIN),
 * and on a valid call the decision the call's kind implies: a LayerNorm of x alone is what
 * tile_norm_explain describes; dropout calls take a variant that draws it. */
static void test_add_norm_explain(void **state) {
    (void)state;
    setup_norm(NULL);
    const norm_spec base = norm_base();
    tile_add_norm_args a = norm_args_of(&base);
    tile_decision d;
    memset(&d, 0x5a, sizeof d);
    d.struct_size = sizeof d;
    const tile_decision copy = d;
    assert_int_equal(tile_add_norm_explain(NULL, 90, &d), INV);
    assert_message("tile_add_norm_explain: args is NULL");
    assert_int_equal(tile_add_norm_explain(&a, 90, NULL), INV);
    assert_message("tile_add_norm_explain: decision is NULL");
    assert_int_equal(tile_add_norm_explain(&a, 5, &d), INV);
    assert_message("tile_add_norm_explain: arch is 5");
    d.struct_size = 3;
    assert_int_equal(tile_add_norm_explain(&a, 90, &d), INV);
    assert_message("struct_size");
    d.struct_size = sizeof d;
    a.struct_size = 1;
    assert_int_equal(tile_add_norm_explain(&a, 90, &d), INV);
    assert_message("struct_size");
    norm_calls += 5;
    assert_int_equal(memcmp(&d, &copy, sizeof d), 0);
    assert_norm_untouched();

    /* the in-place forms docs/api.md lists, one stride each: accepted (y == residual with a
     * norm too: every norm kernel reads a row's residual before the row statistics that its
     * y waits for) */
    const int aliases[] = {S_IS_X, S_IS_R, Y_IS_X, Y_IS_R};
    for (size_t i = 0; i < sizeof aliases / sizeof *aliases; i++) {
        norm_spec c = norm_base();
        c.alias = aliases[i];
        a = norm_args_of(&c);
        assert_int_equal(tile_add_norm_explain(&a, 90, &d), TILE_STATUS_SUCCESS);
        assert_string_equal(tile_last_error(), "");
    }

    const int64_t widths[] = {8, 1000, 4096, 65536, 1000003};
    for (size_t i = 0; i < sizeof widths / sizeof *widths; i++) {
        for (int32_t arch = 80; arch <= 90; arch += 10) {
            norm_spec c = norm_base();
            c.dtype = BF16, c.rows = 64, c.cols = widths[i];
            c.ld_y = c.ld_x = c.ld_s = c.ld_residual = widths[i];
            /* LayerNorm of x alone, with weight and bias: tile_norm_explain's problem */
            c.s = c.residual = ABSENT, c.weight = c.norm_bias = 0;
            a = norm_args_of(&c);
            tile_decision plain = {.struct_size = sizeof plain};
            assert_int_equal(tile_norm_explain(BF16, 64, widths[i], widths[i], widths[i], 256,
                                               arch, &plain),
                             TILE_STATUS_SUCCESS);
            assert_int_equal(tile_add_norm_explain(&a, arch, &d), TILE_STATUS_SUCCESS);
            assert_string_equal(tile_last_error(), "");
            assert_int_equal(d.variant, plain.variant);
            /* residual + dropout(x + bias), no norm, and the fused dropout + RMSNorm: a variant
             * that draws dropout */
            c = norm_base();
            c.dtype = BF16, c.rows = 64, c.cols = widths[i];
            c.ld_y = c.ld_x = c.ld_s = c.ld_residual = widths[i];
            c.bias = 0, c.p = 0.1f;
            for (int k = 0; k < 2; k++) {
                c.norm = k ? TILE_NORM_RMS : TILE_NORM_NONE;
                c.y = k ? 0 : ABSENT;
                a = norm_args_of(&c);
                assert_int_equal(tile_add_norm_explain(&a, arch, &d), TILE_STATUS_SUCCESS);
                tile_variant_info info = {.struct_size = sizeof info};
                assert_int_equal(tile_variant_get(d.variant, &info), TILE_STATUS_SUCCESS);
                assert_string_equal(info.op, "norm");
                assert_int_equal(info.dtype, BF16);
                assert_non_null(strstr(info.params, "DROPOUT=1"));
            }
        }
    }
}

static void test_norm_call_count(void **state) {
    (void)state;
    /* docs/reliability.md counts these */
    print_message("norm validation: %d invalid calls\n", norm_calls);
}

/* ---------------------------------------------------------------- ops of an args struct */

/* Host buffers an op's invalid calls must leave as they were: filled with `pattern`, never to
 * be read or written. */
typedef struct buffer_set {
    unsigned char *const *bufs;
    const char *const *names;
    size_t count;
    unsigned char pattern;
} buffer_set;

static void poison_buffers(const buffer_set *set) {
    for (size_t b = 0; b < set->count; b++) memset(set->bufs[b], set->pattern, BUF_BYTES);
}

static void assert_buffers_untouched(const buffer_set *set) {
    for (size_t b = 0; b < set->count; b++)
        for (size_t i = 0; i < BUF_BYTES; i++)
            if (set->bufs[b][i] != set->pattern) {
                print_error("%s was written at byte %zu\n", set->names[b], i);
                fail();
            }
}

/* An op whose entry points take a versioned args struct (attention, grouped matmul): entry
 * point e (0 .. ARGS_ENTRIES - 1, bit 1 << e of an `entries` mask) called on args, and the
 * buffers its args point into. */
typedef struct args_op {
    const char *op;                 /* its registry op */
    const char *const *entry_names; /* run, variant, explain */
    tile_status (*call)(int entry, const void *args);
    tile_status (*variant)(int32_t variant, const void *args);
    tile_status (*explain)(const void *args, int32_t arch, tile_decision *decision);
    const buffer_set *buffers;
    size_t args_size;
    int *calls; /* invalid calls made, for docs/reliability.md */
} args_op;

#define ARGS_ENTRIES 3 /* run, variant, explain: bits 1, 2, 4 of an `entries` mask */

/* Runs args through every entry point in `entries`: each must return `status`, name itself and
 * `message` in tile_last_error(), and leave every buffer and the args as they were. */
static void args_expect(const args_op *op, int line, const char *what, int entries,
                        const void *args, tile_status status, const char *message) {
    unsigned char copy[1024];
    assert_true(op->args_size <= sizeof copy);
    for (int e = 0; e < ARGS_ENTRIES; e++) {
        if (!(entries & (1 << e))) continue;
        poison_buffers(op->buffers);
        memcpy(copy, args, op->args_size);
        const tile_status s = op->call(e, args);
        (*op->calls)++;
        if (s != status || !strstr(tile_last_error(), message) ||
            !strstr(tile_last_error(), op->entry_names[e]))
            print_error("line %d, %s via %s: got %s (\"%s\"), want %s mentioning \"%s\"\n", line,
                        what, op->entry_names[e], tile_status_string(s), tile_last_error(),
                        tile_status_string(status), message);
        assert_int_equal(s, status);
        assert_message(message);
        assert_message(op->entry_names[e]);
        assert_int_equal(memcmp(copy, args, op->args_size), 0);
        assert_buffers_untouched(op->buffers);
    }
}

/* A caller compiled before a field appended at `old_size` (its struct_size) passes `args`
 * whose memory after old_size holds garbage: `message`'s field there is a misaligned address.
 * That reads as NULL, so the call passes validation (`assert_valid`; the variant entry point
 * then stops at its index, before the device), while this version's struct_size over the same
 * bytes reads the garbage and refuses it with MISALIGNED. */
static void check_older_caller(const args_op *op, int line, const void *args, size_t old_size,
                               void (*assert_valid)(const void *args), const char *message) {
    _Alignas(256) unsigned char old[1024];
    assert_true(op->args_size + 64 <= sizeof old);
    memset(old, 0xee, sizeof old);
    memcpy(old, args, op->args_size);
    memcpy(old, &old_size, sizeof old_size); /* struct_size comes first */
    assert_valid(old);
    assert_int_equal(op->variant(-1, old), INV);
    char text[96];
    snprintf(text, sizeof text, "%s: variant -1", op->entry_names[1]);
    assert_message(text);
    (*op->calls)++;
    memcpy(old, &op->args_size, sizeof op->args_size);
    args_expect(op, line, "this version's struct_size", (1 << ARGS_ENTRIES) - 1, old,
                TILE_STATUS_MISALIGNED, message);
}

/* A workspace field (`workspace`, within `args`, whose init left it NULL) holding NULL or an
 * 8-byte aligned address in `buf` passes validation (`assert_valid`). */
static void check_workspace_accepted(const void *args, void **workspace, unsigned char *buf,
                                     void (*assert_valid)(const void *args)) {
    assert_null(*workspace); /* the base filled it with 0x77 before init */
    assert_valid(args);
    *workspace = buf;
    assert_valid(args);
    *workspace = buf + 8;
    assert_valid(args);
}

/* An args struct's init (`fn`, through `init`): NULL and sizes below version 1's (`v1_size`,
 * the struct up to its last v1 field at `last_field`) fail and write nothing; version 1's size
 * (an older caller's), this version's (`size`) and a newer caller's longer struct are zeroed
 * exactly and get their struct_size. */
static void check_args_init(const char *fn, tile_status (*init)(void *args, size_t size),
                            size_t size, size_t v1_size, size_t last_field, int *calls) {
    _Alignas(256) unsigned char buf[1024];
    assert_true(size + 64 <= sizeof buf);
    char text[96];
    assert_int_equal(init(NULL, size), INV);
    snprintf(text, sizeof text, "%s: args is NULL", fn);
    assert_message(text);
    (*calls)++;
    const size_t small[] = {0, 1, sizeof(size_t), last_field, v1_size - 1};
    for (size_t i = 0; i < sizeof small / sizeof *small; i++) {
        memset(buf, 0xee, sizeof buf);
        assert_int_equal(init(buf, small[i]), INV);
        snprintf(text, sizeof text, "%s: struct_size is %zu", fn, small[i]);
        assert_message(text);
        for (size_t j = 0; j < sizeof buf; j++) assert_int_equal(buf[j], 0xee);
        (*calls)++;
    }
    const size_t sizes[] = {v1_size, size, size + 8, size + 64};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        memset(buf, 0xee, sizeof buf);
        assert_int_equal(init(buf, sizes[i]), TILE_STATUS_SUCCESS);
        assert_string_equal(tile_last_error(), "");
        size_t struct_size;
        memcpy(&struct_size, buf, sizeof struct_size);
        assert_int_equal(struct_size, sizes[i]);
        for (size_t j = sizeof(size_t); j < sizes[i]; j++) assert_int_equal(buf[j], 0);
        for (size_t j = sizes[i]; j < sizeof buf; j++) assert_int_equal(buf[j], 0xee);
    }
}

/* What the entry points of every args op share, on `valid` args (BF16; never run) and
 * `broken` ones (valid but for what `broken_message` names): NULL args and struct_size below
 * version 1's `v1_size` (`last_field`, the offset of its last field, and v1_size - 1 among
 * others) through all three; explain's decision checked first and never written, then its
 * arch; the variant index's range, then its op and dtype (`other`: variants of other ops or
 * dtypes), both before the device. */
static void check_args_entry_points(const args_op *op, const void *valid, const void *broken,
                                    const char *broken_message, size_t v1_size,
                                    size_t last_field, int32_t arch, const int32_t other[3]) {
    char text[128];
    for (int e = 0; e < ARGS_ENTRIES; e++) {
        poison_buffers(op->buffers);
        assert_int_equal(op->call(e, NULL), INV);
        snprintf(text, sizeof text, "%s: args is NULL", op->entry_names[e]);
        assert_message(text);
        (*op->calls)++;
    }
    _Alignas(256) unsigned char args[1024];
    assert_true(op->args_size <= sizeof args);
    const size_t sizes[] = {0, 1, sizeof(size_t), last_field, v1_size - 1};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        memcpy(args, valid, op->args_size);
        memcpy(args, &sizes[i], sizeof sizes[i]); /* struct_size comes first */
        snprintf(text, sizeof text, "struct_size is %zu", sizes[i]);
        args_expect(op, __LINE__, text, (1 << ARGS_ENTRIES) - 1, args, INV, text);
    }
    tile_decision d;
    memset(&d, 0x5a, sizeof d);
    d.struct_size = sizeof d;
    const tile_decision dcopy = d;
    const char *const explain_name = op->entry_names[2];
    assert_int_equal(op->explain(valid, arch, NULL), INV);
    snprintf(text, sizeof text, "%s: decision is NULL", explain_name);
    assert_message(text);
    d.struct_size = 0;
    assert_int_equal(op->explain(valid, arch, &d), INV);
    assert_message("decision->struct_size is 0");
    d.struct_size = sizeof d - 1;
    assert_int_equal(op->explain(broken, arch, &d), INV);
    assert_message("decision->struct_size");
    d.struct_size = sizeof d;
    assert_int_equal(op->explain(broken, arch, &d), INV);
    assert_message(broken_message);
    assert_int_equal(op->explain(valid, 5, &d), INV);
    snprintf(text, sizeof text, "%s: arch is 5", explain_name);
    assert_message(text);
    assert_int_equal(op->explain(valid, -90, &d), INV);
    assert_message("arch is -90");
    *op->calls += 6;
    assert_int_equal(memcmp(&d, &dcopy, sizeof d), 0);
    const int32_t bad[] = {-1, -1000, tile_variant_count(), tile_variant_count() + 7, INT32_MAX,
                           INT32_MIN};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        assert_int_equal(op->variant(bad[i], valid), INV);
        snprintf(text, sizeof text, "%s: variant %d", op->entry_names[1], bad[i]);
        assert_message(text);
        (*op->calls)++;
    }
    for (size_t i = 0; i < 3; i++) {
        assert_true(other[i] >= 0);
        assert_int_equal(op->variant(other[i], valid), NSUP);
        snprintf(text, sizeof text, "%s: variant", op->entry_names[1]);
        assert_message(text);
        snprintf(text, sizeof text, "not %s bf16", op->op);
        assert_message(text);
        (*op->calls)++;
    }
    assert_buffers_untouched(op->buffers);
}

/* ---------------------------------------------------------------- attention */

/* The attention operands: host buffers, patterned, never to be read or written. */
static _Alignas(256) unsigned char qbuf[BUF_BYTES];
static _Alignas(256) unsigned char kbuf[BUF_BYTES];
static _Alignas(256) unsigned char vbuf[BUF_BYTES];
static _Alignas(256) unsigned char obuf[BUF_BYTES];
static _Alignas(256) unsigned char lsebuf[BUF_BYTES];
static _Alignas(256) unsigned char cubuf[BUF_BYTES]; /* cu_seqlens_q, then cu_seqlens_k at +64 */
static _Alignas(256) unsigned char wsbuf[BUF_BYTES];

static unsigned char *const attn_bufs[] = {qbuf, kbuf, vbuf, obuf, lsebuf, cubuf, wsbuf};
static const char *const attn_buf_names[] = {"q", "k", "v", "o", "lse", "cu_seqlens",
                                             "workspace"};
#define ATTN_PATTERN 0x6d

static const buffer_set attn_buffers = {attn_bufs, attn_buf_names, 7, ATTN_PATTERN};

static int setup_attn(void **state) {
    (void)state;
    poison_buffers(&attn_buffers);
    return 0;
}

static void assert_attn_untouched(void) { assert_buffers_untouched(&attn_buffers); }

/* The three entry points that validate tile_flash_attention_args alike, as bits. explain
 * decides for sm_80 (no device needed), so it alone reaches dispatch's own checks here. */
enum {
    A_RUN = 1 << 0, /* tile_flash_attention */
    A_VAR = 1 << 1, /* tile_flash_attention_variant of an attention variant of the dtype */
    A_EXP = 1 << 2, /* tile_flash_attention_explain(args, 80, decision) */
    A_ALL = (1 << ARGS_ENTRIES) - 1,
};
static const char *const attn_entry_names[ARGS_ENTRIES] = {
    "tile_flash_attention", "tile_flash_attention_variant", "tile_flash_attention_explain"};

/* A valid call: bf16, BSHD, 2 sequences of 8 queries and 8 keys, 2 query heads over one
 * key/value head (GQA), head_dim 32, with lse; each case breaks one thing. q and o take 2 KiB,
 * k and v 1 KiB. */
static tile_flash_attention_args attn_base(void) {
    tile_flash_attention_args a;
    memset(&a, 0x77, sizeof a); /* init must clear everything */
    assert_int_equal(tile_flash_attention_init(&a, sizeof a), TILE_STATUS_SUCCESS);
    a.dtype = BF16;
    a.batch = 2;
    a.heads_q = 2;
    a.heads_kv = 1;
    a.head_dim = 32;
    a.seqlen_q = a.seqlen_k = 8;
    a.q = qbuf, a.k = kbuf, a.v = vbuf, a.o = obuf;
    a.lse = (float *)(void *)lsebuf;
    a.q_head_stride = a.o_head_stride = a.k_head_stride = a.v_head_stride = 32;
    a.q_seq_stride = a.o_seq_stride = 2 * 32;
    a.k_seq_stride = a.v_seq_stride = 32;
    a.q_batch_stride = a.o_batch_stride = 8 * 2 * 32;
    a.k_batch_stride = a.v_batch_stride = 8 * 32;
    return a;
}

/* The base packed as varlen: 16 query and 16 key tokens, maxima 8; batch strides unused. */
static void attn_varlen(tile_flash_attention_args *a) {
    a->cu_seqlens_q = (const int32_t *)(void *)cubuf;
    a->cu_seqlens_k = (const int32_t *)(void *)(cubuf + 64);
    a->total_q = a->total_k = 16;
    a->q_batch_stride = a->k_batch_stride = a->v_batch_stride = a->o_batch_stride = 0;
}

static tile_status attn_call(int e, const void *args) {
    const tile_flash_attention_args *a = args;
    tile_decision d = {.struct_size = sizeof d};
    switch (1 << e) {
    case A_RUN: return tile_flash_attention(a, NULL);
    case A_VAR:
        /* an f32 (or bad) dtype has no attention variant: any index is checked after it */
        return tile_flash_attention_variant(first_variant_of("attention", BF16), a, NULL);
    default: return tile_flash_attention_explain(a, 80, &d);
    }
}

static int attn_calls; /* invalid attention calls made, for docs/reliability.md */

static tile_status attn_variant(int32_t variant, const void *args) {
    return tile_flash_attention_variant(variant, args, NULL);
}
static tile_status attn_explain(const void *args, int32_t arch, tile_decision *decision) {
    return tile_flash_attention_explain(args, arch, decision);
}

static const args_op attn_op = {"attention",    attn_entry_names, attn_call,
                                attn_variant,   attn_explain,     &attn_buffers,
                                sizeof(tile_flash_attention_args), &attn_calls};

static void attn_expect(int line, const char *what, int entries,
                        const tile_flash_attention_args *a, tile_status status,
                        const char *message) {
    args_expect(&attn_op, line, what, entries, a, status, message);
}

/* ATTN_CASE(entries, status, message, changes...): the base case with `changes` (statements on
 * `a`, separated by commas) must fail so through each of `entries`. */
#define ATTN_CASE(entries, status, message, ...)                                                  \
    do {                                                                                          \
        tile_flash_attention_args a = attn_base();                                                \
        __VA_ARGS__;                                                                              \
        attn_expect(__LINE__, #__VA_ARGS__, entries, &a, status, message);                        \
    } while (0)

#define T31 ((int64_t)1 << 31)
/* The largest q_batch_stride of the base case whose last element ends within INT64_MAX bytes:
 * 32 + stride + 7 * 64 + 32 elements of 2 bytes. */
#define ATTN_EDGE (INT64_MAX / 2 - 32 - 7 * 64 - 32)

/* tile_flash_attention_args as version 1 (0.3.0 to 0.7.0) defined them: up to lse, where
 * 0.8.0's workspace begins. What a caller compiled against 0.7 passes as struct_size. */
#define ATTN_V1_SIZE (offsetof(tile_flash_attention_args, lse) + sizeof(float *))
_Static_assert(ATTN_V1_SIZE == offsetof(tile_flash_attention_args, workspace),
               "workspace follows version 1's last field");

/* args pass validation: explain for sm_80 (no device needed) picks an attention variant of
 * the dtype, and nothing is written. */
static void assert_attn_valid(const void *args) {
    tile_decision d = {.struct_size = sizeof d};
    assert_int_equal(tile_flash_attention_explain(args, 80, &d), TILE_STATUS_SUCCESS);
    assert_string_equal(tile_last_error(), "");
    tile_variant_info info = {.struct_size = sizeof info};
    assert_int_equal(tile_variant_get(d.variant, &info), TILE_STATUS_SUCCESS);
    assert_string_equal(info.op, "attention");
    assert_int_equal(info.dtype, BF16);
    assert_attn_untouched();
}

/* The base case and its varlen form are valid: explain picks an attention variant of the
 * dtype for sm_80 and sm_90. (tile_flash_attention itself would launch on host pointers where
 * a GPU exists; tests/host/test_no_driver.c runs it without a driver.) Heads of 32: on sm_80 the
 * narrowest mma width, 32; on sm_90 the wgmma family (heads of 64 and 128 only, charged a
 * quarter of mma's cost by the dispatch heuristic) takes them zero-padded to 64, as its 2x
 * padding and 0.25 match the d32 mma variant's 32-row warps (0.5) and d32_m128_n64_w4's small
 * shared memory is charged more (1 + 2048/20480 = 1.10, the d64 wgmma tiles at most 1.05). */
static void test_attention_valid(void **state) {
    (void)state;
    for (int varlen = 0; varlen < 2; varlen++)
        for (int32_t arch = 80; arch <= 90; arch += 10) {
            tile_flash_attention_args a = attn_base();
            if (varlen) attn_varlen(&a);
            tile_decision d = {.struct_size = sizeof d};
            assert_int_equal(tile_flash_attention_explain(&a, arch, &d), TILE_STATUS_SUCCESS);
            assert_string_equal(tile_last_error(), "");
            tile_variant_info info = {.struct_size = sizeof info};
            assert_int_equal(tile_variant_get(d.variant, &info), TILE_STATUS_SUCCESS);
            assert_string_equal(info.op, "attention");
            assert_int_equal(info.dtype, BF16);
            assert_int_equal(info.max_cols, arch >= 90 ? 64 : 32);
            assert_int_equal(info.arch_min, arch >= 90 ? 90 : 80);
            assert_int_equal(info.cluster, 1);
            assert_true(info.arch_max == 0 || info.arch_max >= arch);
            /* sm_90: a Hopper family (wgmma, or the warp-specialized ws; varlen calls too) */
            const int hopper = strstr(info.name, "_wgmma_sm90") != NULL ||
                               strstr(info.name, "_ws_sm90") != NULL;
            assert_int_equal(hopper, arch >= 90);
        }
    /* valid edges: varlen lengths of 0, a stride of 0 (broadcast input) or one that does not
     * count (an axis of one position), the largest head, MQA, scale negative */
    tile_flash_attention_args a = attn_base();
    attn_varlen(&a);
    a.seqlen_q = a.seqlen_k = a.total_q = a.total_k = 0;
    tile_decision d = {.struct_size = sizeof d};
    assert_int_equal(tile_flash_attention_explain(&a, 80, &d), TILE_STATUS_SUCCESS);
    a = attn_base();
    a.batch = 1;
    a.q_batch_stride = a.o_batch_stride = 3; /* one sequence: never used */
    a.k_batch_stride = 0;
    a.head_dim = 256;
    a.heads_q = 7;
    a.q_seq_stride = a.o_seq_stride = 7 * 256;
    a.q_head_stride = a.o_head_stride = 256;
    a.scale = -0.5f;
    a.causal = 1;
    assert_int_equal(tile_flash_attention_explain(&a, 80, &d), TILE_STATUS_SUCCESS);
    assert_string_equal(tile_last_error(), "");
    /* the largest q extent passes validation (and, odd, then fails dispatch's alignment) */
    a = attn_base();
    a.q_batch_stride = ATTN_EDGE;
    assert_int_equal(tile_flash_attention_explain(&a, 90, &d), MIS);
    assert_message("the least aligned argument is q_batch_stride");
    assert_attn_untouched();
}

static void test_attention_arguments(void **state) {
    (void)state;
    assert_true(first_variant_of("attention", BF16) >= 0);
    /* dtype */
    ATTN_CASE(A_ALL, UNS, "dtype 0 (f32)", a.dtype = F32);
    ATTN_CASE(A_ALL, UNS, "dtype 7", a.dtype = (tile_dtype)7);
    ATTN_CASE(A_ALL, UNS, "dtype -1", a.dtype = (tile_dtype)-1);
    ATTN_CASE(A_ALL, UNS, "dtype 3", a.dtype = TILE_DTYPE_COUNT_);
    /* batch and heads */
    ATTN_CASE(A_ALL, INV, "batch is 0", a.batch = 0);
    ATTN_CASE(A_ALL, INV, "batch is -1", a.batch = -1);
    ATTN_CASE(A_ALL, INV, "batch is -2147483648", a.batch = INT32_MIN);
    ATTN_CASE(A_ALL, INV, "heads_kv is 0", a.heads_kv = 0);
    ATTN_CASE(A_ALL, INV, "heads_kv is -3", a.heads_kv = -3);
    ATTN_CASE(A_ALL, INV, "heads_q is 3", a.heads_kv = 2, a.heads_q = 3);
    ATTN_CASE(A_ALL, INV, "heads_q is 1", a.heads_kv = 2, a.heads_q = 1);
    ATTN_CASE(A_ALL, INV, "heads_q is 0", a.heads_q = 0);
    ATTN_CASE(A_ALL, INV, "heads_q is -2", a.heads_q = -2);
    /* head_dim: out of range is invalid, in range but not compiled is not supported */
    ATTN_CASE(A_ALL, INV, "head_dim is 0", a.head_dim = 0);
    ATTN_CASE(A_ALL, INV, "head_dim is -8", a.head_dim = -8);
    ATTN_CASE(A_ALL, NSUP, "head_dim 12", a.head_dim = 12);
    ATTN_CASE(A_ALL, NSUP, "head_dim 7", a.head_dim = 7);
    ATTN_CASE(A_ALL, NSUP, "head_dim 33", a.head_dim = 33);
    ATTN_CASE(A_ALL, NSUP, "head_dim 264", a.head_dim = 264);
    ATTN_CASE(A_ALL, NSUP, "head_dim 512", a.head_dim = 512);
    ATTN_CASE(A_ALL, NSUP, "head_dim 2147483647", a.head_dim = INT32_MAX);
    /* one of the cu_seqlens */
    ATTN_CASE(A_ALL, INV, "cu_seqlens_k is NULL", attn_varlen(&a), a.cu_seqlens_k = NULL);
    ATTN_CASE(A_ALL, INV, "cu_seqlens_q is NULL", attn_varlen(&a), a.cu_seqlens_q = NULL);
    /* sequence lengths: fixed >= 1, varlen maxima >= 0, both below 2^31 */
    ATTN_CASE(A_ALL, INV, "seqlen_q is 0", a.seqlen_q = 0);
    ATTN_CASE(A_ALL, INV, "seqlen_q is -1", a.seqlen_q = -1);
    ATTN_CASE(A_ALL, INV, "seqlen_q is 2147483648", a.seqlen_q = T31);
    ATTN_CASE(A_ALL, INV, "seqlen_q is", a.seqlen_q = INT64_MIN);
    ATTN_CASE(A_ALL, INV, "seqlen_k is 0", a.seqlen_k = 0);
    ATTN_CASE(A_ALL, INV, "seqlen_k is -5", a.seqlen_k = -5);
    ATTN_CASE(A_ALL, INV, "seqlen_k is 2147483648", a.seqlen_k = T31);
    ATTN_CASE(A_ALL, INV, "seqlen_k is 9223372036854775807", a.seqlen_k = INT64_MAX);
    ATTN_CASE(A_ALL, INV, "seqlen_q is -1", attn_varlen(&a), a.seqlen_q = -1);
    ATTN_CASE(A_ALL, INV, "seqlen_k is -1", attn_varlen(&a), a.seqlen_k = -1);
    ATTN_CASE(A_ALL, INV, "seqlen_q is 2147483648", attn_varlen(&a), a.seqlen_q = T31);
    ATTN_CASE(A_ALL, INV, "seqlen_k is 2147483648", attn_varlen(&a), a.seqlen_k = T31);
    ATTN_CASE(A_ALL, INV, "total_q is -1", attn_varlen(&a), a.total_q = -1);
    ATTN_CASE(A_ALL, INV, "total_q is 2147483648", attn_varlen(&a), a.total_q = T31);
    ATTN_CASE(A_ALL, INV, "total_k is -16", attn_varlen(&a), a.total_k = -16);
    ATTN_CASE(A_ALL, INV, "total_k is 2147483648", attn_varlen(&a), a.total_k = T31);
    /* causal, scale */
    ATTN_CASE(A_ALL, INV, "causal is 2", a.causal = 2);
    ATTN_CASE(A_ALL, INV, "causal is -1", a.causal = -1);
    ATTN_CASE(A_ALL, INV, "scale is nan", a.scale = NAN);
    ATTN_CASE(A_ALL, INV, "scale is inf", a.scale = INFINITY);
    ATTN_CASE(A_ALL, INV, "scale is -inf", a.scale = -INFINITY);
    /* a finite scale whose base-2 form (scale x log2(e)) is not */
    ATTN_CASE(A_ALL, INV, "magnitude must be at most", a.scale = 3e38f);
    ATTN_CASE(A_ALL, INV, "magnitude must be at most", a.scale = -2.4e38f);
    /* lengths the kernels' 32-bit sums of a length and a block (up to 256) would wrap */
    ATTN_CASE(A_ALL, NSUP, "seqlen_k is 2147483647; the kernels take lengths up to 2^31 - 256",
              a.seqlen_k = INT32_MAX);
    ATTN_CASE(A_ALL, NSUP, "seqlen_q is 2147483393", a.seqlen_q = T31 - 255);
    ATTN_CASE(A_ALL, NSUP, "seqlen_k is 2147483393", attn_varlen(&a), a.seqlen_k = T31 - 255);
    ATTN_CASE(A_ALL, NSUP, "total_q is 2147483647", attn_varlen(&a), a.total_q = INT32_MAX);
    ATTN_CASE(A_ALL, NSUP, "total_k is 2147483393", attn_varlen(&a), a.total_k = T31 - 255);
    /* more than 2^30 query blocks of 64 rows (varlen: the tensors' extents are total_q's) */
    ATTN_CASE(A_ALL, NSUP, "batch x heads_q is 1024 and seqlen_q 67108865", attn_varlen(&a),
              a.batch = 512, a.seqlen_q = ((int64_t)1 << 26) + 1);
    ATTN_CASE(A_ALL, NSUP, "batch x heads_q is 4294967296 and seqlen_q 1", attn_varlen(&a),
              a.batch = 1 << 30, a.heads_kv = 4, a.heads_q = 4, a.seqlen_q = 1);
}

static void test_attention_tensors(void **state) {
    (void)state;
    /* NULL tensors */
    ATTN_CASE(A_ALL, INV, ": q is NULL", a.q = NULL);
    ATTN_CASE(A_ALL, INV, ": k is NULL", a.k = NULL);
    ATTN_CASE(A_ALL, INV, ": v is NULL", a.v = NULL);
    ATTN_CASE(A_ALL, INV, ": o is NULL", a.o = NULL);
    /* negative strides, every one */
    ATTN_CASE(A_ALL, INV, "q_batch_stride is -1", a.q_batch_stride = -1);
    ATTN_CASE(A_ALL, INV, "q_seq_stride is -64", a.q_seq_stride = -64);
    ATTN_CASE(A_ALL, INV, "q_head_stride is -1", a.q_head_stride = -1);
    ATTN_CASE(A_ALL, INV, "k_batch_stride is -1", a.k_batch_stride = -1);
    ATTN_CASE(A_ALL, INV, "k_seq_stride is -1", a.k_seq_stride = -1);
    ATTN_CASE(A_ALL, INV, "k_head_stride is", a.k_head_stride = INT64_MIN);
    ATTN_CASE(A_ALL, INV, "v_batch_stride is -1", a.v_batch_stride = -1);
    ATTN_CASE(A_ALL, INV, "v_seq_stride is -1", a.v_seq_stride = -1);
    ATTN_CASE(A_ALL, INV, "v_head_stride is -1", a.v_head_stride = -1);
    ATTN_CASE(A_ALL, INV, "o_batch_stride is -1", a.o_batch_stride = -1);
    ATTN_CASE(A_ALL, INV, "o_seq_stride is -1", a.o_seq_stride = -1);
    ATTN_CASE(A_ALL, INV, "o_head_stride is -1", a.o_head_stride = -1);
    /* the output's positions must not overlap */
    ATTN_CASE(A_ALL, INV, "o_seq_stride is 32", a.o_seq_stride = 32);
    ATTN_CASE(A_ALL, INV, "o_head_stride is 16", a.o_head_stride = 16);
    ATTN_CASE(A_ALL, INV, "o_head_stride is 0", a.o_head_stride = 0);
    ATTN_CASE(A_ALL, INV, "o_batch_stride is 0", a.o_batch_stride = 0);
    ATTN_CASE(A_ALL, INV, "o_batch_stride is 480", a.o_batch_stride = 480);
    ATTN_CASE(A_ALL, INV, "o_seq_stride is 0", attn_varlen(&a), a.o_seq_stride = 0);
    /* BHSD with a head stride short of the sequence */
    ATTN_CASE(A_ALL, INV, "o_head_stride is 248", a.o_seq_stride = 32, a.o_head_stride = 248);
    /* int64 byte extents */
    ATTN_CASE(A_ALL, INV, "overflow", a.q_batch_stride = INT64_MAX / 2);
    ATTN_CASE(A_ALL, INV, "k_seq_stride", a.k_seq_stride = INT64_MAX / 8);
    ATTN_CASE(A_ALL, INV, "overflow", a.v_head_stride = INT64_MAX / 2 - 10, a.heads_kv = 2);
    ATTN_CASE(A_ALL, INV, "o_batch_stride", a.o_batch_stride = INT64_MAX / 2 - 15);
    ATTN_CASE(A_ALL, INV, "overflow", attn_varlen(&a), a.total_q = T31 - 256,
              a.q_seq_stride = (int64_t)1 << 32);
    /* the exact edge: q's last element ends one element past INT64_MAX bytes (one element
     * less passes: test_attention_valid) */
    ATTN_CASE(A_ALL, INV, "overflow", a.q_batch_stride = ATTN_EDGE + 1);
    /* pointers not aligned to their elements */
    ATTN_CASE(A_ALL, MIS, ": q (", a.q = qbuf + 1);
    ATTN_CASE(A_ALL, MIS, ": k (", a.k = kbuf + 3);
    ATTN_CASE(A_ALL, MIS, ": v (", a.dtype = F16, a.v = vbuf + 1);
    ATTN_CASE(A_ALL, MIS, ": o (", a.o = obuf + 255);
    ATTN_CASE(A_ALL, MIS, ": lse (", a.lse = (float *)(void *)(lsebuf + 2));
    ATTN_CASE(A_ALL, MIS, ": lse (", a.lse = (float *)(void *)(lsebuf + 1));
    ATTN_CASE(A_ALL, MIS, "cu_seqlens_q (", attn_varlen(&a),
              a.cu_seqlens_q = (const int32_t *)(void *)(cubuf + 2));
    ATTN_CASE(A_ALL, MIS, "cu_seqlens_k (", attn_varlen(&a),
              a.cu_seqlens_k = (const int32_t *)(void *)(cubuf + 65));
    /* element-aligned but below the 16 bytes every variant needs: dispatch's MISALIGNED,
     * naming the least aligned argument (explain for sm_80: no device needed) */
    ATTN_CASE(A_EXP, MIS, "the least aligned argument is q (", a.q = qbuf + 2);
    ATTN_CASE(A_EXP, MIS, "the least aligned argument is v (", a.v = vbuf + 8);
    ATTN_CASE(A_EXP, MIS, "the least aligned argument is o (", a.dtype = F16, a.o = obuf + 4);
    ATTN_CASE(A_EXP, MIS, "the least aligned argument is q_seq_stride 68", a.q_seq_stride = 68);
    ATTN_CASE(A_EXP, MIS, "the least aligned argument is k_head_stride 33",
              a.heads_kv = 2, a.k_head_stride = 33);
    ATTN_CASE(A_EXP, MIS, "the least aligned argument is v_batch_stride 260",
              a.v_batch_stride = 260);
    ATTN_CASE(A_EXP, MIS, "the least aligned argument is o_seq_stride 68", a.o_seq_stride = 68,
              a.o_batch_stride = 8 * 68);
    ATTN_CASE(A_EXP, MIS, "aligned to only 2 bytes", a.k_seq_stride = 35);
}

/* args itself, the decision, the variant index, and the order of the checks. */
static void test_attention_entry_points(void **state) {
    (void)state;
    tile_flash_attention_args a = attn_base(), broken = attn_base();
    broken.q = NULL;
    const int32_t other[3] = {first_variant_of("softmax", BF16), first_variant_of("norm", BF16),
                              first_variant_of("attention", F16)};
    check_args_entry_points(&attn_op, &a, &broken, "q is NULL", ATTN_V1_SIZE,
                            offsetof(tile_flash_attention_args, lse), 80, other);
    a.head_dim = 12;
    assert_int_equal(tile_flash_attention_variant(-1, &a, NULL), NSUP);
    assert_message("head_dim 12");
    attn_calls++;
    /* the first bad argument in the documented order is the one reported */
    a = attn_base();
    a.dtype = F32;
    a.batch = 0;
    a.q = NULL;
    attn_expect(__LINE__, "dtype first", A_ALL, &a, UNS, "dtype 0");
    a.dtype = BF16;
    attn_expect(__LINE__, "batch before tensors", A_ALL, &a, INV, "batch is 0");
    a = attn_base();
    a.heads_kv = 0;
    a.heads_q = 3;
    attn_expect(__LINE__, "heads_kv before heads_q", A_ALL, &a, INV, "heads_kv is 0");
    a = attn_base();
    a.head_dim = 12;
    a.causal = 5;
    a.seqlen_q = 0;
    attn_expect(__LINE__, "head_dim before lengths", A_ALL, &a, NSUP, "head_dim 12");
    a.head_dim = 32;
    attn_expect(__LINE__, "lengths before causal", A_ALL, &a, INV, "seqlen_q is 0");
    a = attn_base();
    a.k = NULL;
    a.v = kbuf + 1;
    a.q_seq_stride = -1;
    attn_expect(__LINE__, "q before k", A_ALL, &a, INV, "q_seq_stride is -1");
    a.q_seq_stride = 64;
    attn_expect(__LINE__, "k before v", A_ALL, &a, INV, "k is NULL");
    a = attn_base();
    a.lse = (float *)(void *)(lsebuf + 1);
    a.o = obuf + 1;
    attn_expect(__LINE__, "o before lse", A_ALL, &a, MIS, ": o (");
    a.o = obuf;
    a.workspace = wsbuf + 1;
    attn_expect(__LINE__, "lse before workspace", A_ALL, &a, MIS, ": lse (");
    a = attn_base();
    attn_varlen(&a);
    a.cu_seqlens_k = (const int32_t *)(void *)(cubuf + 66);
    a.workspace = wsbuf + 1;
    attn_expect(__LINE__, "cu_seqlens before workspace", A_ALL, &a, MIS, "cu_seqlens_k (");
    assert_attn_untouched();
}

/* The workspace (since 0.8.0), as the grouped matmul's: NULL (init's) or 8-byte aligned
 * passes, and is never read or written here; any other address is MISALIGNED, naming it,
 * before the device and dispatch, whichever variant the call would take (the variants that do
 * not use it are not told apart here). A caller compiled against 0.7 passes version 1's
 * struct_size, which ends where the workspace begins: whatever its memory holds there reads as
 * NULL. */
static void test_attention_workspace(void **state) {
    (void)state;
    tile_flash_attention_args a = attn_base();
    check_workspace_accepted(&a, &a.workspace, wsbuf, assert_attn_valid);
    attn_varlen(&a);
    assert_attn_valid(&a);
    ATTN_CASE(A_ALL, MIS, ": workspace (", a.workspace = (void *)(uintptr_t)0x1001);
    ATTN_CASE(A_ALL, MIS, "is not 8-byte aligned (its block counter is 64-bit)",
              a.workspace = wsbuf + 4);
    ATTN_CASE(A_ALL, MIS, ": workspace (", a.workspace = wsbuf + 255);
    ATTN_CASE(A_ALL, MIS, ": workspace (", attn_varlen(&a), a.workspace = wsbuf + 2);
    /* before dispatch's MISALIGNED (q only element-aligned) */
    ATTN_CASE(A_ALL, MIS, ": workspace (", a.q = qbuf + 2, a.workspace = wsbuf + 2);

    a = attn_base();
    a.workspace = (void *)(uintptr_t)0x1001;
    check_older_caller(&attn_op, __LINE__, &a, ATTN_V1_SIZE, assert_attn_valid, ": workspace (");

    /* a struct_size ending inside the workspace field (no version's): the field reads as NULL,
     * not as its first bytes (0x1001 here, MISALIGNED). Valid calls: the invalid count stays. */
    _Alignas(256) unsigned char partial[sizeof a];
    for (size_t size = ATTN_V1_SIZE + 1; size % 8; size++) {
        memcpy(partial, &a, sizeof a);
        memcpy(partial, &size, sizeof size); /* struct_size comes first */
        assert_attn_valid(partial);
    }
}

/* workspace_bytes (since 0.9.0): 0 (the counter's 64 bytes) or at least 64, and only with a
 * workspace; a caller compiled against 0.8 ends its struct at the workspace, so whatever its
 * memory holds after it reads as 0. */
static void test_attention_workspace_bytes(void **state) {
    (void)state;
    tile_flash_attention_args a = attn_base();
    a.workspace = wsbuf;
    a.workspace_bytes = TILE_FLASH_ATTENTION_WORKSPACE_BYTES;
    assert_attn_valid(&a);
    a.workspace_bytes = BUF_BYTES;
    assert_attn_valid(&a);
    ATTN_CASE(A_ALL, INV, "workspace_bytes is 64 but workspace is NULL; give 0 without one",
              a.workspace_bytes = 64);
    ATTN_CASE(A_ALL, INV, "workspace_bytes is 63; it must be 0 or at least 64",
              a.workspace = wsbuf, a.workspace_bytes = 63);
    ATTN_CASE(A_ALL, INV, "workspace_bytes is 1;", a.workspace = wsbuf, a.workspace_bytes = 1);
    /* a misaligned workspace is named first */
    ATTN_CASE(A_ALL, MIS, ": workspace (", a.workspace = wsbuf + 4, a.workspace_bytes = 1);

    _Alignas(256) unsigned char old[1024];
    a = attn_base();
    memset(old, 0xee, sizeof old); /* workspace_bytes past the old struct: garbage */
    memcpy(old, &a, sizeof a);
    const size_t old_size = offsetof(tile_flash_attention_args, workspace_bytes);
    memcpy(old, &old_size, sizeof old_size);
    memset(old + old_size, 0xee, sizeof(size_t));
    assert_attn_valid(old);
    const size_t this_size = sizeof a; /* this version's size reads the garbage */
    memcpy(old, &this_size, sizeof this_size);
    args_expect(&attn_op, __LINE__, "this version's struct_size", A_ALL, old, INV,
                "but workspace is NULL");

    /* a struct_size ending inside workspace_bytes (no version's): it reads as 0, not as its
     * first bytes (63 here, refused). Valid calls: the invalid count stays. */
    a = attn_base();
    a.workspace = wsbuf;
    a.workspace_bytes = 63;
    for (size_t size = old_size + 1; size % 8; size++) {
        memcpy(old, &a, sizeof a);
        memcpy(old, &size, sizeof size);
        assert_attn_valid(old);
    }
}

/* tile_flash_attention_workspace_size: the counter's bytes where a call cannot split its keys
 * (too few keys, too many blocks), more where it can (varlen calls too), growing with the keys up to 32
 * splits; validated as explain (its workspace fields aside), *bytes untouched on failure. */
static void test_attention_workspace_size(void **state) {
    (void)state;
    tile_flash_attention_args a = attn_base();
    size_t bytes = 1;
    assert_int_equal(tile_flash_attention_workspace_size(&a, &bytes), TILE_STATUS_SUCCESS);
    assert_int_equal(bytes, TILE_FLASH_ATTENTION_WORKSPACE_BYTES);
    assert_int_equal(tile_flash_attention_workspace_size(&a, NULL), INV);
    assert_message("tile_flash_attention_workspace_size: bytes is NULL");
    assert_int_equal(tile_flash_attention_workspace_size(NULL, &bytes), INV);
    assert_message("tile_flash_attention_workspace_size: args is NULL");
    a.workspace = wsbuf + 4; /* not this function's: ignored */
    a.workspace_bytes = 3;
    assert_int_equal(tile_flash_attention_workspace_size(&a, &bytes), TILE_STATUS_SUCCESS);
    a = attn_base();
    a.batch = 0;
    bytes = 12345;
    assert_int_equal(tile_flash_attention_workspace_size(&a, &bytes), INV);
    assert_message("tile_flash_attention_workspace_size: batch is 0");
    assert_int_equal(bytes, 12345);
    a = attn_base();
    a.q = qbuf + 1; /* not even element-aligned */
    assert_int_equal(tile_flash_attention_workspace_size(&a, &bytes), MIS);
    assert_int_equal(bytes, 12345);
    /* decode: 2 sequences, 2 query heads over 1 (folded: 2 blocks of 2 rows), 32 dims; keys
     * the base's buffers need not hold (the size reads no tensor): 2 to 32 splits of 256 keys
     * or more */
    a = attn_base();
    a.seqlen_q = 1;
    size_t last = 0;
    const int64_t keys[] = {511, 512, 4096, 8192, 1 << 20};
    const int64_t splits[] = {1, 2, 16, 32, 32};
    for (int i = 0; i < 5; i++) {
        a.seqlen_k = keys[i];
        a.k_batch_stride = a.v_batch_stride = keys[i] * 32;
        assert_int_equal(tile_flash_attention_workspace_size(&a, &bytes), TILE_STATUS_SUCCESS);
        const size_t rows = (size_t)splits[i] * 2 * 2;
        const size_t want = splits[i] < 2 ? TILE_FLASH_ATTENTION_WORKSPACE_BYTES
                                          : TILE_FLASH_ATTENTION_WORKSPACE_ZEROED_BYTES +
                                                ((rows + 3) / 4 * 4 + rows * 32) * sizeof(float);
        assert_int_equal(bytes, want);
        assert_true(bytes >= last);
        last = bytes;
    }
    /* varlen: as fixed lengths of the longest sequences (no fold: 2 query heads a sequence) */
    attn_varlen(&a);
    assert_int_equal(tile_flash_attention_workspace_size(&a, &bytes), TILE_STATUS_SUCCESS);
    assert_int_equal(bytes, last);
    a.seqlen_k = 300; /* one split's keys */
    assert_int_equal(tile_flash_attention_workspace_size(&a, &bytes), TILE_STATUS_SUCCESS);
    assert_int_equal(bytes, TILE_FLASH_ATTENTION_WORKSPACE_BYTES);
    assert_attn_untouched();
}

static tile_status attn_init(void *args, size_t size) { return tile_flash_attention_init(args, size); }

/* tile_flash_attention_init: zeroes exactly struct_size bytes and sets struct_size. */
static void test_attention_init(void **state) {
    (void)state;
    check_args_init("tile_flash_attention_init", attn_init, sizeof(tile_flash_attention_args),
                    ATTN_V1_SIZE, offsetof(tile_flash_attention_args, lse), &attn_calls);
}

static void test_attention_call_count(void **state) {
    (void)state;
    /* docs/reliability.md counts these */
    print_message("attention validation: %d invalid calls\n", attn_calls);
}

/* ---------------------------------------------------------------- grouped matmul */

/* The grouped matmul operands: host buffers, patterned, never to be read or written. */
static _Alignas(256) unsigned char gabuf[BUF_BYTES];
static _Alignas(256) unsigned char gbbuf[BUF_BYTES];
static _Alignas(256) unsigned char gcbuf[BUF_BYTES];
static _Alignas(256) unsigned char gbiasbuf[BUF_BYTES];
static _Alignas(256) unsigned char goffbuf[BUF_BYTES];
static _Alignas(256) unsigned char gwsbuf[BUF_BYTES];

static unsigned char *const gmm_bufs[] = {gabuf, gbbuf, gcbuf, gbiasbuf, goffbuf, gwsbuf};
static const char *const gmm_buf_names[] = {"a", "b", "c", "bias", "offsets", "workspace"};
static const buffer_set gmm_buffers = {gmm_bufs, gmm_buf_names, 6, 0x3b};

/* tile_grouped_matmul_args as version 1 (0.4.0 to 0.6.0) defined them: up to offsets, where
 * 0.7.0's workspace begins. What a caller compiled against 0.6 passes as struct_size. */
#define GMM_V1_SIZE (offsetof(tile_grouped_matmul_args, offsets) + sizeof(const int32_t *))
_Static_assert(GMM_V1_SIZE == offsetof(tile_grouped_matmul_args, workspace),
               "workspace follows version 1's last field");

static int setup_gmm(void **state) {
    (void)state;
    poison_buffers(&gmm_buffers);
    return 0;
}

/* The three entry points that validate tile_grouped_matmul_args alike, as bits. explain
 * decides for sm_90 (no device needed), so it alone reaches dispatch's own checks here. */
enum {
    G_RUN = 1 << 0, /* tile_grouped_matmul */
    G_VAR = 1 << 1, /* tile_grouped_matmul_variant of a grouped_matmul variant (or -1: none yet) */
    G_EXP = 1 << 2, /* tile_grouped_matmul_explain(args, 90, decision) */
    G_ALL = (1 << ARGS_ENTRIES) - 1,
};
static const char *const gmm_entry_names[ARGS_ENTRIES] = {
    "tile_grouped_matmul", "tile_grouped_matmul_variant", "tile_grouped_matmul_explain"};

/* A valid call: bf16, 2 groups over 16 rows, n 32, k 16, B stored [groups, k, n], with a bias;
 * each case breaks one thing. A takes 512 bytes, B 2 KiB, C 1 KiB. */
static tile_grouped_matmul_args gmm_base(void) {
    tile_grouped_matmul_args a;
    memset(&a, 0x77, sizeof a); /* init must clear everything */
    assert_int_equal(tile_grouped_matmul_init(&a, sizeof a), TILE_STATUS_SUCCESS);
    a.dtype = BF16;
    a.groups = 2;
    a.total_m = 16;
    a.n = 32;
    a.k = 16;
    a.a = gabuf, a.b = gbbuf, a.c = gcbuf, a.bias = gbiasbuf;
    a.offsets = (const int32_t *)(void *)goffbuf;
    a.lda = 16;
    a.ldc = 32;
    a.b_group_stride = 16 * 32;
    a.b_k_stride = 32;
    a.b_n_stride = 1;
    a.bias_group_stride = 32;
    return a;
}

/* The base with B stored [groups, n, k] (k contiguous, torch's weight.t() view). */
static void gmm_kmajor(tile_grouped_matmul_args *a) {
    a->b_k_stride = 1;
    a->b_n_stride = 16;
}

static tile_status gmm_call(int e, const void *args) {
    const tile_grouped_matmul_args *a = args;
    tile_decision d = {.struct_size = sizeof d};
    switch (1 << e) {
    case G_RUN: return tile_grouped_matmul(a, NULL);
    case G_VAR:
        /* the arguments are checked before the index, which is -1 while the registry has no
         * grouped_matmul variant */
        return tile_grouped_matmul_variant(first_variant_of("grouped_matmul", BF16), a, NULL);
    default: return tile_grouped_matmul_explain(a, 90, &d);
    }
}

static int gmm_calls; /* invalid grouped matmul calls made, for docs/reliability.md */

static tile_status gmm_variant(int32_t variant, const void *args) {
    return tile_grouped_matmul_variant(variant, args, NULL);
}
static tile_status gmm_explain(const void *args, int32_t arch, tile_decision *decision) {
    return tile_grouped_matmul_explain(args, arch, decision);
}

static const args_op gmm_op = {"grouped_matmul", gmm_entry_names, gmm_call,
                               gmm_variant,      gmm_explain,     &gmm_buffers,
                               sizeof(tile_grouped_matmul_args), &gmm_calls};

/* GMM_CASE(entries, status, message, changes...): the base case with `changes` (statements on
 * `a`, separated by commas) must fail so through each of `entries`. */
#define GMM_CASE(entries, status, message, ...)                                                   \
    do {                                                                                          \
        tile_grouped_matmul_args a = gmm_base();                                                  \
        __VA_ARGS__;                                                                              \
        args_expect(&gmm_op, __LINE__, #__VA_ARGS__, entries, &a, status, message);               \
    } while (0)

/* The largest lda of the base case whose last element of A ends within INT64_MAX bytes:
 * 15 * lda + 16 elements of 2 bytes. */
#define GMM_EDGE ((INT64_MAX / 2 - 16) / 15)

/* Whether the registry holds grouped_matmul variants of bf16 (not until the kernels land). */
static int gmm_has_variants(void) { return first_variant_of("grouped_matmul", BF16) >= 0; }

/* args pass validation: explain for sm_90 succeeds, or (no variant takes them, or none is
 * compiled yet) fails in dispatch, whose messages start "no grouped_matmul". */
static void assert_gmm_valid(const void *a) {
    tile_decision d = {.struct_size = sizeof d};
    const tile_status s = tile_grouped_matmul_explain(a, 90, &d);
    if (s != TILE_STATUS_SUCCESS && !strstr(tile_last_error(), "no grouped_matmul bf16 variant")) {
        print_error("valid args failed: %s: %s\n", tile_status_string(s), tile_last_error());
        fail();
    }
    if (s == TILE_STATUS_SUCCESS) {
        assert_string_equal(tile_last_error(), "");
        tile_variant_info info = {.struct_size = sizeof info};
        assert_int_equal(tile_variant_get(d.variant, &info), TILE_STATUS_SUCCESS);
        assert_string_equal(info.op, "grouped_matmul");
        assert_int_equal(info.dtype, BF16);
    }
    assert_buffers_untouched(&gmm_buffers);
}

/* The base case and the edges the rules allow pass validation (tile_grouped_matmul itself
 * would launch on host pointers where a GPU exists; tests/host/test_no_driver.c runs it
 * without a driver). While no grouped_matmul variant is compiled, explain's answer is
 * ARCH_MISMATCH, after validation. */
static void test_grouped_matmul_valid(void **state) {
    (void)state;
    tile_grouped_matmul_args a = gmm_base();
    tile_decision d = {.struct_size = sizeof d};
    const int has_variants = gmm_has_variants(); /* introspection clears the last error */
    for (int32_t arch = 80; arch <= 90; arch += 10) {
        const tile_status s = tile_grouped_matmul_explain(&a, arch, &d);
        assert_int_equal(s, has_variants ? TILE_STATUS_SUCCESS : TILE_STATUS_ARCH_MISMATCH);
        if (s != TILE_STATUS_SUCCESS) assert_message("no grouped_matmul bf16 variant");
    }
    assert_gmm_valid(&a);
    gmm_kmajor(&a); /* B as [groups, n, k] */
    assert_gmm_valid(&a);
    a = gmm_base(); /* no rows at all: valid, nothing to compute */
    a.total_m = 0;
    assert_gmm_valid(&a);
    a = gmm_base(); /* one group: its B stride does not count, 0 included; nor the bias's */
    a.groups = 1;
    a.b_group_stride = 0;
    a.bias_group_stride = 0;
    assert_gmm_valid(&a);
    a = gmm_base(); /* the most groups */
    a.groups = 65536;
    a.b_group_stride = 16 * 32;
    assert_gmm_valid(&a);
    a = gmm_base(); /* no bias: bias_group_stride is not read */
    a.bias = NULL;
    a.bias_group_stride = -7;
    assert_gmm_valid(&a);
    a = gmm_base(); /* both B strides 1 where a dimension has one position */
    a.n = 1;
    a.ldc = 8;
    a.b_k_stride = a.b_n_stride = 1;
    a.b_group_stride = 16;
    a.bias = NULL;
    assert_gmm_valid(&a);
    a = gmm_base();
    a.k = 1;
    a.lda = 8;
    a.b_k_stride = a.b_n_stride = 1;
    a.b_group_stride = 32;
    assert_gmm_valid(&a);
    a = gmm_base(); /* B as [k, groups, n]: groups interleaved, no element shared */
    a.b_group_stride = 32;
    a.b_k_stride = 2 * 32;
    assert_gmm_valid(&a);
    a = gmm_base(); /* padded rows and n, k at their limit (2^31 - 256: a tile's end in int32) */
    a.total_m = 1;
    a.n = a.k = INT32_MAX - 255;
    a.lda = a.ldc = INT32_MAX;
    a.groups = 1;
    a.b_k_stride = INT32_MAX;
    a.bias = NULL;
    assert_gmm_valid(&a);
    a = gmm_base(); /* the largest A extent passes validation */
    a.lda = GMM_EDGE;
    assert_gmm_valid(&a);
}

static void test_grouped_matmul_arguments(void **state) {
    (void)state;
    /* dtype */
    GMM_CASE(G_ALL, UNS, "dtype 0 (f32)", a.dtype = F32);
    GMM_CASE(G_ALL, UNS, "dtype 7", a.dtype = (tile_dtype)7);
    GMM_CASE(G_ALL, UNS, "dtype -1", a.dtype = (tile_dtype)-1);
    GMM_CASE(G_ALL, UNS, "dtype 3", a.dtype = TILE_DTYPE_COUNT_);
    /* groups, rows, columns */
    GMM_CASE(G_ALL, INV, "groups is 0", a.groups = 0);
    GMM_CASE(G_ALL, INV, "groups is -1", a.groups = -1);
    GMM_CASE(G_ALL, INV, "groups is 65537", a.groups = 65537);
    GMM_CASE(G_ALL, INV, "groups is 2147483647", a.groups = INT32_MAX);
    GMM_CASE(G_ALL, INV, "groups is -2147483648", a.groups = INT32_MIN);
    GMM_CASE(G_ALL, INV, "total_m is -1", a.total_m = -1);
    GMM_CASE(G_ALL, INV, "total_m is -9223372036854775808", a.total_m = INT64_MIN);
    GMM_CASE(G_ALL, INV, "n is 0", a.n = 0);
    GMM_CASE(G_ALL, INV, "n is -5", a.n = -5);
    GMM_CASE(G_ALL, NSUP, "n 2147483648", a.n = T31, a.ldc = T31);
    GMM_CASE(G_ALL, NSUP, "n 2147483393", a.n = T31 - 255, a.ldc = T31);
    GMM_CASE(G_ALL, NSUP, "n 9223372036854775807", a.n = INT64_MAX);
    GMM_CASE(G_ALL, INV, "k is 0", a.k = 0);
    GMM_CASE(G_ALL, INV, "k is -1", a.k = -1);
    GMM_CASE(G_ALL, NSUP, "k 2147483648", a.k = T31, a.lda = T31);
    GMM_CASE(G_ALL, NSUP, "k 2147483393", a.k = T31 - 255, a.lda = T31);
    /* row strides of C and A: >= their rows, whatever total_m */
    GMM_CASE(G_ALL, INV, "ldc is 31", a.ldc = 31);
    GMM_CASE(G_ALL, INV, "ldc is 0", a.ldc = 0);
    GMM_CASE(G_ALL, INV, "ldc is -32", a.ldc = -32);
    GMM_CASE(G_ALL, INV, "ldc is 1", a.total_m = 1, a.ldc = 1);
    GMM_CASE(G_ALL, INV, "lda is 15", a.lda = 15);
    GMM_CASE(G_ALL, INV, "lda is -16", a.lda = -16);
    GMM_CASE(G_ALL, INV, "lda is 0", a.total_m = 0, a.lda = 0);
    /* B's contiguous dimension: exactly one unit stride, both only where n or k is 1 */
    GMM_CASE(G_ALL, INV, "b_k_stride is 32 and b_n_stride 2", a.b_n_stride = 2);
    GMM_CASE(G_ALL, INV, "b_k_stride is 32 and b_n_stride 0", a.b_n_stride = 0);
    GMM_CASE(G_ALL, INV, "b_k_stride is 0 and b_n_stride -1", a.b_k_stride = 0,
             a.b_n_stride = -1);
    GMM_CASE(G_ALL, INV, "b_k_stride and b_n_stride are both 1", a.b_k_stride = 1);
    GMM_CASE(G_ALL, INV, "both 1", a.b_k_stride = 1, a.n = 2, a.k = 2);
    /* offsets */
    GMM_CASE(G_ALL, INV, ": offsets is NULL", a.offsets = NULL);
}

static void test_grouped_matmul_tensors(void **state) {
    (void)state;
    /* NULL operands (bias may be NULL: test_grouped_matmul_valid) */
    GMM_CASE(G_ALL, INV, ": a is NULL", a.a = NULL);
    GMM_CASE(G_ALL, INV, ": b is NULL", a.b = NULL);
    GMM_CASE(G_ALL, INV, ": c is NULL", a.c = NULL);
    /* negative strides */
    GMM_CASE(G_ALL, INV, "b_group_stride is -1", a.b_group_stride = -1);
    GMM_CASE(G_ALL, INV, "b_group_stride is -512", a.groups = 1, a.b_group_stride = -512);
    GMM_CASE(G_ALL, INV, "b_k_stride is -32", a.b_k_stride = -32);
    GMM_CASE(G_ALL, INV, "b_n_stride is -16", gmm_kmajor(&a), a.b_n_stride = -16);
    GMM_CASE(G_ALL, INV, "b_n_stride is", gmm_kmajor(&a), a.b_n_stride = INT64_MIN);
    GMM_CASE(G_ALL, INV, "bias_group_stride is -1", a.bias_group_stride = -1);
    GMM_CASE(G_ALL, INV, "bias_group_stride is -32", a.groups = 1, a.bias_group_stride = -32);
    /* two elements of B (within a group or across groups) or of the bias at one address */
    GMM_CASE(G_ALL, INV, "b_k_stride is 16; it must be >= 32", a.b_k_stride = 16);
    GMM_CASE(G_ALL, INV, "b_n_stride is 8; it must be >= 16", gmm_kmajor(&a), a.b_n_stride = 8);
    GMM_CASE(G_ALL, INV, "b_group_stride is 0", a.b_group_stride = 0);
    GMM_CASE(G_ALL, INV, "b_group_stride is 256; it must be >= 512", a.b_group_stride = 256);
    GMM_CASE(G_ALL, INV, "b_group_stride is 511", gmm_kmajor(&a), a.b_group_stride = 511);
    GMM_CASE(G_ALL, INV, "b_k_stride is 64; it must be >= 96", a.b_group_stride = 32,
             a.b_k_stride = 64, a.groups = 3);
    GMM_CASE(G_ALL, INV, "bias_group_stride is 16; it must be >= 32", a.bias_group_stride = 16);
    GMM_CASE(G_ALL, INV, "bias_group_stride is 0", a.bias_group_stride = 0);
    /* int64 byte extents */
    GMM_CASE(G_ALL, INV, "a's extent (16 x lda", a.lda = INT64_MAX / 2);
    GMM_CASE(G_ALL, INV, "overflow", a.total_m = INT64_MAX / 16);
    GMM_CASE(G_ALL, INV, "b's extent (2 x b_group_stride", a.b_group_stride = INT64_MAX / 2);
    GMM_CASE(G_ALL, INV, "b's extent (16 x b_k_stride", a.b_k_stride = INT64_MAX / 8);
    GMM_CASE(G_ALL, INV, "c's extent (16 x ldc", a.ldc = INT64_MAX / 4);
    GMM_CASE(G_ALL, INV, "bias's extent", a.bias_group_stride = INT64_MAX / 2 - 5);
    /* the exact edge: A's last element ends one element past INT64_MAX bytes (one element
     * less passes: test_grouped_matmul_valid) */
    GMM_CASE(G_ALL, INV, "overflow", a.lda = GMM_EDGE + 1);
    /* pointers not aligned to their elements */
    GMM_CASE(G_ALL, MIS, ": a (", a.a = gabuf + 1);
    GMM_CASE(G_ALL, MIS, ": b (", a.b = gbbuf + 3);
    GMM_CASE(G_ALL, MIS, ": c (", a.dtype = F16, a.c = gcbuf + 255);
    GMM_CASE(G_ALL, MIS, ": bias (", a.bias = gbiasbuf + 1);
    GMM_CASE(G_ALL, MIS, ": offsets (", a.offsets = (const int32_t *)(void *)(goffbuf + 2));
    GMM_CASE(G_ALL, MIS, ": offsets (", a.offsets = (const int32_t *)(void *)(goffbuf + 1));
    /* element-aligned but below the 16 bytes every variant needs: dispatch's MISALIGNED,
     * naming the least aligned argument (explain for sm_90: no device needed). Only once the
     * registry holds grouped_matmul variants: until then explain says none is compiled. */
    if (!gmm_has_variants()) return;
    GMM_CASE(G_EXP, MIS, "the least aligned argument is a (", a.a = gabuf + 2);
    GMM_CASE(G_EXP, MIS, "the least aligned argument is b (", a.b = gbbuf + 8);
    GMM_CASE(G_EXP, MIS, "the least aligned argument is c (", a.c = gcbuf + 4);
    GMM_CASE(G_EXP, MIS, "the least aligned argument is bias (", a.bias = gbiasbuf + 6);
    GMM_CASE(G_EXP, MIS, "the least aligned argument is lda 20", a.lda = 20);
    GMM_CASE(G_EXP, MIS, "the least aligned argument is ldc 36", a.ldc = 36);
    GMM_CASE(G_EXP, MIS, "the least aligned argument is b_k_stride 36", a.b_k_stride = 36,
             a.b_group_stride = 16 * 36);
    GMM_CASE(G_EXP, MIS, "the least aligned argument is b_n_stride 20", gmm_kmajor(&a),
             a.b_n_stride = 20, a.b_group_stride = 32 * 20);
    GMM_CASE(G_EXP, MIS, "the least aligned argument is b_group_stride 516",
             a.b_group_stride = 516);
    GMM_CASE(G_EXP, MIS, "the least aligned argument is bias_group_stride 33",
             a.bias_group_stride = 33);
}

/* args itself, the decision, the variant index, and the order of the checks. */
static void test_grouped_matmul_entry_points(void **state) {
    (void)state;
    tile_grouped_matmul_args a = gmm_base(), broken = gmm_base();
    broken.a = NULL;
    const int32_t other[3] = {first_variant_of("softmax", BF16), first_variant_of("norm", BF16),
                              first_variant_of("attention", BF16)};
    check_args_entry_points(&gmm_op, &a, &broken, ": a is NULL", GMM_V1_SIZE,
                            offsetof(tile_grouped_matmul_args, offsets), 90, other);
    a.n = 0;
    assert_int_equal(tile_grouped_matmul_variant(-1, &a, NULL), INV);
    assert_message("n is 0");
    gmm_calls++;
    /* the first bad argument in the documented order is the one reported */
    a = gmm_base();
    a.dtype = F32;
    a.groups = 0;
    a.a = NULL;
    args_expect(&gmm_op, __LINE__, "dtype first", G_ALL, &a, UNS, "dtype 0");
    a.dtype = BF16;
    args_expect(&gmm_op, __LINE__, "groups before tensors", G_ALL, &a, INV, "groups is 0");
    a = gmm_base();
    a.total_m = -1;
    a.n = 0;
    a.k = T31;
    args_expect(&gmm_op, __LINE__, "total_m before n", G_ALL, &a, INV, "total_m is -1");
    a.total_m = 16;
    args_expect(&gmm_op, __LINE__, "n before k", G_ALL, &a, INV, "n is 0");
    a = gmm_base();
    a.k = T31;
    a.ldc = 0;
    args_expect(&gmm_op, __LINE__, "k before ldc", G_ALL, &a, NSUP, "k 2147483648");
    a = gmm_base();
    a.ldc = 0;
    a.lda = 0;
    a.b_n_stride = 5;
    args_expect(&gmm_op, __LINE__, "ldc before lda", G_ALL, &a, INV, "ldc is 0");
    a.ldc = 32;
    args_expect(&gmm_op, __LINE__, "lda before B's layout", G_ALL, &a, INV, "lda is 0");
    a.lda = 16;
    a.offsets = NULL;
    args_expect(&gmm_op, __LINE__, "B's layout before offsets", G_ALL, &a, INV,
                "b_n_stride 5");
    a.b_n_stride = 1;
    a.a = NULL;
    args_expect(&gmm_op, __LINE__, "offsets before the tensors", G_ALL, &a, INV,
                "offsets is NULL");
    a = gmm_base();
    a.a = gabuf + 1;
    a.b = NULL;
    a.c = NULL;
    args_expect(&gmm_op, __LINE__, "a before b", G_ALL, &a, MIS, ": a (");
    a.a = gabuf;
    a.b = gbbuf;
    a.b_group_stride = -1;
    args_expect(&gmm_op, __LINE__, "b before c", G_ALL, &a, INV, "b_group_stride is -1");
    a = gmm_base();
    a.c = gcbuf + 1;
    a.bias_group_stride = 0;
    a.offsets = (const int32_t *)(void *)(goffbuf + 1);
    args_expect(&gmm_op, __LINE__, "c before bias", G_ALL, &a, MIS, ": c (");
    a.c = gcbuf;
    args_expect(&gmm_op, __LINE__, "bias before offsets' alignment", G_ALL, &a, INV,
                "bias_group_stride is 0");
    a.bias_group_stride = 32;
    a.workspace = gwsbuf + 1;
    args_expect(&gmm_op, __LINE__, "offsets' alignment before workspace's", G_ALL, &a, MIS,
                ": offsets (");
    assert_buffers_untouched(&gmm_buffers);
}

/* The workspace (since 0.7.0): NULL (init's) or 8-byte aligned passes, and is never read or
 * written here; any other address is MISALIGNED, naming it, before the device and dispatch.
 * A caller compiled against 0.6 passes version 1's struct_size, which ends where the workspace
 * begins: whatever its memory holds there reads as NULL, so a misaligned value is not
 * reported. */
static void test_grouped_matmul_workspace(void **state) {
    (void)state;
    tile_grouped_matmul_args a = gmm_base();
    check_workspace_accepted(&a, &a.workspace, gwsbuf, assert_gmm_valid);
    GMM_CASE(G_ALL, MIS, ": workspace (", a.workspace = (void *)(uintptr_t)0x1001);
    GMM_CASE(G_ALL, MIS, "is not 8-byte aligned (its tile counter is 64-bit)",
             a.workspace = gwsbuf + 4);
    GMM_CASE(G_ALL, MIS, ": workspace (", a.workspace = gwsbuf + 255);
    /* before dispatch's MISALIGNED (a only element-aligned) */
    GMM_CASE(G_ALL, MIS, ": workspace (", a.a = gabuf + 2, a.workspace = gwsbuf + 2);

    /* a 0.6 caller, with garbage where this version's workspace is */
    a = gmm_base();
    a.workspace = (void *)(uintptr_t)0x1001;
    check_older_caller(&gmm_op, __LINE__, &a, GMM_V1_SIZE, assert_gmm_valid, ": workspace (");

    /* a struct_size ending inside the workspace field (no version's): the field reads as NULL
     * too, not as its first bytes (0x1001 here, MISALIGNED; an aligned remnant would have
     * reached the kernels as their tile counter). Valid calls: the invalid count stays. */
    _Alignas(256) unsigned char partial[sizeof a];
    for (size_t size = GMM_V1_SIZE + 1; size < sizeof a; size++) {
        memcpy(partial, &a, sizeof a);
        memcpy(partial, &size, sizeof size); /* struct_size comes first */
        assert_gmm_valid(partial);
    }
}

static tile_status gmm_init(void *args, size_t size) { return tile_grouped_matmul_init(args, size); }

/* tile_grouped_matmul_init: zeroes exactly struct_size bytes and sets struct_size. */
static void test_grouped_matmul_init(void **state) {
    (void)state;
    check_args_init("tile_grouped_matmul_init", gmm_init, sizeof(tile_grouped_matmul_args),
                    GMM_V1_SIZE, offsetof(tile_grouped_matmul_args, offsets), &gmm_calls);
}

static void test_grouped_matmul_call_count(void **state) {
    (void)state;
    /* docs/reliability.md counts these */
    print_message("grouped matmul validation: %d invalid calls%s\n", gmm_calls,
                  gmm_has_variants() ? "" : " (no grouped_matmul variant compiled: 10 explain "
                                            "cases of dispatch's MISALIGNED not run)");
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
        cmocka_unit_test_setup(test_norm_row_arguments, setup_norm),
        cmocka_unit_test_setup(test_norm_operands, setup_norm),
        cmocka_unit_test_setup(test_norm_scalars_and_kinds, setup_norm),
        cmocka_unit_test_setup(test_norm_args_struct, setup_norm),
        cmocka_unit_test_setup(test_norm_variant_index, setup_norm),
        cmocka_unit_test_setup(test_norm_first_bad_argument_wins, setup_norm),
        cmocka_unit_test_setup(test_norm_explain_arguments, setup_norm),
        cmocka_unit_test_setup(test_add_norm_explain, setup_norm),
        cmocka_unit_test(test_norm_call_count),
        cmocka_unit_test_setup(test_attention_valid, setup_attn),
        cmocka_unit_test_setup(test_attention_arguments, setup_attn),
        cmocka_unit_test_setup(test_attention_tensors, setup_attn),
        cmocka_unit_test_setup(test_attention_entry_points, setup_attn),
        cmocka_unit_test_setup(test_attention_workspace, setup_attn),
        cmocka_unit_test_setup(test_attention_workspace_bytes, setup_attn),
        cmocka_unit_test_setup(test_attention_workspace_size, setup_attn),
        cmocka_unit_test(test_attention_init),
        cmocka_unit_test(test_attention_call_count),
        cmocka_unit_test_setup(test_grouped_matmul_valid, setup_gmm),
        cmocka_unit_test_setup(test_grouped_matmul_arguments, setup_gmm),
        cmocka_unit_test_setup(test_grouped_matmul_tensors, setup_gmm),
        cmocka_unit_test_setup(test_grouped_matmul_entry_points, setup_gmm),
        cmocka_unit_test_setup(test_grouped_matmul_workspace, setup_gmm),
        cmocka_unit_test(test_grouped_matmul_init),
        cmocka_unit_test(test_grouped_matmul_call_count),
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
