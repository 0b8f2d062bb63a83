/* tile_layernorm, tile_rmsnorm, tile_residual_dropout, tile_residual_dropout_norm: one family
 * of kernels (op "norm", kernels/norm.tile) behind all four. Each entry point fills a
 * tile_add_norm_args, which one validator checks and one launcher turns into the kernels'
 * argument block. */
#include <math.h>

#include "internal.h"
#include "norm_args.h"

static const char norm_op[] = "norm";
static const char residual_dropout_table[] = "residual_dropout"; /* a table op: tuning_parse.c */

/* The fields of tile_add_norm_args as version 1 defined them (callers compiled against v1 pass
 * this size, and keep working when fields are appended). */
#define TILE_ADD_NORM_ARGS_V1_SIZE (offsetof(tile_add_norm_args, rstd) + sizeof(float *))
/* tile_copy_versioned copies whole 8-byte words: every version's size must be a multiple */
_Static_assert(TILE_ADD_NORM_ARGS_V1_SIZE % 8 == 0 && sizeof(tile_add_norm_args) % 8 == 0,
               "tile_add_norm_args' versions end on 8-byte words");

/* Which operands an entry point takes, and the names its caller knows them by (messages name
 * the caller's arguments: tile_residual_dropout's y is the kernels' s, tile_layernorm's bias
 * their norm_bias). */
typedef struct norm_entry {
    const char *fn;
    int needs_residual;
    const char *s_name, *ld_s_name, *norm_bias_name;
} norm_entry;

/* Validates a (every rule of fusedops.h's "Norms" section) and computes the alignment every
 * operand allows. */
