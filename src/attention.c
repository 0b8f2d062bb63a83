/* tile_flash_attention: validate, dispatch, launch (kernels/attention.tile, op "attention"). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "attention_args.h"
#include "internal.h"

static const char attention_op[] = "attention";

/* The fields of tile_flash_attention_args as version 1 defined them. */
#define TILE_FLASH_ATTENTION_ARGS_V1_SIZE \
    (offsetof(tile_flash_attention_args, lse) + sizeof(float *))

tile_status tile_flash_attention_init(tile_flash_attention_args *args, size_t struct_size) {
    tile_begin_call();
    if (!args)
        return tile_fail(TILE_STATUS_INVALID_ARGUMENT, "tile_flash_attention_init: args is NULL");
    if (struct_size < TILE_FLASH_ATTENTION_ARGS_V1_SIZE)
        return tile_fail(TILE_STATUS_INVALID_ARGUMENT,
                         "tile_flash_attention_init: struct_size is %zu; pass "
                         "sizeof(tile_flash_attention_args) (%zu)",
                         struct_size, sizeof(tile_flash_attention_args));
    memset(args, 0, struct_size);
    args->struct_size = struct_size;
    return TILE_STATUS_SUCCESS;
}

/* Copies the caller's args (of the size they were compiled with) into a full, zeroed struct. */
static tile_status copy_args(const char *fn, const tile_flash_attention_args *args,
                             tile_flash_attention_args *a) {
    if (!args) return tile_fail(TILE_STATUS_INVALID_ARGUMENT, "%s: args is NULL", fn);
    if (args->struct_size < TILE_FLASH_ATTENTION_ARGS_V1_SIZE)
        return tile_fail(TILE_STATUS_INVALID_ARGUMENT,
                         "%s: args->struct_size is %zu; set it to "
                         "sizeof(tile_flash_attention_args) (%zu)",
                         fn, args->struct_size, sizeof(tile_flash_attention_args));
    memset(a, 0, sizeof *a);
    memcpy(a, args, args->struct_size < sizeof *a ? args->struct_size : sizeof *a);
    return TILE_STATUS_SUCCESS;
}

/* One of q, k, v, o: [batch or 1, tokens, heads, head_dim] by strides. */
typedef struct tensor_desc {
    const char *name;
    const void *p;
    int64_t batch_stride, seq_stride, head_stride;
    int64_t batches, tokens, heads;
    int is_output;
} tensor_desc;

/* The alignment of every tensor pointer and stride (what dispatch matches against a variant's
 * align_bytes), and the argument that set it, for a MISALIGNED message that names it. */
typedef struct alignment {
    int32_t bytes;
    char what[96];
} alignment;

static void lower_alignment(alignment *al, uint64_t value, const char *fmt, ...)
    TILE_PRINTF(3, 4);
static void lower_alignment(alignment *al, uint64_t value, const char *fmt, ...) {
    const int32_t a = tile_alignment_of(value);
    if (a >= al->bytes) return;
    al->bytes = a;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(al->what, sizeof al->what, fmt, ap);
    va_end(ap);
}

/* An output's positions must not share elements: taken in increasing order, each of its
 * strides (over an axis of more than one position) is at least the span of head_dim and the
 * axes before it. */
static tile_status check_output_overlap(const char *fn, const tensor_desc *t, int64_t head_dim,
                                        const int64_t strides[3], const int64_t counts[3],
                                        const char *const axis[3]) {
    int order[3] = {2, 1, 0}, n = 0; /* head, seq, batch: the usual increasing order */
    for (int i = 0; i < 3; i++)
        if (counts[order[i]] > 1) order[n++] = order[i];
    for (int i = 1; i < n; i++) /* insertion sort by stride; ties keep the usual order */
        for (int j = i; j > 0 && strides[order[j]] < strides[order[j - 1]]; j--) {
            const int tmp = order[j];
            order[j] = order[j - 1];
            order[j - 1] = tmp;
        }
    int64_t span = head_dim; /* no overflow: the extent check bounds the sum */
    for (int i = 0; i < n; i++) {
        const int x = order[i];
        if (strides[x] < span)
            return tile_fail(TILE_STATUS_INVALID_ARGUMENT,
                             "%s: %s_%s_stride is %lld; it must be >= %lld (head_dim %lld and "
                             "the axes of smaller stride), or %s's positions overlap",
                             fn, t->name, axis[x], (long long)strides[x], (long long)span,
                             (long long)head_dim, t->name);
        span += (counts[x] - 1) * strides[x];
    }
    return TILE_STATUS_SUCCESS;
}

