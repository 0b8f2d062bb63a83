/* tile_grouped_matmul: validate, dispatch, launch (kernels/grouped_matmul.tile, op
 * "grouped_matmul"). C_g = A_g B_g (+ bias_g) for the groups of a mixture-of-experts layer. */
#include <stdlib.h>
#include <string.h>

#include "gemm_args.h"
#include "internal.h"

static const char grouped_matmul_op[] = "grouped_matmul";

/* The fields of tile_grouped_matmul_args as version 1 defined them. */
#define TILE_GROUPED_MATMUL_ARGS_V1_SIZE \
    (offsetof(tile_grouped_matmul_args, offsets) + sizeof(const int32_t *))
/* tile_copy_versioned copies whole 8-byte words: every version's size must be a multiple */
_Static_assert(TILE_GROUPED_MATMUL_ARGS_V1_SIZE % 8 == 0 &&
                   sizeof(tile_grouped_matmul_args) % 8 == 0,
               "tile_grouped_matmul_args' versions end on 8-byte words");

/* Largest group count: the kernels keep one int32 row end per group, searched per tile. */
#define TILE_GROUPED_MATMUL_MAX_GROUPS 65536

tile_status tile_grouped_matmul_init(tile_grouped_matmul_args *args, size_t struct_size) {
    tile_begin_call();
    return tile_init_versioned("tile_grouped_matmul_init", args, struct_size,
                               TILE_GROUPED_MATMUL_ARGS_V1_SIZE, "tile_grouped_matmul_args",
                               sizeof(tile_grouped_matmul_args));
}

/* Copies the caller's args (of the size they were compiled with) into a full, zeroed struct. */
static tile_status copy_args(const char *fn, const tile_grouped_matmul_args *args,
                             tile_grouped_matmul_args *a) {
    return tile_copy_versioned(fn, args, TILE_GROUPED_MATMUL_ARGS_V1_SIZE,
                               "tile_grouped_matmul_args", a, sizeof *a);
}

/* B_g's contiguous dimension: 1 for k (B stored [groups, n, k]), 0 for n ([groups, k, n]).
 * Both strides 1 names one only where the other dimension has a single position. */
static int b_is_kmajor(const tile_grouped_matmul_args *a) {
    return a->b_k_stride == 1 && (a->b_n_stride != 1 || a->n == 1);
}