static tile_status check_args(const norm_entry *e, const tile_add_norm_args *a, int32_t *align) {
    const char *fn = e->fn;
    if ((unsigned)a->norm >= TILE_NORM_COUNT_)
        return tile_fail(TILE_STATUS_INVALID_ARGUMENT,
                         "%s: norm is %d; it must be TILE_NORM_NONE, _LAYER or _RMS", fn,
                         (int)a->norm);
    /* The primary output: y where there is a norm, else s. */
    const int has_norm = a->norm != TILE_NORM_NONE;
    void *out = has_norm ? a->y : a->s;
    const int64_t ld_out = has_norm ? a->ld_y : a->ld_s;
    tile_status s = tile_check_rowwise_named(fn, has_norm ? "y" : e->s_name,
                                             has_norm ? "ld_y" : e->ld_s_name, a->dtype, out, a->x,
                                             a->rows, a->cols, ld_out, a->ld_x, align);
    if (s != TILE_STATUS_SUCCESS) return s;
    const size_t elem = tile_dtype_size(a->dtype);
    if (has_norm && a->s &&
        (s = tile_check_operand(fn, "s", "ld_s", a->s, a->rows, a->cols, a->ld_s, elem, align)))
        return s;
    if ((a->residual || e->needs_residual) &&
        (s = tile_check_operand(fn, "residual", "ld_residual", a->residual, a->rows, a->cols,
                                a->ld_residual, elem, align)))
        return s;
    if ((s = tile_check_vector(fn, "bias", a->bias, a->cols, elem, align)) ||
        (s = tile_check_vector(fn, "weight", a->weight, a->cols, elem, align)) ||
        (s = tile_check_vector(fn, e->norm_bias_name, a->norm_bias, a->cols, elem, align)))
        return s;
    if (a->mask && (s = tile_check_operand(fn, "mask", "cols", a->mask, a->rows, a->cols, a->cols,
                                           1, &(int32_t){256})))
        return s;
    int32_t stats_align = 256; /* per-row floats: their own alignment, not the tiles' */
    if ((s = tile_check_vector(fn, "mean", a->mean, a->rows, sizeof(float), &stats_align)) ||
        (s = tile_check_vector(fn, "rstd", a->rstd, a->rows, sizeof(float), &stats_align)))
        return s;
    if (!(a->p >= 0.0f && a->p < 1.0f))
        return tile_fail(TILE_STATUS_INVALID_ARGUMENT, "%s: p is %g; it must be in [0, 1)", fn,
                         (double)a->p);
    if (has_norm && !(a->eps >= 0.0f && isfinite(a->eps)))
        return tile_fail(TILE_STATUS_INVALID_ARGUMENT,
                         "%s: eps is %g; it must be finite and >= 0", fn, (double)a->eps);
    if (a->norm == TILE_NORM_RMS && a->norm_bias)
        return tile_fail(TILE_STATUS_INVALID_ARGUMENT,
                         "%s: %s is given for RMSNorm, which has no shift", fn, e->norm_bias_name);
    if (a->norm == TILE_NORM_RMS && a->mean)
        return tile_fail(TILE_STATUS_INVALID_ARGUMENT,
                         "%s: mean is given for RMSNorm, which computes no mean", fn);
    /* Without a residual stream output, s is x itself: nothing may be added to it. */
    if (has_norm && !a->s && (a->residual || a->bias || a->p > 0.0f || a->mask))
        return tile_fail(TILE_STATUS_INVALID_ARGUMENT,
                         "%s: s is NULL, but residual, bias or dropout change x; s receives "
                         "their result",
                         fn);
    if (!has_norm && (a->y || a->weight || a->norm_bias || a->mean || a->rstd))
        return tile_fail(TILE_STATUS_INVALID_ARGUMENT,
                         "%s: y, weight, norm_bias, mean and rstd need a norm (norm is "
                         "TILE_NORM_NONE)",
                         fn);
    /* In place is one operand with one stride; other overlaps are the caller's to avoid. */
    if (a->s && a->s == a->x && a->ld_s != a->ld_x)
        return tile_fail(TILE_STATUS_INVALID_ARGUMENT,
                         "%s: %s == x (in place) needs %s == ld_x, got %lld and %lld", fn,
                         e->s_name, e->ld_s_name, (long long)a->ld_s, (long long)a->ld_x);
    if (a->s && a->s == a->residual && a->ld_s != a->ld_residual)
        return tile_fail(TILE_STATUS_INVALID_ARGUMENT,
                         "%s: %s == residual (in place) needs %s == ld_residual, got %lld and "
                         "%lld",
                         fn, e->s_name, e->ld_s_name, (long long)a->ld_s,
                         (long long)a->ld_residual);
    if (has_norm && a->y == a->residual && a->ld_y != a->ld_residual)
        return tile_fail(TILE_STATUS_INVALID_ARGUMENT,
                         "%s: y == residual (in place) needs ld_y == ld_residual, got %lld and "
                         "%lld",
                         fn, (long long)a->ld_y, (long long)a->ld_residual);
    return TILE_STATUS_SUCCESS;
}

static tile_status launch(const tile_device *device, int32_t variant, const tile_add_norm_args *a,
                          tile_stream stream) {
    /* Keep iff the element's 16-bit random draw >= p * 2^16 (docs/api.md); a threshold of 0
     * (p < 2^-16) draws nothing and is the identity. */
    const uint32_t threshold = (uint32_t)((double)a->p * 65536.0);
    tile_norm_kernel_args k = {
        .y = a->norm != TILE_NORM_NONE ? a->y : NULL,
        .s = a->s,
        .x = a->x,
        .residual = a->residual,
        .bias = a->bias,
        .weight = a->weight,
        .norm_bias = a->norm_bias,
        .mask = a->mask,
        .mean = a->mean,
        .rstd = a->rstd,
        .rows = a->rows,
        .cols = a->cols,
        .ld_y = a->ld_y,
        .ld_s = a->ld_s,
        .ld_x = a->ld_x,
        .ld_residual = a->ld_residual,
        .seed = a->seed,
        .offset = a->offset,
        .keep_threshold = threshold,
        .keep_scale = threshold ? 1.0f / (1.0f - a->p) : 1.0f,
        .eps = a->eps,
        .norm = (int32_t)a->norm,
    };
    void *args[] = {&k};
    const tile_variant *v = &tile_registry[variant];
    return tile_launch(device, variant, tile_row_programs(v, a->rows, a->cols), stream,
                       args);
}