/* Checks a tensor's pointer, strides and byte extent; lowers al to what its pointer and
 * strides allow. */
static tile_status check_tensor(const char *fn, const tensor_desc *t, int64_t head_dim,
                                size_t elem, alignment *al) {
    if (!t->p) return tile_fail(TILE_STATUS_INVALID_ARGUMENT, "%s: %s is NULL", fn, t->name);
    const int64_t strides[3] = {t->batch_stride, t->seq_stride, t->head_stride};
    const int64_t counts[3] = {t->batches, t->tokens, t->heads};
    static const char *const axis[3] = {"batch", "seq", "head"};
    int64_t last = head_dim; /* elements up to the last one, + 1 */
    const int64_t limit = INT64_MAX / (int64_t)elem;
    for (int i = 0; i < 3; i++) {
        if (strides[i] < 0)
            return tile_fail(TILE_STATUS_INVALID_ARGUMENT,
                             "%s: %s_%s_stride is %lld; strides must be >= 0", fn, t->name,
                             axis[i], (long long)strides[i]);
        if (counts[i] > 1 && strides[i] > 0) {
            if (strides[i] > (limit - last) / (counts[i] - 1))
                return tile_fail(TILE_STATUS_INVALID_ARGUMENT,
                                 "%s: %s's extent (%lld x %s_%s_stride %lld) in %zu-byte "
                                 "elements overflows int64",
                                 fn, t->name, (long long)counts[i], t->name, axis[i],
                                 (long long)strides[i], elem);
            last += (counts[i] - 1) * strides[i];
        }
        if (counts[i] > 1)
            lower_alignment(al, (uint64_t)strides[i] * elem, "%s_%s_stride %lld (%llu bytes)",
                            t->name, axis[i], (long long)strides[i],
                            (unsigned long long)strides[i] * elem);
    }
    if (t->is_output) {
        tile_status s = check_output_overlap(fn, t, head_dim, strides, counts, axis);
        if (s != TILE_STATUS_SUCCESS) return s;
    }
    if ((uintptr_t)t->p % elem)
        return tile_fail(TILE_STATUS_MISALIGNED, "%s: %s (%p) is not aligned to its %zu-byte elements",
                         fn, t->name, t->p, elem);
    lower_alignment(al, (uintptr_t)t->p, "%s (%p)", t->name, t->p);
    return TILE_STATUS_SUCCESS;
}

/* Validates *a (every rule in fusedops.h) and computes the alignment of every tensor. */
static tile_status check_args(const char *fn, const tile_flash_attention_args *a,
                              alignment *align) {
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
    const size_t elem = tile_dtype_size(a->dtype);
    const int64_t batches = varlen ? 1 : a->batch;
    const int64_t tokens_q = varlen ? a->total_q : a->seqlen_q;
    const int64_t tokens_k = varlen ? a->total_k : a->seqlen_k;
    const tensor_desc tensors[4] = {
        {"q", a->q, a->q_batch_stride, a->q_seq_stride, a->q_head_stride, batches, tokens_q,
         a->heads_q, 0},
        {"k", a->k, a->k_batch_stride, a->k_seq_stride, a->k_head_stride, batches, tokens_k,
         a->heads_kv, 0},
        {"v", a->v, a->v_batch_stride, a->v_seq_stride, a->v_head_stride, batches, tokens_k,
         a->heads_kv, 0},
        {"o", a->o, a->o_batch_stride, a->o_seq_stride, a->o_head_stride, batches, tokens_q,
         a->heads_q, 1},
    };
    *align = (alignment){.bytes = 256};
    for (int i = 0; i < 4; i++) {
        tile_status s = check_tensor(fn, &tensors[i], a->head_dim, elem, align);
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
    return TILE_STATUS_SUCCESS;
}

/* The problem as dispatch sees it: rows are the query rows of all heads (the work), cols the
 * head dimension (a variant takes heads up to its max_cols). */
static tile_problem problem_of(const tile_flash_attention_args *a, int32_t align) {
    int64_t rows = (int64_t)a->batch * a->heads_q; /* < 2^62 */
    const int64_t seq = a->seqlen_q > 0 ? a->seqlen_q : 1;
    rows = rows > INT64_MAX / seq ? INT64_MAX : rows * seq;
    return (tile_problem){attention_op, a->dtype, rows, a->head_dim, align, 0, 0, 0, 0};
}

static tile_status launch(const tile_device *device, int32_t variant,
                          const tile_flash_attention_args *a, tile_stream stream) {
    const tile_variant *v = &tile_registry[variant];
    if (a->seqlen_q == 0) return TILE_STATUS_SUCCESS; /* varlen, every sequence empty */
    const int varlen = a->cu_seqlens_q != NULL;
    const float scale = a->scale != 0.0f ? a->scale : 1.0f / sqrtf((float)a->head_dim);
    const int64_t m_blocks = (a->seqlen_q + v->rows_per_program - 1) / v->rows_per_program;
    /* Programs run in groups of heads whose K and V (about 16 MiB together) stay in L2 while
     * every query block of the group reads them (perf-notes A8). */
    const int64_t kv_bytes = 2 * (a->seqlen_k > 0 ? a->seqlen_k : 1) * a->head_dim *
                             (int64_t)tile_dtype_size(a->dtype);
    const int64_t pairs = (int64_t)a->batch * a->heads_q;
    int64_t group = ((int64_t)16 << 20) / kv_bytes;
    group = group < 1 ? 1 : group > pairs ? pairs : group;
    const int32_t head_group = (int32_t)group;
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
        .lse_head = varlen ? a->total_q : a->seqlen_q,
        .batch = a->batch,
        .heads_q = a->heads_q,
        .heads_kv = a->heads_kv,
        .head_dim = a->head_dim,
        .seqlen_q = (int32_t)a->seqlen_q,
        .seqlen_k = (int32_t)a->seqlen_k,
        .m_blocks = (int32_t)m_blocks,
        .head_group = head_group,
        .causal = a->causal,
        .scale = scale,
        .scale_log2 = scale * 1.4426950408889634f,
    };
    void *args[] = {&k};
    return tile_launch(device, variant, m_blocks * a->heads_q * a->batch, stream, args);
}