/* Validates *a (every rule in fusedops.h) and computes the alignment of every tensor. */
static tile_status check_args(const char *fn, const tile_grouped_matmul_args *a,
                              tile_alignment *align) {
    if (a->dtype != TILE_DTYPE_F16 && a->dtype != TILE_DTYPE_BF16)
        return tile_fail(TILE_STATUS_UNSUPPORTED_DTYPE,
                         "%s: dtype %d (%s) is not TILE_DTYPE_F16 or TILE_DTYPE_BF16", fn,
                         (int)a->dtype, tile_dtype_string(a->dtype));
    if (a->groups < 1 || a->groups > TILE_GROUPED_MATMUL_MAX_GROUPS)
        return tile_fail(TILE_STATUS_INVALID_ARGUMENT, "%s: groups is %d; it must be in [1, %d]",
                         fn, a->groups, TILE_GROUPED_MATMUL_MAX_GROUPS);
    if (a->total_m < 0)
        return tile_fail(TILE_STATUS_INVALID_ARGUMENT, "%s: total_m is %lld; it must be >= 0", fn,
                         (long long)a->total_m);
    const int64_t dims[2] = {a->n, a->k};
    static const char *const dim_names[2] = {"n", "k"};
    for (int i = 0; i < 2; i++) {
        if (dims[i] < 1)
            return tile_fail(TILE_STATUS_INVALID_ARGUMENT, "%s: %s is %lld; it must be >= 1", fn,
                             dim_names[i], (long long)dims[i]);
        /* The kernels index within a row and a tile in int32, a tile's end included (a tile is
         * at most 256 columns or 64 k wide): room for it below 2^31. */
        if (dims[i] > TILE_MAX_TILED_SIZE)
            return tile_fail(TILE_STATUS_NOT_SUPPORTED,
                             "%s: %s %lld is not supported; it must be at most 2^31 - 256", fn,
                             dim_names[i], (long long)dims[i]);
    }
    if (a->ldc < a->n)
        return tile_fail(TILE_STATUS_INVALID_ARGUMENT, "%s: ldc is %lld; it must be >= n (%lld)",
                         fn, (long long)a->ldc, (long long)a->n);
    if (a->lda < a->k)
        return tile_fail(TILE_STATUS_INVALID_ARGUMENT, "%s: lda is %lld; it must be >= k (%lld)",
                         fn, (long long)a->lda, (long long)a->k);
    if (a->b_k_stride != 1 && a->b_n_stride != 1)
        return tile_fail(TILE_STATUS_INVALID_ARGUMENT,
                         "%s: b_k_stride is %lld and b_n_stride %lld; one of them must be 1 "
                         "(B_g contiguous along k or n)",
                         fn, (long long)a->b_k_stride, (long long)a->b_n_stride);
    if (a->b_k_stride == 1 && a->b_n_stride == 1 && a->n > 1 && a->k > 1)
        return tile_fail(TILE_STATUS_INVALID_ARGUMENT,
                         "%s: b_k_stride and b_n_stride are both 1; only one of them may be 1 "
                         "unless n or k is 1",
                         fn);
    if (!a->offsets) return tile_fail(TILE_STATUS_INVALID_ARGUMENT, "%s: offsets is NULL", fn);

    const int kmajor = b_is_kmajor(a);
    const tile_tensor tensors[3] = {
        {.name = "a", .p = a->a, .axes = 1, .stride_names = {"lda"}, .strides = {a->lda},
         .counts = {a->total_m}, .inner_name = "k", .inner = a->k},
        /* groups of B_g, each [k, n] or [n, k] by its unit stride: no two elements may share an
         * address (groups included: a group stride of 0 needs groups == 1) */
        {.name = "b", .p = a->b, .axes = 2,
         .stride_names = {"b_group_stride", kmajor ? "b_n_stride" : "b_k_stride"},
         .strides = {a->b_group_stride, kmajor ? a->b_n_stride : a->b_k_stride},
         .counts = {a->groups, kmajor ? a->n : a->k}, .inner_name = kmajor ? "k" : "n",
         .inner = kmajor ? a->k : a->n, .distinct = 1},
        {.name = "c", .p = a->c, .axes = 1, .stride_names = {"ldc"}, .strides = {a->ldc},
         .counts = {a->total_m}, .inner_name = "n", .inner = a->n, .distinct = 1},
    };
    const size_t elem = tile_dtype_size(a->dtype);
    *align = (tile_alignment){.bytes = 256};
    for (int i = 0; i < 3; i++) {
        tile_status s = tile_check_tensor(fn, &tensors[i], elem, align);
        if (s != TILE_STATUS_SUCCESS) return s;
    }
    if (a->bias) { /* optional: bias_group_stride is not read without it */
        const tile_tensor bias = {.name = "bias", .p = a->bias, .axes = 1,
                                  .stride_names = {"bias_group_stride"},
                                  .strides = {a->bias_group_stride}, .counts = {a->groups},
                                  .inner_name = "n", .inner = a->n, .distinct = 1};
        tile_status s = tile_check_tensor(fn, &bias, elem, align);
        if (s != TILE_STATUS_SUCCESS) return s;
    }
    if ((uintptr_t)a->offsets % sizeof(int32_t))
        return tile_fail(TILE_STATUS_MISALIGNED, "%s: offsets (%p) is not aligned to its 4-byte int32s",
                         fn, (const void *)a->offsets);
    if ((uintptr_t)a->workspace % sizeof(unsigned long long))
        return tile_fail(TILE_STATUS_MISALIGNED,
                         "%s: workspace (%p) is not 8-byte aligned (its tile counter is 64-bit)", fn,
                         a->workspace);
    return TILE_STATUS_SUCCESS;
}

/* The problem as dispatch sees it: rows are the average group's rows (what a tile's height is
 * chosen for; the offsets are device data, never read here), cols the columns of C. */
static tile_problem problem_of(const tile_grouped_matmul_args *a, int32_t align) {
    const int64_t rows = a->total_m / a->groups;
    /* rows past 2^31 - 1 no tensor map addresses (encode_maps): explain, the call and a forced
     * variant then agree on the variants without one */
    return (tile_problem){.op = grouped_matmul_op, .dtype = a->dtype,
                          .rows = rows > 1 ? rows : 1, .cols = a->n, .align = align,
                          .no_tensor_maps = a->total_m > INT32_MAX};
}