/* The dispatch problem of a validated call (align: what check_args found). */
static tile_problem problem_of(const tile_add_norm_args *a, int32_t align) {
    /* Kernels without dropout hold fewer registers; calls that need it get the ones with it.
     * Norm-less calls (one pass, no row statistics) have table lines of their own, looked up
     * before the norms' (tuning_parse.h). */
    return (tile_problem){.op = norm_op, .dtype = a->dtype, .rows = a->rows, .cols = a->cols,
                          .align = align,
                          .table_op = a->norm == TILE_NORM_NONE ? residual_dropout_table : NULL,
                          .features = a->p > 0.0f || a->mask ? TILE_FEATURE_DROPOUT : 0,
                          .optional_inputs = a->bias || a->residual || a->s,
                          .pointwise = a->norm == TILE_NORM_NONE};
}

/* Validate, dispatch (or, forced, check that `variant` may run it), launch. */
static tile_status run(const norm_entry *e, int forced, int32_t variant,
                       const tile_add_norm_args *a, tile_stream stream) {
    int32_t align;
    tile_status s = check_args(e, a, &align);
    if (s != TILE_STATUS_SUCCESS) return s;
    if (forced && (s = tile_check_variant_index(e->fn, variant, norm_op, a->dtype))) return s;
    const tile_device *device;
    if ((s = tile_current_device(&device)) != TILE_STATUS_SUCCESS) return s;
    tile_problem p = problem_of(a, align);
    tile_problem_on_device(&p, device);
    if (forced) s = tile_check_variant(e->fn, variant, &p);
    else s = tile_dispatch_cached(&p, &variant);
    if (s != TILE_STATUS_SUCCESS) return s;
    return launch(device, variant, a, stream);
}

tile_status tile_layernorm(tile_dtype dtype, void *y, const void *x, const void *weight,
                           const void *bias, float *mean, float *rstd, int64_t rows, int64_t cols,
                           int64_t ld_y, int64_t ld_x, float eps, tile_stream stream) {
    tile_begin_call();
    static const norm_entry e = {"tile_layernorm", 0, "s", "ld_s", "bias"};
    const tile_add_norm_args a = {.struct_size = sizeof a, .dtype = dtype, .norm = TILE_NORM_LAYER,
                                  .rows = rows, .cols = cols, .y = y, .ld_y = ld_y, .x = x,
                                  .ld_x = ld_x, .weight = weight, .norm_bias = bias, .eps = eps,
                                  .mean = mean, .rstd = rstd};
    return run(&e, 0, -1, &a, stream);
}

tile_status tile_rmsnorm(tile_dtype dtype, void *y, const void *x, const void *weight, float *rstd,
                         int64_t rows, int64_t cols, int64_t ld_y, int64_t ld_x, float eps,
                         tile_stream stream) {
    tile_begin_call();
    static const norm_entry e = {"tile_rmsnorm", 0, "s", "ld_s", "norm_bias"};
    const tile_add_norm_args a = {.struct_size = sizeof a, .dtype = dtype, .norm = TILE_NORM_RMS,
                                  .rows = rows, .cols = cols, .y = y, .ld_y = ld_y, .x = x,
                                  .ld_x = ld_x, .weight = weight, .eps = eps, .rstd = rstd};
    return run(&e, 0, -1, &a, stream);
}

