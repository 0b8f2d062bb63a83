/* tile_flash_attention: validate, dispatch, launch (kernels/attention.tile, op "attention"). */
#include <float.h>
#include <math.h>

#include "attention_args.h"
#include "attention_tune_grid.h"
#include "internal.h"

/* log2(e): the kernels take exponents base 2 (templates/tile_device.cuh's LOG2E). */
#define LOG2_E 1.4426950408889634f

static const char attention_op[] = "attention";

/* Key tiles of work a causal query block saves by running in a persistent program's walk
 * rather than as a program of its own (its Q, first K and V load under the previous block's
 * last products; fitted on an H200 at 0.6, perf-notes A19; refitted on an H100 after A19b,
 * A22). */
#define PAIRED_WALK_SAVES_TILES 2.5

/* The fields of tile_flash_attention_args as version 1 defined them. */
#define TILE_FLASH_ATTENTION_ARGS_V1_SIZE \
    (offsetof(tile_flash_attention_args, lse) + sizeof(float *))
/* tile_copy_versioned copies whole 8-byte words: every version's size must be a multiple */
_Static_assert(TILE_FLASH_ATTENTION_ARGS_V1_SIZE % 8 == 0 &&
                   offsetof(tile_flash_attention_args, workspace_bytes) % 8 == 0 &&
                   sizeof(tile_flash_attention_args) % 8 == 0,
               "tile_flash_attention_args' versions end on 8-byte words");

tile_status tile_flash_attention_init(tile_flash_attention_args *args, size_t struct_size) {
    tile_begin_call();
    return tile_init_versioned("tile_flash_attention_init", args, struct_size,
                               TILE_FLASH_ATTENTION_ARGS_V1_SIZE, "tile_flash_attention_args",
                               sizeof(tile_flash_attention_args));
}

/* Copies the caller's args (of the size they were compiled with) into a full, zeroed struct. */
static tile_status copy_args(const char *fn, const tile_flash_attention_args *args,
                             tile_flash_attention_args *a) {
    return tile_copy_versioned(fn, args, TILE_FLASH_ATTENTION_ARGS_V1_SIZE,
                               "tile_flash_attention_args", a, sizeof *a);
}

/* One of q, k, v, o: [batch or 1, tokens, heads] positions of head_dim elements, by strides;
 * the output's positions must be distinct. */
static tile_tensor attention_tensor(const char *name, const void *p,
                                    const char *const stride_names[3], int64_t batch_stride,
                                    int64_t seq_stride, int64_t head_stride, int64_t batches,
                                    int64_t tokens, int64_t heads, int64_t head_dim,
                                    int is_output) {
    return (tile_tensor){.name = name,
                         .p = p,
                         .axes = 3,
                         .stride_names = {stride_names[0], stride_names[1], stride_names[2]},
                         .strides = {batch_stride, seq_stride, head_stride},
                         .counts = {batches, tokens, heads},
                         .inner_name = "head_dim",
                         .inner = head_dim,
                         .distinct = is_output};
}