/* The tensor maps of a warp-specialized variant (kernels/grouped_matmul.grid, family tma): A in
 * boxes of 64 k x BLOCK_M rows and of 64 k x 8 rows (half tiles); B K-major in boxes of 64 k x
 * BLOCK_N, N-major in 64 n x 64 k; C, where its layout allows, in boxes of 64 n x 64 rows (the
 * epilogue's copies out). */
static tile_status encode_maps(const char *fn, const tile_grouped_matmul_args *a, int kmajor,
                               int64_t block_m, int64_t block_n, tile_gemm_kernel_args *k) {
    if (a->total_m > INT32_MAX) /* (a guard: dispatch passes such calls over, problem_of) */
        return tile_fail(TILE_STATUS_NOT_SUPPORTED,
                         "%s: total_m %lld exceeds the 2^31 - 1 rows tensor-map variants address",
                         fn, (long long)a->total_m);
    const int64_t a_dims[2] = {a->k, a->total_m},
                  a_strides[1] = {tile_lone_axis_stride(a->lda, a->total_m, NULL, NULL, 0, a->k)};
    const uint32_t a_box[2] = {64, (uint32_t)block_m};
    tile_status s = tile_encode_tensor_map(fn, "a", &k->a_map, a->dtype, a->a, 2, a_dims, a_strides, a_box);
    if (s != TILE_STATUS_SUCCESS) return s;
    const uint32_t a_rows_box[2] = {64, 8};
    s = tile_encode_tensor_map(fn, "a", &k->a_rows_map, a->dtype, a->a, 2, a_dims, a_strides, a_rows_box);
    if (s != TILE_STATUS_SUCCESS) return s;
    const int64_t inner = kmajor ? a->k : a->n, outer = kmajor ? a->n : a->k;
    const int64_t b_ld = tile_lone_axis_stride(k->b_ld, outer, NULL, NULL, 0, inner);
    const int64_t group = tile_lone_axis_stride(a->b_group_stride, a->groups, &b_ld, &outer, 1, inner);
    const int64_t b_dims[3] = {inner, outer, a->groups}, b_strides[2] = {b_ld, group};
    const uint32_t b_box[3] = {64, kmajor ? (uint32_t)block_n : 64, 1};
    s = tile_encode_tensor_map(fn, "b", &k->b_map, a->dtype, a->b, 3, b_dims, b_strides, b_box);
    if (s != TILE_STATUS_SUCCESS) return s;
    /* C: optional (the epilogue stores by threads without it), so only where a map can
     * describe it and its stores stop at column n: a 16-byte aligned base, rows a multiple
     * of 16 bytes apart and under 2^40 bytes (the driver's limit), and n a multiple of 16
     * bytes (a box store past n writes the whole 16 bytes that hold column n - 1: the row's
     * padding, measured). Then an encoding failure is the driver's, reported as for A and B. */
    const int64_t elem = (int64_t)tile_dtype_size(a->dtype);
    const int64_t ldc = tile_lone_axis_stride(a->ldc, a->total_m, NULL, NULL, 0, a->n);
    if ((uintptr_t)a->c % 16 != 0 || ldc >= ((int64_t)1 << 40) / elem || ldc * elem % 16 != 0 ||
        a->n * elem % 16 != 0)
        return TILE_STATUS_SUCCESS;
    const int64_t c_dims[2] = {a->n, a->total_m}, c_strides[1] = {ldc};
    const uint32_t c_box[2] = {64, 64};
    s = tile_encode_tensor_map(fn, "c", &k->c_map, a->dtype, a->c, 2, c_dims, c_strides, c_box);
    k->c_by_map = s == TILE_STATUS_SUCCESS;
    return s;
}

/* Whether a group's last row tile of 64 rows or fewer is split by columns (a half tile). It
 * runs faster than a full tile: under the fixed order of tiles its program then runs out of
 * step with the others, and in k ahead of the full row tiles of its columns, whose k-tiles of
 * B it shared in L2 (perf-notes G10), so without a tile counter only short groups take them.
 * With a counter no program waits on a fixed share; G11 still measured half tiles 3% slower
 * where k is long and groups average under 4 row tiles (128 groups, k = 7168), but since a half
 * tile copies only its 64 rows of A (G16) they are 1-2% faster there too (perf-notes G17). */