tile_status tile_residual_dropout(tile_dtype dtype, void *y, const void *x, const void *residual,
                                  const void *bias, uint8_t *mask, int64_t rows, int64_t cols,
                                  int64_t ld_y, int64_t ld_x, int64_t ld_residual, float p,
                                  uint64_t seed, uint64_t offset, tile_stream stream) {
    tile_begin_call();
    static const norm_entry e = {"tile_residual_dropout", 1, "y", "ld_y", "norm_bias"};
    /* The norm-less kernel writes its result as s. */
    const tile_add_norm_args a = {.struct_size = sizeof a, .dtype = dtype, .norm = TILE_NORM_NONE,
                                  .rows = rows, .cols = cols, .s = y, .ld_s = ld_y, .x = x,
                                  .ld_x = ld_x, .residual = residual, .ld_residual = ld_residual,
                                  .bias = bias, .p = p, .seed = seed, .offset = offset,
                                  .mask = mask};
    return run(&e, 0, -1, &a, stream);
}

/* Copies the caller's args (of the size they were compiled with) into a full, zeroed struct. */
static tile_status copy_args(const char *fn, const tile_add_norm_args *args,
                             tile_add_norm_args *a) {
    return tile_copy_versioned(fn, args, TILE_ADD_NORM_ARGS_V1_SIZE, "tile_add_norm_args", a,
                               sizeof *a);
}

tile_status tile_residual_dropout_norm(const tile_add_norm_args *args, tile_stream stream) {
    tile_begin_call();
    static const norm_entry e = {"tile_residual_dropout_norm", 1, "s", "ld_s", "norm_bias"};
    tile_add_norm_args a;
    tile_status s = copy_args(e.fn, args, &a);
    if (s != TILE_STATUS_SUCCESS) return s;
    if (a.norm != TILE_NORM_LAYER && a.norm != TILE_NORM_RMS)
        return tile_fail(TILE_STATUS_INVALID_ARGUMENT,
                         "%s: norm is %d; it must be TILE_NORM_LAYER or TILE_NORM_RMS", e.fn,
                         (int)a.norm);
    if (!a.s) return tile_fail(TILE_STATUS_INVALID_ARGUMENT, "%s: s is NULL", e.fn);
    if (!a.residual) return tile_fail(TILE_STATUS_INVALID_ARGUMENT, "%s: residual is NULL", e.fn);
    return run(&e, 0, -1, &a, stream);
}

tile_status tile_add_norm_variant(int32_t variant, const tile_add_norm_args *args,
                                  tile_stream stream) {
    tile_begin_call();
    static const norm_entry e = {"tile_add_norm_variant", 0, "s", "ld_s", "norm_bias"};
    tile_add_norm_args a;
    tile_status s = copy_args(e.fn, args, &a);
    if (s != TILE_STATUS_SUCCESS) return s;
    return run(&e, 1, variant, &a, stream);
}

tile_status tile_add_norm_explain(const tile_add_norm_args *args, int32_t arch,
                                  tile_decision *decision) {
    tile_begin_call();
    static const norm_entry e = {"tile_add_norm_explain", 0, "s", "ld_s", "norm_bias"};
    tile_status s = tile_check_decision(e.fn, decision);
    if (s != TILE_STATUS_SUCCESS) return s;
    tile_add_norm_args a;
    if ((s = copy_args(e.fn, args, &a)) != TILE_STATUS_SUCCESS) return s;
    int32_t align;
    if ((s = check_args(&e, &a, &align)) != TILE_STATUS_SUCCESS) return s;
    tile_problem p = problem_of(&a, align);
    return tile_explain_problem(e.fn, &p, arch, decision);
}

tile_status tile_norm_explain(tile_dtype dtype, int64_t rows, int64_t cols, int64_t ld_y,
                              int64_t ld_x, int32_t pointer_align, int32_t arch,
                              tile_decision *decision) {
    return tile_explain_rowwise("tile_norm_explain", norm_op, dtype, rows, cols, ld_y, ld_x,
                                pointer_align, arch, decision);
}