/* Validates *a (every rule in fusedops.h) and computes the alignment of every tensor. */
static tile_status check_args(const char *fn, const tile_flash_attention_args *a,
                              tile_alignment *align) {
    if (a->dtype != TILE_DTYPE_F16 && a->dtype != TILE_DTYPE_BF16)
        return tile_fail(TILE_STATUS_UNSUPPORTED_DTYPE,
                         "%s: dtype %d (%s) is not TILE_DTYPE_F16 or TILE_DTYPE_BF16", fn,
                         (int)a->dtype, tile_dtype_string(a->dtype));
    if (a->batch < 1)
        return tile_fail(TILE_STATUS_INVALID_ARGUMENT, "%s: batch is %d; it must be >= 1", fn,
                         a->batch);
    if (a->heads_kv < 1)
        return tile_fail(TILE_STATUS_INVALID_ARGUMENT, "%s: heads_kv is %d; it must be >= 1", fn,
                         a->heads_kv);
    if (a->heads_q < 1 || a->heads_q % a->heads_kv)
        return tile_fail(TILE_STATUS_INVALID_ARGUMENT,
                         "%s: heads_q is %d; it must be a positive multiple of heads_kv (%d)", fn,
                         a->heads_q, a->heads_kv);
    if (a->head_dim < 1)
        return tile_fail(TILE_STATUS_INVALID_ARGUMENT, "%s: head_dim is %d; it must be >= 1", fn,
                         a->head_dim);
    if (a->head_dim % 8 || a->head_dim > 256)
        return tile_fail(TILE_STATUS_NOT_SUPPORTED,
                         "%s: head_dim %d is not supported; it must be a multiple of 8 up to 256",
                         fn, a->head_dim);
    const int varlen = a->cu_seqlens_q != NULL;
    if (varlen != (a->cu_seqlens_k != NULL))
        return tile_fail(TILE_STATUS_INVALID_ARGUMENT,
                         "%s: cu_seqlens_%s is NULL but cu_seqlens_%s is not; give both or neither",
                         fn, varlen ? "k" : "q", varlen ? "q" : "k");
    const int64_t min_len = varlen ? 0 : 1;
    if (a->seqlen_q < min_len || a->seqlen_q > INT32_MAX)
        return tile_fail(TILE_STATUS_INVALID_ARGUMENT,
                         "%s: seqlen_q is %lld; it must be in [%lld, 2^31)", fn,
                         (long long)a->seqlen_q, (long long)min_len);
    if (a->seqlen_k < min_len || a->seqlen_k > INT32_MAX)
        return tile_fail(TILE_STATUS_INVALID_ARGUMENT,
                         "%s: seqlen_k is %lld; it must be in [%lld, 2^31)", fn,
                         (long long)a->seqlen_k, (long long)min_len);
    if (varlen && (a->total_q < 0 || a->total_q > INT32_MAX))
        return tile_fail(TILE_STATUS_INVALID_ARGUMENT,
                         "%s: total_q is %lld; it must be in [0, 2^31)", fn, (long long)a->total_q);
    if (varlen && (a->total_k < 0 || a->total_k > INT32_MAX))
        return tile_fail(TILE_STATUS_INVALID_ARGUMENT,
                         "%s: total_k is %lld; it must be in [0, 2^31)", fn, (long long)a->total_k);
    if (a->causal != 0 && a->causal != 1)
        return tile_fail(TILE_STATUS_INVALID_ARGUMENT, "%s: causal is %d; it must be 0 or 1", fn,
                         a->causal);
    if (!isfinite(a->scale))
        return tile_fail(TILE_STATUS_INVALID_ARGUMENT, "%s: scale is %g; it must be finite", fn,
                         (double)a->scale);
    /* (scale x log2(e), the kernels' base-2 scale, must be finite too) */
    if (fabsf(a->scale) > FLT_MAX / LOG2_E)
        return tile_fail(TILE_STATUS_INVALID_ARGUMENT,
                         "%s: scale is %g; its magnitude must be at most FLT_MAX / log2(e)", fn,
                         (double)a->scale);
    /* The kernels add a block's height or width to a length in 32 bits. */
    const int64_t lengths[4] = {a->seqlen_q, a->seqlen_k, varlen ? a->total_q : 0,
                                varlen ? a->total_k : 0};
    static const char *const length_names[4] = {"seqlen_q", "seqlen_k", "total_q", "total_k"};
    for (int i = 0; i < 4; i++)
        if (lengths[i] > TILE_MAX_TILED_SIZE)
            return tile_fail(TILE_STATUS_NOT_SUPPORTED,
                             "%s: %s is %lld; the kernels take lengths up to 2^31 - 256", fn,
                             length_names[i], (long long)lengths[i]);
    /* The kernels number query blocks in 32 bits: at most 2^30 of the narrowest, 64 rows. */
    const int64_t blocks_64 = (a->seqlen_q + 63) / 64, pairs = (int64_t)a->batch * a->heads_q;
    if (blocks_64 > 0 && pairs > ((int64_t)1 << 30) / blocks_64)
        return tile_fail(TILE_STATUS_NOT_SUPPORTED,
                         "%s: batch x heads_q is %lld and seqlen_q %lld: more than 2^30 query "
                         "blocks of 64 rows",
                         fn, (long long)pairs, (long long)a->seqlen_q);
    const size_t elem = tile_dtype_size(a->dtype);
    const int64_t batches = varlen ? 1 : a->batch;
    const int64_t tokens_q = varlen ? a->total_q : a->seqlen_q;
    const int64_t tokens_k = varlen ? a->total_k : a->seqlen_k;
    static const char *const q_strides[3] = {"q_batch_stride", "q_seq_stride", "q_head_stride"};
    static const char *const k_strides[3] = {"k_batch_stride", "k_seq_stride", "k_head_stride"};
    static const char *const v_strides[3] = {"v_batch_stride", "v_seq_stride", "v_head_stride"};
    static const char *const o_strides[3] = {"o_batch_stride", "o_seq_stride", "o_head_stride"};
    const tile_tensor tensors[4] = {
        attention_tensor("q", a->q, q_strides, a->q_batch_stride, a->q_seq_stride,
                         a->q_head_stride, batches, tokens_q, a->heads_q, a->head_dim, 0),
        attention_tensor("k", a->k, k_strides, a->k_batch_stride, a->k_seq_stride,
                         a->k_head_stride, batches, tokens_k, a->heads_kv, a->head_dim, 0),
        attention_tensor("v", a->v, v_strides, a->v_batch_stride, a->v_seq_stride,
                         a->v_head_stride, batches, tokens_k, a->heads_kv, a->head_dim, 0),
        attention_tensor("o", a->o, o_strides, a->o_batch_stride, a->o_seq_stride,
                         a->o_head_stride, batches, tokens_q, a->heads_q, a->head_dim, 1),
    };
    *align = (tile_alignment){.bytes = 256};
    for (int i = 0; i < 4; i++) {
        tile_status s = tile_check_tensor(fn, &tensors[i], elem, align);
        if (s != TILE_STATUS_SUCCESS) return s;
    }
    if (a->lse && (uintptr_t)a->lse % sizeof(float))
        return tile_fail(TILE_STATUS_MISALIGNED, "%s: lse (%p) is not aligned to its 4-byte floats",
                         fn, (void *)a->lse);
    for (int i = 0; varlen && i < 2; i++) {
        const int32_t *cu = i ? a->cu_seqlens_k : a->cu_seqlens_q;
        if ((uintptr_t)cu % sizeof(int32_t))
            return tile_fail(TILE_STATUS_MISALIGNED,
                             "%s: cu_seqlens_%s (%p) is not aligned to its 4-byte int32s", fn,
                             i ? "k" : "q", (const void *)cu);
    }
    if ((uintptr_t)a->workspace % sizeof(unsigned long long))
        return tile_fail(TILE_STATUS_MISALIGNED,
                         "%s: workspace (%p) is not 8-byte aligned (its block counter is 64-bit)",
                         fn, a->workspace);
    if (a->workspace_bytes && !a->workspace)
        return tile_fail(TILE_STATUS_INVALID_ARGUMENT,
                         "%s: workspace_bytes is %zu but workspace is NULL; give 0 without one", fn,
                         a->workspace_bytes);
    if (a->workspace_bytes && a->workspace_bytes < TILE_FLASH_ATTENTION_WORKSPACE_BYTES)
        return tile_fail(TILE_STATUS_INVALID_ARGUMENT,
                         "%s: workspace_bytes is %zu; it must be 0 or at least %d "
                         "(TILE_FLASH_ATTENTION_WORKSPACE_BYTES)",
                         fn, a->workspace_bytes, TILE_FLASH_ATTENTION_WORKSPACE_BYTES);
    return TILE_STATUS_SUCCESS;
}

/* Splits of the keys (perf-notes A45, A49). A call of fewer query blocks than the GPU
 * has programs at once (decode: a few queries a head against a long cache) leaves SMs idle and
 * walks every key in one program a block. Split s of a block then reads keys s x split_keys
 * onwards, and the block's last split to finish combines the splits' shares (fp32 O / sum and
 * log-sum-exp each) in the workspace: after the counters (one a block, at fixed offsets, so a
 * workspace zeroed once stays valid for every shape), the shares' log-sum-exps, then their O.
 * - SPLIT_MAX: a warp's lane holds each split's log-sum-exp in the combine;
 * - SPLIT_MIN_KEYS: a split's keys at least, so its fixed costs (Q's load, the pipeline's fill,
 *   its share's store) stay under its key tiles' work;
 * - SPLIT_COUNTERS: blocks (of 64 rows) a split call may have: the counters' room;
 * - SPLIT_PROGRAMS: programs the size bound aims at (four a 132-SM GPU's SM): a call's own
 *   split count comes from its variant's resident programs (launch). */
#define SPLIT_MAX 32
#define SPLIT_MIN_KEYS 256
#define SPLIT_COUNTERS 1024
#define SPLIT_PROGRAMS 528
#define SPLIT_COUNTERS_OFFSET TILE_FLASH_ATTENTION_WORKSPACE_BYTES
#define SPLIT_SHARES_OFFSET TILE_FLASH_ATTENTION_WORKSPACE_ZEROED_BYTES
_Static_assert(SPLIT_SHARES_OFFSET == SPLIT_COUNTERS_OFFSET + 4 * SPLIT_COUNTERS,
               "the counters end where the shares begin");

/* The (folded) call's query blocks of 64 rows, the narrowest any variant takes (check_args
 * keeps them at 2^30 or fewer). */
