/* Internal interfaces shared by the library's source files. */
#ifndef FUSEDOPS_INTERNAL_H
#define FUSEDOPS_INTERNAL_H

#include <stdint.h>

#include "cuda_driver.h"
#include "fusedops.h"
#include "registry.h"

#include <stddef.h>

#define TILE_PRINTF(f, a) __attribute__((format(printf, f, a)))

/* Sizes of the public structs as version 1 defined them: callers compiled against v1 pass
 * these, and must keep working when fields are appended. */
#define TILE_VARIANT_INFO_V1_SIZE (offsetof(tile_variant_info, params) + sizeof(const char *))
#define TILE_DECISION_V1_SIZE (offsetof(tile_decision, reason) + 256)

/* Records the message as this thread's tile_last_error() and returns `status`. */
tile_status tile_fail(tile_status status, const char *fmt, ...) TILE_PRINTF(2, 3);
/* Starts a public call: clears this thread's last error. */
void tile_begin_call(void);

size_t tile_dtype_size(tile_dtype dtype);

/* The current device, with the library loaded and its per-device setup done (once). */
typedef struct tile_device {
    int32_t ordinal;
    int32_t arch; /* 10*major + minor */
    int32_t sm_count;
    int32_t smem_limit;     /* bytes of shared memory one program may opt in to */
    int32_t mem_bandwidth_gbs; /* peak memory bandwidth (bus width x memory clock, double data
                                * rate) in GB/s; 0 where the driver does not tell */
    int32_t *blocks_per_sm; /* per registry entry: resident thread blocks per SM, from the
                             * driver (0: not for this arch) */
    int32_t dependent_launch; /* 1: launches may overlap the stream's previous grid
                               * (programmatic dependent launch): every kernel set up here
                               * loaded an image that waits for it (device_setup) */
} tile_device;
tile_status tile_current_device(const tile_device **device);

/* A problem as dispatch sees it. */
typedef struct tile_problem {
    const char *op;
    const char *table_op; /* the tuned tables' op for this kind of call where it is not op
                           * (tuning_parse.h; norm-less norm calls: "residual_dropout"), looked
                           * up before op's; NULL: op's alone */
    tile_dtype dtype;
    int64_t rows, cols;
    int32_t align;    /* largest power of two dividing every pointer and row stride in bytes */
    int32_t arch;
    int32_t sm_count;   /* 0 when unknown (explain for another arch) */
    int32_t mem_bandwidth_gbs; /* the device's (tile_device); 0 when unknown: tuned lines
                                * tagged with a bandwidth are then passed over */
    int32_t smem_limit; /* per-program shared memory the device allows */
    int32_t features;   /* TILE_FEATURE_* bits the call needs (0: none) */
    int32_t optional_inputs; /* 1: the call passes inputs or outputs lean variants leave out
                              * (norm: bias, residual, s) */
    int32_t pointwise;  /* 1: the call needs no row statistics (a norm-less norm call), so a
                         * program may take part of a row (column_tile variants) */
    int32_t no_tensor_maps; /* 1: no tensor map describes the call (its encoding failed, or
                             * attention's kernels fold its rows): variants that copy by
                             * them are not eligible */
    int32_t streams_keys; /* attention: 1 where every block streams K and V of its own (no
                           * GQA heads share them, after the decode fold) for at most 64 query
                           * rows: bound by the bytes in flight, so its pick's deeper-ring twin
                           * is taken (take_deep_ring) */
    int64_t key_split_blocks; /* attention: the call's blocks of 64 rows where its keys may
                               * split (src/attention.c: keys and a workspace for two splits),
                               * else 0; tile_problem_splits_keys decides */
    int32_t varlen; /* 1: a varlen attention call, whose lengths are device data: causal, with a
                     * workspace, a tuned line's variant that walks blocks from its counter is
                     * taken over one of a fixed walk (weigh_attention) */
    const int32_t *blocks_per_sm; /* the device's (tile_device); NULL when unknown (explain
                                   * for another arch): tuned entries are then not weighed
                                   * by waves */
    /* attention: the query and key lengths (the longest, varlen), causal masking, and whether
     * the call gives a workspace (whose counter the variants that hand blocks over walk); 0
     * for the other ops. A tuned line's winner and runner-up are weighed by how each would
     * walk the call against the line's grid shape (tile_attention_walk_ratio). */
    int64_t seqlen_q, seqlen_k;
    int32_t causal, block_counter;
} tile_problem;