/* Dispatch's MISALIGNED names the alignment a variant needs; add which argument of the
 * caller's has less (and the function, where the message lacks it). */
static tile_status name_misaligned(const char *fn, tile_status s, const alignment *al) {
    if (s != TILE_STATUS_MISALIGNED) return s;
    char detail[512];
    snprintf(detail, sizeof detail, "%s", tile_last_error());
    const int named = !strncmp(detail, fn, strlen(fn));
    return tile_fail(s, "%s%s%s; the least aligned argument is %s", named ? "" : fn,
                     named ? "" : ": ", detail, al->what);
}

static tile_status run(const char *fn, int forced, int32_t variant,
                       const tile_flash_attention_args *args, tile_stream stream) {
    tile_begin_call();
    tile_flash_attention_args a;
    tile_status s = copy_args(fn, args, &a);
    if (s != TILE_STATUS_SUCCESS) return s;
    alignment al;
    if ((s = check_args(fn, &a, &al)) != TILE_STATUS_SUCCESS) return s;
    if (forced && (s = tile_check_variant_index(fn, variant, attention_op, a.dtype))) return s;
    const tile_device *device;
    if ((s = tile_current_device(&device)) != TILE_STATUS_SUCCESS) return s;
    tile_problem p = problem_of(&a, al.bytes);
    p.arch = device->arch;
    p.sm_count = device->sm_count;
    p.smem_limit = device->smem_limit;
    if (forced) s = tile_check_variant(fn, variant, &p);
    else s = tile_dispatch_cached(&p, &variant);
    if (s != TILE_STATUS_SUCCESS) return name_misaligned(fn, s, &al);
    return launch(device, variant, &a, stream);
}

tile_status tile_flash_attention(const tile_flash_attention_args *args, tile_stream stream) {
    return run("tile_flash_attention", 0, -1, args, stream);
}

tile_status tile_flash_attention_variant(int32_t variant, const tile_flash_attention_args *args,
                                         tile_stream stream) {
    return run("tile_flash_attention_variant", 1, variant, args, stream);
}

tile_status tile_flash_attention_explain(const tile_flash_attention_args *args, int32_t arch,
                                         tile_decision *decision) {
    static const char fn[] = "tile_flash_attention_explain";
    tile_begin_call();
    tile_status s = tile_check_decision(fn, decision);
    if (s != TILE_STATUS_SUCCESS) return s;
    tile_flash_attention_args a;
    if ((s = copy_args(fn, args, &a)) != TILE_STATUS_SUCCESS) return s;
    alignment al;
    if ((s = check_args(fn, &a, &al)) != TILE_STATUS_SUCCESS) return s;
    tile_problem p = problem_of(&a, al.bytes);
    return name_misaligned(fn, tile_explain_problem(fn, &p, arch, decision), &al);
}