static int64_t blocks_of_64(const tile_flash_attention_args *a) {
    return (int64_t)a->batch * a->heads_q * ((a->seqlen_q + 63) / 64);
}

/* The bytes of a call's workspace (0 reads as the counter's). */
static size_t workspace_room(const tile_flash_attention_args *a) {
    return a->workspace_bytes ? a->workspace_bytes : TILE_FLASH_ATTENTION_WORKSPACE_BYTES;
}

/* Whether v's kernel can split keys: one program a block, storing by threads (the persistent,
 * warp-specialized kernels store no shares). */
static int variant_splits_keys(const tile_variant *v) {
    return !v->persistent && !tile_variant_uses_tensor_maps(v);
}

/* The splits a (folded) call may take at most, on any GPU: 1 where it takes none (too many
 * blocks or too few keys; varlen calls by their longest sequences). */
static int64_t split_limit(const tile_flash_attention_args *a) {
    if (a->seqlen_q < 1) return 1;
    const int64_t blocks = blocks_of_64(a);
    if (blocks > SPLIT_COUNTERS) return 1;
    int64_t n = a->seqlen_k / SPLIT_MIN_KEYS;
    const int64_t fill = (SPLIT_PROGRAMS + blocks - 1) / blocks;
    if (n > fill) n = fill;
    return n > SPLIT_MAX ? SPLIT_MAX : n < 1 ? 1 : n;
}

/* The shares' rows of a call of `splits` splits: the folded call's (batch x heads_q x seqlen_q,
 * the same rows as the caller's; varlen: seqlen_q rows a sequence, the longest). */
static int64_t split_rows(const tile_flash_attention_args *a, int64_t splits) {
    return splits * a->batch * a->heads_q * a->seqlen_q; /* <= 2^35 (check_args) */
}
/* The shares' log-sum-exps, in floats: the O shares after them start 16-byte aligned. */
static int64_t split_lse_floats(int64_t rows) { return (rows + 3) / 4 * 4; }
/* Bytes of the workspace a call of `splits` splits uses (0 for none). */
static size_t split_bytes(const tile_flash_attention_args *a, int64_t splits) {
    if (splits < 2) return 0;
    const int64_t rows = split_rows(a, splits);
    return SPLIT_SHARES_OFFSET + (size_t)(split_lse_floats(rows) + rows * a->head_dim) * sizeof(float);
}

/* A key/value head's rows folded by the kernels: one 64-row block. Folds of 96 and 128 rows
 * ran level to 14% slower than the same calls unfolded on the warp-specialized kernels, whose
 * blocks then fill (perf-notes A50). */
#define FOLD_ROWS 64
typedef struct query_fold {
    int32_t heads;                         /* query heads a folded sequence holds; 1: none */
    int64_t q_stride, o_stride, lse_stride; /* the caller's, between those heads */
} query_fold;

/* Decode-shaped calls (fewer queries a head than the narrowest block's 64 rows) waste most of
 * a block's rows, and each query head of a GQA group reads its key/value head again. So the
 * query heads of one key/value head become one sequence: the call one of heads_kv heads of
 * (heads_q / heads_kv) x seqlen_q queries each, rows (head i of the group, query s) at
 * i x seqlen_q + s, reading each K and V once (perf-notes A44, A50). Two ways:
 * - by strides, where they describe those rows (one query a head: the rows a head apart; or
 *   the heads' queries back to back, head stride = seqlen_q x seq stride, BHSD, without the
 *   causal mask): the kernels see an ordinary call, so any variant takes it. With one query a
 *   head the causal mask (bottom-right) hides no key, so it goes;
 * - by the kernels (the returned fold; by_kernel, FOLD_ROWS rows at most): any layout, causal,
 *   varlen (a sequence's n queries, n x ratio rows); the variants that copy Q and store O by
 *   threads map each row to its head and query (tile::attn::query_offset), so dispatch takes
 *   no variant of tensor maps (problem_of).
 * The log-sum-exp keeps its layout either way. Nothing is copied; lengths stay 32-bit. */
static query_fold fold_query_heads(tile_flash_attention_args *a, int by_kernel) {
    const query_fold none = {1, 0, 0, 0};
    const int64_t ratio = a->heads_q / a->heads_kv, sq = a->seqlen_q;
    const int varlen = a->cu_seqlens_q != NULL;
    if (ratio < 2 || sq < 1 || sq >= 64 || ratio * sq > INT32_MAX) return none;
    const int by_strides = !varlen && (sq == 1 || (!a->causal &&
                                                    a->q_head_stride == sq * a->q_seq_stride &&
                                                    a->o_head_stride == sq * a->o_seq_stride));
    if (!by_strides && (!by_kernel || ratio * sq > FOLD_ROWS)) return none;
    query_fold fold = none;
    if (!by_strides) {
        fold = (query_fold){(int32_t)ratio, a->q_head_stride, a->o_head_stride,
                            varlen ? a->total_q : sq};
    } else if (sq == 1) {
        a->q_seq_stride = a->q_head_stride;
        a->o_seq_stride = a->o_head_stride;
        a->causal = 0;
    }
    a->q_head_stride *= ratio;
    a->o_head_stride *= ratio;
    a->heads_q = a->heads_kv;
    a->seqlen_q = ratio * sq;
    return fold;
}

/* The (folded) call's blocks of 64 rows where its keys may split on a variant of one program a
 * block, as far as the shape and workspace tell: keys for two splits and a workspace that
 * holds them; else 0. Whether they do, tile_problem_splits_keys decides with
 * the device's SMs (dispatch and launch alike); split_of then counts the splits. */
static int64_t key_split_blocks(const tile_flash_attention_args *a) {
    if (!a->workspace || split_limit(a) < 2 || workspace_room(a) < split_bytes(a, 2)) return 0;
    return blocks_of_64(a);
}

/* The problem as dispatch sees it: rows are the query rows of all heads (the work), cols the
 * head dimension (a variant takes heads up to its max_cols). */
static tile_problem problem_of(const tile_flash_attention_args *a, const query_fold *fold,
                               int32_t align) {
    int64_t rows = (int64_t)a->batch * a->heads_q; /* < 2^62 */
    const int64_t seq = a->seqlen_q > 0 ? a->seqlen_q : 1;
    rows = rows > INT64_MAX / seq ? INT64_MAX : rows * seq;
    return (tile_problem){.op = attention_op, .dtype = a->dtype, .rows = rows,
                          .cols = a->head_dim, .align = align, .varlen = a->cu_seqlens_q != NULL,
                          .seqlen_q = a->seqlen_q, .seqlen_k = a->seqlen_k,
                          .causal = a->causal != 0, .block_counter = a->workspace != NULL,
                          .no_tensor_maps = fold->heads > 1, /* (a map's rows are one head's) */
                          .key_split_blocks = key_split_blocks(a),
                          /* (after the decode fold: GQA heads that read one K and V folded) */
                          .streams_keys = a->heads_q == a->heads_kv && a->seqlen_q <= 64};
}