/* How a tuned attention time scales from its line's shape (the tune grid's shape of the
 * bucket of 2^bucket_rows_log2 query rows, src/attention_tune_grid.h) to call p for `variant`:
 * its busiest program's work on p over that on the grid shape, each as launch() would walk it
 * on p's device (132 programs where p names none); 0 where no grid shape has that bucket.
 * (src/attention.c) */
double tile_attention_walk_ratio(int32_t variant, const tile_problem *p, int32_t bucket_rows_log2);
/* Whether the walk model holds for v: the persistent warp-specialized variants it was fitted on
 * (perf-notes A34; a one-program-a-block variant's tiny grid shapes scaled to longer calls put
 * 64-row blocks 14-23% behind at head dim 128). */
int tile_attention_walk_modelled(const tile_variant *v);
/* Whether v's producer hands each query block to its consumers (grid param HANDED,
 * warp-specialized only): such a variant takes blocks from a workspace's counter and keeps its
 * threads' store of O (perf-notes A28, A32). (src/attention.c) */
int tile_attention_hands_blocks_over(const tile_variant *v);

/* Fills in p's device fields (arch, SM count, shared memory, occupancy) from `device`. */
void tile_problem_on_device(tile_problem *p, const tile_device *device);

/* Programs a row-wise launch of `rows` rows of `cols` columns needs: its row blocks of
 * v->rows_per_program rows, times the row's column tiles where v splits rows (column_tile). */
int64_t tile_row_programs(const tile_variant *v, int64_t rows, int64_t cols);

/* Shared memory a program may opt in to on a GPU of this arch, for explain without the GPU
 * (the device's own attribute is used for real calls). */
int32_t tile_arch_smem_limit(int32_t arch);

/* The positive integer value of `key` in v's params ("BLOCK_N=128 STAGES=4"), or 0 when it is
 * absent or not a positive integer. */
int64_t tile_variant_param(const tile_variant *v, const char *key);

/* Whether variant v can run problem p; if not, *why says which predicate failed. */
int tile_variant_eligible(const tile_variant *v, const tile_problem *p, const char **why);

/* The heuristic's cost of running p on variant v (lower is better; v eligible for p), what
 * dispatch compares where no tuned entry applies. */
double tile_heuristic_cost(const tile_variant *v, const tile_problem *p);

/* The eligible variant of lowest heuristic cost for p (the first of equals), with its cost in
 * *cost (if not NULL); -1 when none is eligible. */
int32_t tile_cheapest_variant(const tile_problem *p, double *cost);

/* Whether v copies through tensor maps (the warp-specialized families: WARPGROUPS of 3 or more). */
int tile_variant_uses_tensor_maps(const tile_variant *v);

/* After the launch of `variant` for p returned `status`: the variant to run the call on
 * instead, or -1. Where the dispatcher (not a forced variant) picked one that copies by tensor
 * maps and the call could not be described by them (NOT_SUPPORTED: rows past 2^31 - 1, a layout
 * the driver refuses), the cheapest eligible variant that copies without them. */
int32_t tile_tensor_map_fallback(const tile_problem *p, int32_t variant, int forced,
                                 tile_status status);

/* Encodes a 128-byte-swizzled tensor map of `rank` (1..5) dims over `base` (innermost first;
 * strides in elements for dims 1..rank-1), in boxes of `box`, for a warp-specialized variant's
 * copies. NOT_SUPPORTED, naming `what`, when the driver refuses the layout. */
tile_status tile_encode_tensor_map(const char *fn, const char *what, CUtensorMap *map,
                                   tile_dtype dtype, const void *base, int rank,
                                   const int64_t *dims, const int64_t *strides,
                                   const uint32_t *box);

/* The largest size the kernels index in 32 bits with a tile's end added (a tile or block is at
 * most 256 wide): the grouped matmul's n and k, attention's lengths (check_args). */
#define TILE_MAX_TILED_SIZE ((int64_t)INT32_MAX - 255)

/* A tensor map's stride (elements) for an axis of `count` positions: `stride`, or, where the axis
 * has one position and validation left its stride out (any value serves the kernels), one just
 * past the tensor's other axes (`axes` of them, and `inner` elements a row) that a map can
 * encode: a 16-byte multiple, no overlap. */