static int wants_half_tiles(const tile_grouped_matmul_args *a, int64_t block_m) {
    const int64_t group_rows = (int64_t)a->groups * block_m; /* a row tile a group */
    return a->total_m <= group_rows || a->workspace != NULL;
}

static tile_status launch(const char *fn, const tile_device *device, int32_t variant,
                          const tile_grouped_matmul_args *a, tile_stream stream) {
    const tile_variant *v = &tile_registry[variant];
    if (a->total_m == 0) return TILE_STATUS_SUCCESS; /* no rows: C has nothing to receive */
    const int64_t block_n = tile_variant_param(v, "BLOCK_N");
    if (block_n < 1)
        return tile_fail(TILE_STATUS_INTERNAL, "%s: variant %s has no BLOCK_N in its params \"%s\"",
                         fn, v->name, v->params);
    const int kmajor = b_is_kmajor(a);
    tile_gemm_kernel_args k = {
        .c = a->c,
        .a = a->a,
        .b = a->b,
        .bias = a->bias,
        .offsets = a->offsets,
        .lda = a->lda,
        .ldc = a->ldc,
        .b_group = a->b_group_stride,
        .b_ld = kmajor ? a->b_n_stride : a->b_k_stride,
        .bias_group = a->bias ? a->bias_group_stride : 0,
        .total_m = a->total_m,
        .n = (int32_t)a->n,
        .k = (int32_t)a->k,
        .groups = a->groups,
        .b_kmajor = kmajor,
        .half_tiles = wants_half_tiles(a, v->rows_per_program),
        .tile_counter = a->workspace,
    };
    if (tile_variant_uses_tensor_maps(v)) {
        tile_status s = encode_maps(fn, a, kmajor, v->rows_per_program, block_n, &k);
        if (s != TILE_STATUS_SUCCESS) return s;
    }
    /* Tiles: each group's rows in blocks of rows_per_program (BLOCK_M), at most one partial
     * block per group, times the column blocks. The variants are persistent: tile_launch
     * clamps this to the programs that fit on the GPU at once, which loop over the tiles. */
    const int64_t m_tiles = (a->total_m + v->rows_per_program - 1) / v->rows_per_program + a->groups;
    const int64_t n_tiles = (a->n + block_n - 1) / block_n;
    const int64_t programs = m_tiles > INT64_MAX / n_tiles ? INT64_MAX : m_tiles * n_tiles;
    void *args[] = {&k};
    return tile_launch(device, variant, programs, stream, args);
}

static tile_status run(const char *fn, int forced, int32_t variant,
                       const tile_grouped_matmul_args *args, tile_stream stream) {
    tile_begin_call();
    tile_grouped_matmul_args a;
    tile_status s = copy_args(fn, args, &a);
    if (s != TILE_STATUS_SUCCESS) return s;
    tile_alignment al;
    if ((s = check_args(fn, &a, &al)) != TILE_STATUS_SUCCESS) return s;
    tile_problem p = problem_of(&a, al.bytes);
    const tile_device *device;
    if ((s = tile_choose_variant(fn, forced, &variant, &p, &al, &device))) return s;
    s = launch(fn, device, variant, &a, stream);
    const int32_t other = tile_tensor_map_fallback(&p, variant, forced, s);
    return other >= 0 ? launch(fn, device, other, &a, stream) : s;
}

tile_status tile_grouped_matmul(const tile_grouped_matmul_args *args, tile_stream stream) {
    return run("tile_grouped_matmul", 0, -1, args, stream);
}

tile_status tile_grouped_matmul_variant(int32_t variant, const tile_grouped_matmul_args *args,
                                        tile_stream stream) {
    return run("tile_grouped_matmul_variant", 1, variant, args, stream);
}

tile_status tile_grouped_matmul_explain(const tile_grouped_matmul_args *args, int32_t arch,
                                        tile_decision *decision) {
    static const char fn[] = "tile_grouped_matmul_explain";
    tile_begin_call();
    tile_status s = tile_check_decision(fn, decision);
    if (s != TILE_STATUS_SUCCESS) return s;
    tile_grouped_matmul_args a;
    if ((s = copy_args(fn, args, &a)) != TILE_STATUS_SUCCESS) return s;
    tile_alignment al;
    if ((s = check_args(fn, &a, &al)) != TILE_STATUS_SUCCESS) return s;
    tile_problem p = problem_of(&a, al.bytes);
    return tile_name_misaligned(fn, tile_explain_problem(fn, &p, arch, decision), &al);
}