/* The 4-dim tensor map (head_dim, seq, heads, batch; innermost first) of one of q, k, v, o, in
 * boxes of 64 columns x `rows` positions, for the warp-specialized variants.
 *
 * A varlen call (tokens > 0: the tensor's tokens, `seq` the longest sequence, batch_stride not
 * read) takes (head_dim, seq, heads, tokens + 1) with both middle-and-outer token axes a token
 * apart and the base `seq` tokens early: the kernel addresses row r of the sequence ending at
 * token E as (r - length + seq, E) (tile::attn::ws_map_rows), so the window's end is the
 * sequence's end: copies read zeros past it and stores stop there, whatever lies beyond (the
 * next sequence's tokens). Only in-window elements are ever addressed, and those are the
 * sequence's own (CUTLASS's varlen attention offsets its maps in the same way). */
static tile_status encode_attention_map(const char *fn, const char *what, CUtensorMap *map,
                                        tile_dtype dtype, const void *base, int32_t head_dim,
                                        int64_t seq, int64_t heads, int64_t batch,
                                        int64_t seq_stride, int64_t head_stride,
                                        int64_t batch_stride, int64_t tokens, int64_t rows) {
    const int varlen = tokens > 0;
    /* Varlen: both token axes move a token, the tensor's token stride, a lone axis's only where
     * the tensor holds one token (not where the window does: a window of one token, every
     * sequence at most one query, once took a stride past the tensor for both and stored O
     * elsewhere). */
    const int64_t counts[3] = {varlen ? tokens : seq, heads, varlen ? 1 : batch},
                  given[3] = {seq_stride, head_stride, batch_stride};
    int64_t strides[3];
    for (int i = 0; i < 3; i++)
        strides[i] = tile_lone_axis_stride(given[i], counts[i], given, counts, 3, head_dim);
    if (varlen) {
        batch = tokens + 1;
        if (seq < 1) seq = 1; /* (every key sequence empty: no key tile is read) */
        strides[2] = strides[0]; /* the outer token axis moves as the window does */
        base = (const char *)base - (uintptr_t)(seq * strides[0]) * tile_dtype_size(dtype);
    }
    const int64_t dims[4] = {head_dim, seq, heads, batch};
    const uint32_t box[4] = {64, (uint32_t)rows, 1, 1};
    return tile_encode_tensor_map(fn, what, map, dtype, base, 4, dims, strides, box);
}

int tile_attention_hands_blocks_over(const tile_variant *v) {
    return v->persistent && tile_variant_uses_tensor_maps(v) &&
           tile_variant_param(v, "HANDED") == 1;
}

/* The tensor maps of Q (boxes of BLOCK_M rows), K and V (BLOCK_N rows) for a warp-specialized
 * variant (varlen calls: over their tokens, encode_attention_map). */
static tile_status encode_maps(const char *fn, const tile_variant *v,
                               const tile_flash_attention_args *a, tile_attention_kernel_args *k) {
    const int64_t block_n = tile_variant_param(v, "BLOCK_N");
    const int varlen = a->cu_seqlens_q != NULL;
    /* (a varlen call's tensors hold at least one token: check_args; 0 means fixed lengths) */
    const int64_t tokens_q = varlen ? (a->total_q > 0 ? a->total_q : 1) : 0,
                  tokens_k = varlen ? (a->total_k > 0 ? a->total_k : 1) : 0;
    tile_status s = encode_attention_map(fn, "q", &k->q_map, a->dtype, a->q, a->head_dim,
                                         a->seqlen_q, a->heads_q, a->batch, a->q_seq_stride,
                                         a->q_head_stride, a->q_batch_stride, tokens_q,
                                         v->rows_per_program);
    if (s == TILE_STATUS_SUCCESS)
        s = encode_attention_map(fn, "k", &k->k_map, a->dtype, a->k, a->head_dim, a->seqlen_k,
                                 a->heads_kv, a->batch, a->k_seq_stride, a->k_head_stride,
                                 a->k_batch_stride, tokens_k, block_n);
    if (s == TILE_STATUS_SUCCESS)
        s = encode_attention_map(fn, "v", &k->v_map, a->dtype, a->v, a->head_dim, a->seqlen_k,
                                 a->heads_kv, a->batch, a->v_seq_stride, a->v_head_stride,
                                 a->v_batch_stride, tokens_k, block_n);
    if (s != TILE_STATUS_SUCCESS || tile_attention_hands_blocks_over(v)) return s;
    /* O: optional (the consumers store it by threads without it, and the variants that hand
     * blocks over always do: perf-notes A32), so only where a map can describe it: a 16-byte
     * aligned base and, for every axis of more than one position (a lone axis's stride is
     * recomputed: tile_lone_axis_stride), strides of 16-byte multiples under 2^40 bytes (head_dim, a
     * multiple of 8, ends on a 16-byte boundary, so a box store past it writes nothing of the
     * row's padding). Should the driver still refuse it, the threads store O and the call goes
     * on: nothing of the caller's asked for the map. */
    const int64_t elem = (int64_t)tile_dtype_size(a->dtype);
    const int64_t o_steps[3] = {a->o_seq_stride, a->o_head_stride, a->o_batch_stride},
                  o_counts[3] = {varlen ? tokens_q : a->seqlen_q, a->heads_q, varlen ? 1 : a->batch};
    if ((uintptr_t)a->o % 16 != 0) return TILE_STATUS_SUCCESS;
    for (int i = 0; i < 3; i++) { /* (such strides are bounded by check_args: no overflow) */
        if (o_counts[i] <= 1) continue;
        const int64_t bytes = o_steps[i] * elem;
        if (bytes % 16 != 0 || bytes >= ((int64_t)1 << 40)) return TILE_STATUS_SUCCESS;
    }
    k->o_by_map = encode_attention_map(fn, "o", &k->o_map, a->dtype, a->o, a->head_dim, a->seqlen_q,
                                       a->heads_q, a->batch, a->o_seq_stride, a->o_head_stride,
                                       a->o_batch_stride, tokens_q, 64) == TILE_STATUS_SUCCESS;
    if (!k->o_by_map) tile_begin_call(); /* the refusal's message is not this call's */
    return TILE_STATUS_SUCCESS;
}

/* Programs run in groups of heads whose K and V stay in L2 while every query block of the
 * group reads them (perf-notes A8): about 8 MiB together for full attention (A21: at 16 MiB an
 * H100 read K and V from DRAM nearly twice), 16 MiB for causal calls, whose walks cover fewer
 * blocks a head (A21: 8 MiB cost them 1-5%). The (batch, head) pairs of a group, 1 to pairs. */