int64_t tile_lone_axis_stride(int64_t stride, int64_t count, const int64_t *strides,
                              const int64_t *counts, int axes, int64_t inner);

/* Picks the variant for p (tuned table, nearest bucket, then heuristic). On failure the status
 * says why nothing was eligible (ARCH_MISMATCH, MISALIGNED or NOT_SUPPORTED). */
tile_status tile_dispatch(const tile_problem *p, tile_decision *decision);

/* tile_dispatch for launches: the same choice, remembered per thread. p->op must be a string
 * with static storage (compared by address). */
tile_status tile_dispatch_cached(const tile_problem *p, int32_t *variant);

/* Largest power of two (at most 256) dividing x. */
int32_t tile_alignment_of(uint64_t x);

/* Launches variant `variant` over `programs` programs (each a cluster when the variant has
 * one) on `stream` with the kernel's arguments. A persistent variant gets at most as many as
 * stay resident at once (they walk the rest), unless `all_programs`: then one program per
 * unit of work, as if it were not persistent. */
tile_status tile_launch_programs(const tile_device *device, int32_t variant, int64_t programs,
                                 int all_programs, tile_stream stream, void **args);
/* Programs of `variant` the device holds at once (SMs x resident per SM; 0 when unknown): what
 * a persistent variant launches at most. */
int64_t tile_resident_programs(const tile_device *device, int32_t variant);
/* The programs tile_launch_programs launches for `programs` units of work (gridDim.x but for
 * clusters): a persistent variant's at most as many as stay resident, unless all_programs. */
int64_t tile_launched_programs(const tile_device *device, int32_t variant, int64_t programs,
                               int all_programs);
/* Whether an attention call splits its keys (perf-notes A45): its key_split_blocks fill at most
 * half of the device's SMs (132 where unknown). Dispatch then takes a variant of one program a
 * block (persistent ones never split) and its deeper-ring twin; the launch splits. */
int tile_problem_splits_keys(const tile_problem *p);
/* Appends printf-style text to decision->reason (what a pick's refinements add: "; its lean
 * twin ...", truncated at the reason's size). */
void tile_decision_append(tile_decision *decision, const char *fmt, ...) TILE_PRINTF(2, 3);
/* tile_launch_programs, persistent variants clamped to their resident programs. */
tile_status tile_launch(const tile_device *device, int32_t variant, int64_t programs,
                        tile_stream stream, void **args);

/* Validates the arguments every row-wise op shares: dtype, y and x not NULL, rows >= 1,
 * cols >= 1, ld_y and ld_x >= cols, byte extents within int64, pointers aligned to the element
 * size. On success sets *align (see tile_problem). `op` names the function in messages. */
tile_status tile_check_rowwise(const char *op, tile_dtype dtype, const void *y, const void *x,
                               int64_t rows, int64_t cols, int64_t ld_y, int64_t ld_x,
                               int32_t *align);
/* The same, with the output's names in messages (y_name, ld_y_name) given by the caller. */
tile_status tile_check_rowwise_named(const char *op, const char *y_name, const char *ld_y_name,
                                     tile_dtype dtype, const void *y, const void *x, int64_t rows,
                                     int64_t cols, int64_t ld_y, int64_t ld_x, int32_t *align);

/* One more rows x cols operand of an op (a residual, a second output): not NULL, ld >= cols,
 * byte extent within int64, aligned to its element; lowers *align to what it allows. `name`
 * and `ld_name` are the argument names the messages use. */
tile_status tile_check_operand(const char *op, const char *name, const char *ld_name,
                               const void *p, int64_t rows, int64_t cols, int64_t ld, size_t elem,
                               int32_t *align);
/* An optional vector of n elements (a bias or weight): NULL passes; else as tile_check_operand. */
tile_status tile_check_vector(const char *op, const char *name, const void *p, int64_t n,
                              size_t elem, int32_t *align);

/* ---- Versioned argument structs (size_t struct_size as their first member). */

/* The body of the *_init entry points: INVALID_ARGUMENT for a NULL args or a struct_size below
 * v1_size (nothing written), else zeroes struct_size bytes and sets the struct_size member.
 * `type` names the struct in messages ("tile_flash_attention_args", full size `size`). */
tile_status tile_init_versioned(const char *fn, void *args, size_t struct_size, size_t v1_size,
                                const char *type, size_t size);