static int64_t heads_a_group(tile_dtype dtype, int64_t head_dim, int64_t seqlen_k, int causal,
                             int64_t pairs) {
    const int64_t kv_bytes = 2 * (seqlen_k > 0 ? seqlen_k : 1) * head_dim *
                             (int64_t)tile_dtype_size(dtype);
    const int64_t group = ((int64_t)(causal ? 16 : 8) << 20) / kv_bytes;
    return group < 1 ? 1 : group > pairs ? pairs : group;
}

/* Whether a causal call of a persistent variant walks long/short pairs of query blocks of one
 * head (templates/tile_attention.cuh): units of equal work, so a static walk stays balanced and
 * each block's loads run under the last one's products. One program per block, balanced by
 * the hardware, pays a prologue and an epilogue a block but leaves no program idle in a last,
 * partial round of units; the pairs win where that round costs less than the prologues.
 * `programs`: the device's resident programs of v; `units`: the pairs' units of the call. */
static int walk_in_pairs(const tile_variant *v, int64_t programs, int causal, int64_t seqlen_q,
                         int64_t seqlen_k, int64_t units) {
    if (!causal || !v->persistent || programs < 1 || units < 1) return 0;
    const int64_t rounds = (units + programs - 1) / programs;
    const double idle = (double)(rounds * programs) / (double)units; /* >= 1: the last round */
    /* key tiles a block visits on average: bottom-right aligned, the rows see seqlen_k -
     * seqlen_q / 2 keys on average (at least one tile) */
    double tiles = ((double)seqlen_k - 0.5 * (double)seqlen_q) /
                   (double)tile_variant_param(v, "BLOCK_N");
    if (tiles < 1.0) tiles = 1.0;
    return (tiles + PAIRED_WALK_SAVES_TILES) / tiles > idle;
}

/* How a launch of v walks a call's query blocks: from the workspace's counter (the variants that
 * hand blocks over, given one: perf-notes A28), in long/short pairs (walk_in_pairs), one
 * program per block (non-persistent variants, and causal calls walked neither way: the
 * hardware balances them), or else the fixed walk. `resident`: the device's programs of v at
 * once. launch() walks so, and the schedule model (walk_span) deals blocks so. */
typedef struct attention_walk_kind {
    int counted, paired, one_each;
} attention_walk_kind;
static attention_walk_kind walk_of(const tile_variant *v, int64_t resident, int causal,
                                   int block_counter, int64_t seqlen_q, int64_t seqlen_k,
                                   int64_t pairs) {
    const int64_t m_blocks = (seqlen_q + v->rows_per_program - 1) / v->rows_per_program;
    const int64_t units_a_head = (m_blocks + 1) / 2; /* of a paired walk: two blocks each */
    const int64_t units =
        units_a_head < 1 ? 0 : pairs > INT64_MAX / units_a_head ? INT64_MAX : pairs * units_a_head;
    attention_walk_kind w = {.counted = block_counter && tile_attention_hands_blocks_over(v)};
    w.paired = !w.counted && walk_in_pairs(v, resident, causal, seqlen_q, seqlen_k, units);
    w.one_each = !v->persistent || (causal && !w.paired && !w.counted);
    return w;
}

/* A query block's work beyond its products, in key tiles of 128 x 128 query-key pairs a 128
 * rows of its height: its Q's load, the pipeline's fill and drain (its first scores and last
 * P V overlap nothing of its own), its output (fitted on an H200 at head dim 64: 52 calls of
 * 26 shapes, causal and not, perf-notes A34). */
#define BLOCK_OVERHEAD_TILES 2.5
/* The SMs of the GPUs the compiled attention lines were tuned on (H100 SXM, H200), and those
 * assumed where the problem names no device (explain for an arch). */
#define TUNED_SMS 132
/* The model's bounds: a head of more blocks (a sequence of 64K rows at 128-row blocks) is not
 * weighed; past WALK_PROGRAMS resident programs, or WALK_GREEDY_ITEMS blocks dealt to the
 * program free first (then the blocks left when the programs part are a causal call's shortest,
 * or all alike), or WALK_RUNS runs of one item kind, the average program's work stands in. */
#define WALK_KINDS 512
#define WALK_PROGRAMS 1024
#define WALK_GREEDY_ITEMS 2048
#define WALK_RUNS 65536

/* One launch's shape as the schedule model sees it. */
typedef struct walk_shape {
    int64_t pairs, seqlen_q, seqlen_k, group; /* group: heads_a_group's */
    int causal, block_counter, varlen;
} walk_shape;

/* The key tiles that rows up to last_row of one (batch, head) of s see, in tiles of bn keys. */
static int64_t key_tiles_seen(const walk_shape *s, int64_t bn, int64_t last_row) {
    const int64_t tiles = (s->seqlen_k + bn - 1) / bn;
    if (!s->causal) return tiles;
    const int64_t last_key = last_row + s->seqlen_k - s->seqlen_q; /* bottom-right aligned */
    const int64_t seen = last_key < 0 ? 0 : last_key / bn + 1;
    return seen < tiles ? seen : tiles;
}

/* How far the kernels move a causal call's blocks back (tile::attn::causal_block_shift,
 * perf-notes A63): with three or more consumer warpgroups, by all but one warpgroup's rows
 * where the last block would hold one warpgroup's rows. (The model takes a varlen call's
 * lengths as its longest sequence's, as its other terms do.) */
static int64_t causal_block_shift(int64_t bm, int64_t consumers, const walk_shape *s) {
    if (!s->causal || consumers < 3) return 0;
    const int64_t rows = s->seqlen_q % bm; /* the last block's */
    return rows > 0 && rows <= 64 ? bm - 64 : 0;
}

/* The work of query block j (0: the first rows) of one (batch, head) of s for blocks of bm
 * rows and bn keys run by `consumers` warpgroups of 64 rows: the pairs its rows compute over
 * 128 x 128, plus BLOCK_OVERHEAD_TILES a 128 rows of bm. Rows count in whole warpgroups where
 * three or more consumers pass those outside the sequence (ws_rows_past: past its end, or
 * before row 0 in a block moved back, causal_block_shift), else in whole blocks;
 * a causal block's key tiles end at its last row's diagonal, or each warpgroup's at its own
 * where the kernel passes the tiles above a warpgroup's rows (ws_own_key_tiles: 64 x
 * (consumers - 1) >= bn; a warpgroup whose rows see no key walks the block's tiles, and so
 * does one past the sequence where two consumers do not pass it). */
static double block_work(int64_t bm, int64_t bn, int64_t consumers, const walk_shape *s,
                         int64_t j) {
    const int64_t m0 = j * bm - causal_block_shift(bm, consumers, s);
    const int64_t end = m0 + bm < s->seqlen_q ? m0 + bm : s->seqlen_q;
    const int64_t quantum = consumers >= 3 ? 64 : bm;
    const int64_t tiles = key_tiles_seen(s, bn, end - 1);
    double pairs = 0.0;
    if (s->causal && 64 * (consumers - 1) >= bn) {
        for (int64_t r0 = m0; r0 < m0 + bm; r0 += 64) {
            if (r0 < 0) continue; /* (a first block moved back: passed) */
            if (r0 >= end && quantum == 64) break;
            const int64_t last = r0 + 63 < end ? r0 + 63 : end - 1;
            const int64_t own =
                last + s->seqlen_k - s->seqlen_q < 0 ? tiles : key_tiles_seen(s, bn, last);
            pairs += 64.0 * (double)(own * bn);
        }
    } else {
        const int64_t rows = (end - m0 + quantum - 1) / quantum * quantum;
        pairs = (double)rows * (double)(tiles * bn);
    }
    return (pairs / 128.0 + BLOCK_OVERHEAD_TILES * (double)bm) / 128.0;
}

/* After the root of a binary min-heap of n values grew: moves it down to its place. */
static void heap_sift_down(double *heap, int64_t n) {
    for (int64_t i = 0;;) {
        int64_t low = i;
        const int64_t l = 2 * i + 1, r = l + 1;
        if (l < n && heap[l] < heap[low]) low = l;
        if (r < n && heap[r] < heap[low]) low = r;
        if (low == i) return;
        const double t = heap[i];
        heap[i] = heap[low];
        heap[low] = t;
        i = low;
    }
}

/* Whether launch() walks a call's blocks head by head, each head's turned (perf-notes A60:
 * blocks_fastest 2): a full fixed-length call whose last block is ragged, on a fixed walk
 * (persistent, no counter). (launch() also requires its keys unsplit: persistent variants never
 * split.) */
static int turned_walk(const tile_variant *v, int causal, int varlen, int counted,
                       int64_t seqlen_q) {
    return v->persistent && !causal && !varlen && !counted && seqlen_q % v->rows_per_program != 0;
}

/* The busiest program's work (block_work's units) when v runs shape s on `resident` programs,
 * as launch() walks it, or 0 where not modelled (WALK_KINDS). The walk's items (blocks, or the
 * paired walk's units of a long and a short block) come as program_block_at orders them: in
 * groups of s->group heads, each group's items kind by kind (the last rows' block first, but
 * with a counter a full call's in order, a ragged last block last), heads fastest. (A full
 * call of equal blocks walks each head's in a row, perf-notes A57: the same loads, its items
 * being alike; a ragged one on the fixed walk, each head's turned, is dealt item by item,
 * turned_walk.) Then:
 * - with a block counter (variants that hand blocks over, given a workspace) or one program per
 *   block (non-persistent variants, and causal calls that do not walk in pairs, which pay
 *   PAIRED_WALK_SAVES_TILES of their own key tiles more a block), each item goes to the
 *   program that frees first;
 * - the fixed walk and the paired one give program i the items i, i + programs, .... */
static double walk_span(const tile_variant *v, const walk_shape *s, int64_t resident) {
    const int64_t bm = v->rows_per_program, bn = tile_variant_param(v, "BLOCK_N");
    if (bm < 1 || bn < 1 || s->pairs < 1 || s->group < 1 || resident < 1) return 0.0;
    const int64_t consumers = tile_variant_param(v, "WARPGROUPS") - 1; /* (+ the producer) */
    const int64_t m_blocks = (s->seqlen_q + bm - 1) / bm, units_a_head = (m_blocks + 1) / 2;
    if (m_blocks < 1 || m_blocks > WALK_KINDS) return 0.0;
    const attention_walk_kind walk = walk_of(v, resident, s->causal, s->block_counter, s->seqlen_q,
                                             s->seqlen_k, s->pairs);
    const int counted = walk.counted, paired = walk.paired, one_each = walk.one_each;
    const int64_t kinds = paired ? units_a_head : m_blocks; /* a head's items */
    const int64_t items = s->pairs > INT64_MAX / kinds ? INT64_MAX : s->pairs * kinds;
    const int64_t programs = resident < items ? resident : items;
    const double own_program =
        one_each ? PAIRED_WALK_SAVES_TILES * (double)(bm * bn) / (128.0 * 128.0) : 0.0;
    const int in_order = counted && !s->causal;
    double work[WALK_KINDS], total = 0.0, longest = 0.0;
    for (int64_t k = 0; k < kinds; k++) {
        const int64_t j = in_order ? k : m_blocks - 1 - k;
        double w = block_work(bm, bn, consumers, s, j) + own_program;
        if (paired && k != j) w += block_work(bm, bn, consumers, s, k); /* its short twin */
        work[k] = w;
        total += w * (double)s->pairs;
        if (w > longest) longest = w;
    }
    const double average = total / (double)programs;
    const int greedy = counted || one_each;
    const int64_t groups = (s->pairs + s->group - 1) / s->group;
    if (programs > WALK_PROGRAMS || (greedy && items > WALK_GREEDY_ITEMS) ||
        groups > WALK_RUNS / kinds)
        return average > longest ? average : longest;
    double load[WALK_PROGRAMS + 1] = {0};
    if (turned_walk(v, s->causal, s->varlen, counted, s->seqlen_q)) {
        /* a head's blocks in a row, turned by the walk's turn at its first (launch(),
         * program_block_at): item by item, within the model's bounds */
        if (items > WALK_RUNS) return average > longest ? average : longest;
        for (int64_t pair = 0; pair < s->pairs; pair++) {
            const int64_t turn = pair * m_blocks / programs % m_blocks;
            for (int64_t j = 0; j < m_blocks; j++)
                load[(pair * m_blocks + j) % programs] += work[(j + turn) % m_blocks];
        }
        double busiest = 0.0;
        for (int64_t i = 0; i < programs; i++)
            if (load[i] > busiest) busiest = load[i];
        return busiest;
    }
    int64_t position = 0; /* the walk's, mod programs for the fixed walk */
    for (int64_t g = 0; g < groups; g++) {
        const int64_t size = g < groups - 1 ? s->group : s->pairs - g * s->group;
        for (int64_t k = 0; k < kinds; k++) {
            if (greedy) { /* each to the program free first: the heap's root */
                for (int64_t t = 0; t < size; t++) {
                    load[0] += work[k];
                    heap_sift_down(load, programs);
                }
                continue;
            }
            /* programs position .. position + size - 1, wrapping: whole laps, then a stretch
             * (a difference array in load, summed below) */
            const int64_t laps = size / programs, rest = size % programs, end = position + rest;
            load[0] += work[k] * (double)laps;
            load[programs] -= work[k] * (double)laps;
            load[position] += work[k];
            if (end <= programs) {
                load[end] -= work[k];
            } else {
                load[programs] -= work[k];
                load[0] += work[k];
                load[end - programs] -= work[k];
            }
            position = end % programs;
        }
    }
    double busiest = 0.0, run = 0.0;
    for (int64_t i = 0; i < programs; i++) {
        const double at = greedy ? load[i] : (run += load[i]);
        if (at > busiest) busiest = at;
    }
    return busiest;
}