/* Copies the caller's args (of the size they were compiled with, read from its struct_size)
 * into *out, a full struct of `size` bytes, zeroing the fields the caller's version lacks.
 * INVALID_ARGUMENT for a NULL args or a struct_size below v1_size. */
tile_status tile_copy_versioned(const char *fn, const void *args, size_t v1_size,
                                const char *type, void *out, size_t size);

/* ---- Strided tensors (attention, grouped matmul). */

/* The alignment of every pointer and stride of a call (what dispatch matches against a
 * variant's align_bytes), and the argument that set it, for a MISALIGNED message that names
 * it. Start at {.bytes = 256}. */
typedef struct tile_alignment {
    int32_t bytes;
    char what[96];
} tile_alignment;

/* Lowers al to the alignment of `value` (an address or a stride in bytes), recording the
 * argument (printf-formatted) when it is the least aligned so far. */
void tile_lower_alignment(tile_alignment *al, uint64_t value, const char *fmt, ...)
    TILE_PRINTF(3, 4);

/* Dispatch's MISALIGNED names the alignment a variant needs; this adds which argument of the
 * caller's has less (and the function, where the message lacks it). Other statuses pass. */
tile_status tile_name_misaligned(const char *fn, tile_status s, const tile_alignment *al);

/* A tensor laid out by strides, in elements: up to three strided axes over positions, each
 * position a contiguous run of `inner` elements. Element (i0, i1, i2, d) is at
 * p[i0 * strides[0] + i1 * strides[1] + i2 * strides[2] + d]. */
typedef struct tile_tensor {
    const char *name;             /* "q", "b": the pointer argument */
    const void *p;
    int32_t axes;                 /* 1 to 3 */
    const char *stride_names[3];  /* the stride arguments, "q_batch_stride" ... */
    int64_t strides[3], counts[3];
    const char *inner_name;       /* the argument holding the contiguous extent, "head_dim" */
    int64_t inner;
    int distinct; /* 1: no two elements may share an address (an output; grouped matmul's B) */
} tile_tensor;

/* Checks a tensor: pointer not NULL, strides >= 0, byte extent within int64, distinct
 * positions where asked (taken in increasing order, each stride of an axis of more than one
 * position at least `inner` plus the span of the smaller ones), pointer aligned to its element
 * (MISALIGNED); lowers al by its pointer and by each stride of an axis of more than one
 * position. */
tile_status tile_check_tensor(const char *fn, const tile_tensor *t, size_t elem,
                              tile_alignment *al);

/* INVALID_ARGUMENT unless 0 <= variant < tile_registry_count; NOT_SUPPORTED unless the variant
 * is one of `op` for `dtype`. Needs no device: *_variant entry points check it right after
 * their arguments. */
tile_status tile_check_variant_index(const char *fn, int32_t variant, const char *op,
                                     tile_dtype dtype);
/* Whether variant `variant` may run problem p, with the status and message a *_variant entry
 * point `fn` reports when it may not (index out of range, wrong op or dtype, arch, shared
 * memory, alignment, shape). */
tile_status tile_check_variant(const char *fn, int32_t variant, const tile_problem *p);

/* The variant an op's launch runs for p (op, dtype, rows, cols, align and features set): with
 * `forced`, *variant itself once tile_check_variant_index passes (before the device is
 * needed), else dispatch's pick; in between, the current device, whose arch, SM count and
 * shared-memory limit complete p. A MISALIGNED names al's least aligned argument (al may be
 * NULL). */
tile_status tile_choose_variant(const char *fn, int forced, int32_t *variant, tile_problem *p,
                                const tile_alignment *al, const tile_device **device);

/* INVALID_ARGUMENT unless decision is not NULL and its struct_size holds version 1. */
tile_status tile_check_decision(const char *fn, const tile_decision *decision);
/* Dispatches p (op, dtype, rows, cols, align and features set) for `arch` (0: the current
 * device) and copies the decision into the caller's struct: the end of every *_explain. */
tile_status tile_explain_problem(const char *fn, tile_problem *p, int32_t arch,
                                 tile_decision *decision);

/* The body of the *_explain entry points: validates like the op would (with stand-in pointers
 * aligned to pointer_align), then dispatches for `arch` (0: the current device). */
tile_status tile_explain_rowwise(const char *fn, const char *op, tile_dtype dtype, int64_t rows,
                                 int64_t cols, int64_t ld_y, int64_t ld_x, int32_t pointer_align,
                                 int32_t arch, tile_decision *decision);

#endif