int tile_attention_walk_modelled(const tile_variant *v) {
    return v->persistent && tile_variant_uses_tensor_maps(v);
}

double tile_attention_walk_ratio(int32_t variant, const tile_problem *p, int32_t bucket_rows_log2) {
    const tile_variant *v = &tile_registry[variant];
    const int64_t *grid = attention_tune_shape((int64_t)1 << bucket_rows_log2);
    if (!grid || p->seqlen_q < 1 || p->seqlen_k < 1) return 0.0;
    const int64_t per_sm = p->blocks_per_sm ? p->blocks_per_sm[variant] : 1;
    const int64_t resident = (p->sm_count > 0 ? p->sm_count : TUNED_SMS) * per_sm;
    const int64_t call_pairs = p->rows / p->seqlen_q;
    const walk_shape tuned = {.pairs = grid[0] * grid[1], .seqlen_q = grid[3], .seqlen_k = grid[3],
                              .group = heads_a_group(p->dtype, p->cols, grid[3], 0,
                                                     grid[0] * grid[1]),
                              .causal = 0, .block_counter = 1}; /* (tune passes a workspace) */
    const walk_shape call = {.pairs = call_pairs, .seqlen_q = p->seqlen_q, .seqlen_k = p->seqlen_k,
                             .group = heads_a_group(p->dtype, p->cols, p->seqlen_k, p->causal,
                                                    call_pairs),
                             .causal = p->causal, .block_counter = p->block_counter,
                             .varlen = p->varlen};
    /* the line's shape on the devices it was tuned on */
    const double on_grid = walk_span(v, &tuned, TUNED_SMS * per_sm),
                 on_call = walk_span(v, &call, resident);
    return on_grid > 0.0 && on_call > 0.0 ? on_call / on_grid : 0.0;
}

/* How launch splits a call's keys: `splits` of split_keys keys each (1: no split). */
typedef struct key_split {
    int64_t splits, split_keys;
} key_split;

/* The split of a call on v (one program a block; perf-notes A45) where `allowed` (the call
 * splits its keys, tile_problem_splits_keys, or its variant was forced): as many splits as fill
 * the device's resident programs of v in one wave, within split_limit and the caller's
 * workspace, each a whole number of v's key tiles but the last. The warp-specialized kernels
 * (persistent, by tensor maps) store no shares: never split. */
static key_split split_of(const tile_device *device, int32_t variant,
                          const tile_flash_attention_args *a, int64_t m_blocks, int allowed) {
    const tile_variant *v = &tile_registry[variant];
    key_split none = {1, a->seqlen_k};
    const size_t room = workspace_room(a);
    if (!allowed || !variant_splits_keys(v) || !a->workspace || room < SPLIT_SHARES_OFFSET)
        return none;
    const int64_t blocks = (int64_t)a->batch * a->heads_q * m_blocks;
    if (blocks > SPLIT_COUNTERS) return none; /* (the counters' room: split_limit's bound) */
    int64_t n = tile_resident_programs(device, variant) / blocks;
    const int64_t limit = split_limit(a);
    if (n > limit) n = limit;
    while (n >= 2 && split_bytes(a, n) > room) n--;
    if (n < 2) return none;
    const int64_t block_n = tile_variant_param(v, "BLOCK_N");
    const int64_t keys = ((a->seqlen_k + n - 1) / n + block_n - 1) / block_n * block_n;
    return (key_split){(a->seqlen_k + keys - 1) / keys, keys}; /* none of them empty */
}

static tile_status launch(const char *fn, const tile_device *device, int32_t variant,
                          const tile_flash_attention_args *a, const query_fold *fold,
                          int split_allowed, tile_stream stream) {
    const tile_variant *v = &tile_registry[variant];
    if (a->seqlen_q == 0) return TILE_STATUS_SUCCESS; /* varlen, every sequence empty */
    const int varlen = a->cu_seqlens_q != NULL;
    const float scale = a->scale != 0.0f ? a->scale : 1.0f / sqrtf((float)a->head_dim);
    const int64_t m_blocks = (a->seqlen_q + v->rows_per_program - 1) / v->rows_per_program;
    const key_split split = split_of(device, variant, a, m_blocks, split_allowed);
    /* the walk's batches: (batch, split) pairs */
    const int64_t pairs = (int64_t)a->batch * split.splits * a->heads_q;
    const int32_t head_group = (int32_t)heads_a_group(a->dtype, a->head_dim, a->seqlen_k, a->causal,
                                                      pairs);
    const int64_t units = pairs * ((m_blocks + 1) / 2); /* of a paired walk: two blocks each */
    /* With a workspace the programs that hand blocks over (grid param HANDED) take them from
     * its counter as they finish, longest first, causal ones too: no fixed share to balance
     * (perf-notes A28); the others keep the fixed walk and leave the workspace alone. */
    const attention_walk_kind walk =
        walk_of(v, tile_resident_programs(device, variant), a->causal, a->workspace != NULL,
                a->seqlen_q, a->seqlen_k, pairs);
    const int counted = walk.counted, paired = walk.paired;
    const int64_t units_a_pair = paired ? (m_blocks + 1) / 2 : m_blocks; /* of a (batch, head) */
    const int64_t items = paired ? units : m_blocks * pairs; /* the walk's */
    const int64_t programs = tile_launched_programs(device, variant, items, walk.one_each);
    tile_attention_kernel_args k = {
        .o = a->o,
        .q = a->q,
        .k = a->k,
        .v = a->v,
        .lse = a->lse,
        .cu_seqlens_q = a->cu_seqlens_q,
        .cu_seqlens_k = a->cu_seqlens_k,
        .q_batch = a->q_batch_stride,
        .q_seq = a->q_seq_stride,
        .q_head = a->q_head_stride,
        .k_batch = a->k_batch_stride,
        .k_seq = a->k_seq_stride,
        .k_head = a->k_head_stride,
        .v_batch = a->v_batch_stride,
        .v_seq = a->v_seq_stride,
        .v_head = a->v_head_stride,
        .o_batch = a->o_batch_stride,
        .o_seq = a->o_seq_stride,
        .o_head = a->o_head_stride,
        .lse_batch = varlen ? 0 : (int64_t)a->heads_q * a->seqlen_q,
        .lse_head = fold->heads > 1 ? fold->heads * fold->lse_stride
                    : varlen        ? a->total_q
                                    : a->seqlen_q,
        .batch = (int32_t)(a->batch * split.splits),
        .heads_q = a->heads_q,
        .heads_kv = a->heads_kv,
        .head_dim = a->head_dim,
        .seqlen_q = (int32_t)a->seqlen_q,
        .seqlen_k = (int32_t)a->seqlen_k,
        .m_blocks = (int32_t)m_blocks,
        .head_group = head_group,
        .causal = a->causal,
        .paired = paired,
        /* a head's blocks in a row (perf-notes A57): full calls of the persistent variants,
         * whose equal blocks no order unbalances; a ragged last block on a fixed walk with
         * each head's blocks turned (A60), so that block goes round the programs */
        .blocks_fastest = !v->persistent || a->causal || varlen || split.splits > 1 ? 0
                          : turned_walk(v, a->causal, varlen, counted, a->seqlen_q)     ? 2
                          : a->seqlen_q % v->rows_per_program == 0                      ? 1
                                                                                        : 0,
        .group_units = tile_divisor_of((uint32_t)(head_group * units_a_pair)),
        .group_pairs = tile_divisor_of((uint32_t)head_group),
        .last_group_pairs =
            tile_divisor_of((uint32_t)(pairs - (pairs - 1) / head_group * head_group)),
        .heads_q_div = tile_divisor_of((uint32_t)a->heads_q),
        .heads_per_kv = tile_divisor_of((uint32_t)(a->heads_q / a->heads_kv)),
        .m_blocks_div = tile_divisor_of((uint32_t)m_blocks),
        .programs_div = tile_divisor_of((uint32_t)(programs > 0 ? programs : 1)), /* (0: refused) */
        .scale = scale,
        .scale_log2 = scale * LOG2_E,
        .block_counter = counted ? a->workspace : NULL,
        .splits = (int32_t)split.splits,
        .split_keys = (int32_t)split.split_keys,
        .fold = fold->heads,
        .q_fold = fold->q_stride,
        .o_fold = fold->o_stride,
        .lse_fold = fold->lse_stride,
    };
    if (split.splits > 1) {
        unsigned char *ws = a->workspace;
        k.split_counters = (unsigned *)(ws + SPLIT_COUNTERS_OFFSET);
        k.split_lse = (float *)(ws + SPLIT_SHARES_OFFSET);
        k.split_o = k.split_lse + split_lse_floats(split_rows(a, split.splits));
    }
    if (tile_variant_uses_tensor_maps(v)) {
        const tile_status s = encode_maps(fn, v, a, &k);
        if (s != TILE_STATUS_SUCCESS) return s;
    }
    void *args[] = {&k};
    return tile_launch_programs(device, variant, items, walk.one_each, stream, args);
}

static tile_status run(const char *fn, int forced, int32_t variant,
                       const tile_flash_attention_args *args, tile_stream stream) {
    tile_begin_call();
    tile_flash_attention_args a;
    tile_status s = copy_args(fn, args, &a);
    if (s != TILE_STATUS_SUCCESS) return s;
    tile_alignment al;
    if ((s = check_args(fn, &a, &al)) != TILE_STATUS_SUCCESS) return s;
    /* (forced: any variant runs, a persistent one unsplit, one of tensor maps unfolded) */
    const int maps = forced && variant >= 0 && variant < tile_registry_count &&
                     tile_variant_uses_tensor_maps(&tile_registry[variant]);
    const query_fold fold = fold_query_heads(&a, !maps);
    tile_problem p = problem_of(&a, &fold, al.bytes);
    if (forced) p.key_split_blocks = 0;
    const tile_device *device;
    if ((s = tile_choose_variant(fn, forced, &variant, &p, &al, &device))) return s;
    const int split = forced || tile_problem_splits_keys(&p); /* (p has the device's SMs now) */
    s = launch(fn, device, variant, &a, &fold, split, stream);
    const int32_t other = tile_tensor_map_fallback(&p, variant, forced, s);
    return other >= 0 ? launch(fn, device, other, &a, &fold, split, stream) : s;
}

tile_status tile_flash_attention(const tile_flash_attention_args *args, tile_stream stream) {
    return run("tile_flash_attention", 0, -1, args, stream);
}

tile_status tile_flash_attention_variant(int32_t variant, const tile_flash_attention_args *args,
                                         tile_stream stream) {
    return run("tile_flash_attention_variant", 1, variant, args, stream);
}

tile_status tile_flash_attention_workspace_size(const tile_flash_attention_args *args,
                                                size_t *bytes) {
    static const char fn[] = "tile_flash_attention_workspace_size";
    tile_begin_call();
    if (!bytes) return tile_fail(TILE_STATUS_INVALID_ARGUMENT, "%s: bytes is NULL", fn);
    tile_flash_attention_args a;
    tile_status s = copy_args(fn, args, &a);
    if (s != TILE_STATUS_SUCCESS) return s;
    a.workspace = NULL; /* not this function's to check */
    a.workspace_bytes = 0;
    tile_alignment al;
    if ((s = check_args(fn, &a, &al)) != TILE_STATUS_SUCCESS) return s;
    (void)fold_query_heads(&a, 1);
    const size_t split = split_bytes(&a, split_limit(&a));
    *bytes = split > TILE_FLASH_ATTENTION_WORKSPACE_BYTES ? split : TILE_FLASH_ATTENTION_WORKSPACE_BYTES;
    return TILE_STATUS_SUCCESS;
}

tile_status tile_flash_attention_explain(const tile_flash_attention_args *args, int32_t arch,
                                         tile_decision *decision) {
    static const char fn[] = "tile_flash_attention_explain";
    tile_begin_call();
    tile_status s = tile_check_decision(fn, decision);
    if (s != TILE_STATUS_SUCCESS) return s;
    tile_flash_attention_args a;
    if ((s = copy_args(fn, args, &a)) != TILE_STATUS_SUCCESS) return s;
    tile_alignment al;
    if ((s = check_args(fn, &a, &al)) != TILE_STATUS_SUCCESS) return s;
    const query_fold fold = fold_query_heads(&a, 1);
    tile_problem p = problem_of(&a, &fold, al.bytes);
    s = tile_explain_problem(fn, &p, arch, decision);
    const tile_variant *v = s == TILE_STATUS_SUCCESS ? &tile_registry[decision->variant] : NULL;
    /* (the split count is the launch's: the device's resident programs of the variant) */
    if (v && tile_problem_splits_keys(&p) && variant_splits_keys(v))
        tile_decision_append(decision, "; its keys split over programs (2 to %lld)",
                             (long long)split_limit(&a));
    if (v && fold.heads > 1)
        tile_decision_append(decision, "; %d query heads a key/value head fold into its rows",
                             (int)fold.heads);
    return tile_name_misaligned(fn, s, &al);
}
