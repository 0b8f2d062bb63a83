/* Flash attention on the GPU against a float64 CPU reference: every attention variant compiled
 * for this GPU and the dispatcher, on ragged sequence lengths (1, 17, 127, 128, 1000, 4096),
 * seqlen_q != seqlen_k with causal masking, varlen batches with empty and one-token sequences,
 * GQA ratios 1, 4 and 8, head dims from 32 to 256 (and ones between the variants' widths), BSHD,
 * BHSD and padded layouts, with the log-sum-exp output, and decode calls (one or a few queries
 * a head) whose query heads the library reads as one sequence of each key/value head's.
 *
 * The error rule (as FlashAttention's own tests): the largest error of our output against the
 * float64 reference may be at most twice that of a reference computed in fp32 with P rounded
 * to the storage type before P V and the output rounded to it (plus 1e-3 of the output's
 * scale). NaN never passes. Outputs and lse are poisoned (NaN) first: every position of the
 * sequences must be written, and positions outside them (padding between heads and rows) must
 * stay poisoned. Long sequences check a sample of query rows per head against the reference, a
 * row every 63 at most (every row is still checked for being written and finite, and its lse
 * for being written). Some varlen cases fill one
 * sequence's keys and values with +Inf: the sequences before and after it must come out exact
 * (a key tile that runs past its sequence's end reads none of the next one's tokens).
 *
 * Exits 77 (ctest SKIP_RETURN_CODE) where there is no GPU. FUSEDOPS_TEST_VARIANT=substring (or
 * a glob over the whole name: support_variant_selected) limits the per-variant part to matching
 * names. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fusedops.h"
#include "support.h"

static support_gpu gpu;
static int cases_run, case_failures;

enum layout { BSHD, BHSD, BSHD_PADDED };

typedef struct attn_case {
    int32_t variant; /* -1: the dispatcher */
    tile_dtype dtype;
    int32_t batch, heads_q, heads_kv, head_dim;
    int64_t seqlen_q, seqlen_k; /* fixed lengths (varlen: ignored) */
    int causal;
    enum layout layout;
    const int32_t *lens_q, *lens_k; /* varlen: batch lengths each, or NULL */
    int with_lse;
    int sample; /* query rows checked against the reference per (batch, head); 0: all */
    uint64_t seed;
    /* varlen: 1 + the sequence whose keys and values are all +Inf (0: none). Its own rows are
     * not checked; every other sequence's must be exact: what lies in the tensors past a
     * sequence's end (its neighbour's tokens) never reaches its output. */
    int32_t poisoned;
} attn_case;

/* Strides (elements) of a [batch, tokens, heads, head_dim] tensor in the case's layout. */
typedef struct strides {
    int64_t batch, seq, head, elements;
} strides;
static strides layout_strides(enum layout layout, int64_t batches, int64_t tokens, int64_t heads,
                              int64_t d) {
    strides s;
    if (layout == BHSD) {
        s.seq = d;
        s.head = tokens * d;
        s.batch = heads * tokens * d;
    } else if (layout == BSHD_PADDED) { /* gaps after every head and every token */
        s.head = d + 8;
        s.seq = heads * (d + 8) + 16;
        s.batch = tokens * s.seq + 8;
    } else {
        s.head = d;
        s.seq = heads * d;
        s.batch = tokens * heads * d;
    }
    s.elements = batches * s.batch;
    return s;
}

static int64_t offset_of(const strides *s, int64_t b, int64_t t, int64_t h) {
    return b * s->batch + t * s->seq + h * s->head;
}

static float round_to(tile_dtype dt, float f) {
    return dt == TILE_DTYPE_BF16 ? support_bf16_to_float(support_float_to_bf16(f))
                                 : support_half_to_float(support_float_to_half(f));
}

/* Fills a tensor: positions inside the sequences get stored uniform values, padding NaN (the
 * kernels must never read it). */
static float *make_tensor(const attn_case *c, const strides *s, int64_t batches, int64_t tokens,
                          int64_t heads, uint64_t seed) {
    float *t = support_xmalloc((size_t)s->elements * sizeof *t);
    for (int64_t i = 0; i < s->elements; i++) t[i] = NAN;
    float *vals = support_stored_uniform(c->dtype, (size_t)(batches * tokens * heads * c->head_dim),
                                         seed, -2.0f, 2.0f);
    int64_t n = 0;
    for (int64_t b = 0; b < batches; b++)
        for (int64_t tk = 0; tk < tokens; tk++)
            for (int64_t h = 0; h < heads; h++)
                for (int64_t d = 0; d < c->head_dim; d++) t[offset_of(s, b, tk, h) + d] = vals[n++];
    free(vals);
    return t;
}

static int64_t imin(int64_t a, int64_t b) { return a < b ? a : b; }

/* Runs one case; returns the number of problems (-1 when the call itself failed). */
static int64_t run_attn(const attn_case *c, tile_status *status, double *err_out,
                        double *err_lp_out) {
    const tile_driver *drv = gpu.drv;
    const tile_dtype dt = c->dtype;
    const size_t elem = support_dtype_size(dt);
    const int varlen = c->lens_q != NULL;
    const int64_t D = c->head_dim;
    /* Sequence extents per batch entry. */
    int32_t *cu_q = support_xmalloc(sizeof(int32_t) * (size_t)(c->batch + 1));
    int32_t *cu_k = support_xmalloc(sizeof(int32_t) * (size_t)(c->batch + 1));
    int64_t max_q = 0, max_k = 0;
    cu_q[0] = cu_k[0] = 0;
    for (int32_t b = 0; b < c->batch; b++) {
        const int64_t lq = varlen ? c->lens_q[b] : c->seqlen_q;
        const int64_t lk = varlen ? c->lens_k[b] : c->seqlen_k;
        cu_q[b + 1] = cu_q[b] + (int32_t)lq;
        cu_k[b + 1] = cu_k[b] + (int32_t)lk;
        if (lq > max_q) max_q = lq;
        if (lk > max_k) max_k = lk;
    }
    const int64_t batches = varlen ? 1 : c->batch;
    const int64_t tokens_q = varlen ? cu_q[c->batch] : c->seqlen_q;
    const int64_t tokens_k = varlen ? cu_k[c->batch] : c->seqlen_k;
    const strides sq = layout_strides(c->layout, batches, tokens_q, c->heads_q, D);
    const strides sk = layout_strides(c->layout, batches, tokens_k, c->heads_kv, D);
    float *q = make_tensor(c, &sq, batches, tokens_q, c->heads_q, c->seed * 3 + 0);
    float *k = make_tensor(c, &sk, batches, tokens_k, c->heads_kv, c->seed * 3 + 1);
    float *v = make_tensor(c, &sk, batches, tokens_k, c->heads_kv, c->seed * 3 + 2);
    const int32_t poisoned = varlen ? c->poisoned - 1 : -1;
    if (poisoned >= 0)
        for (int64_t t = cu_k[poisoned]; t < cu_k[poisoned + 1]; t++)
            for (int64_t h = 0; h < c->heads_kv; h++)
                for (int64_t d = 0; d < D; d++)
                    k[offset_of(&sk, 0, t, h) + d] = v[offset_of(&sk, 0, t, h) + d] = INFINITY;
    CUdeviceptr bq, bk, bv, bo = 0, blse = 0, bcq = 0, bck = 0;
    const CUdeviceptr dq = support_upload(&gpu, dt, q, (size_t)sq.elements, 0, &bq);
    const CUdeviceptr dk = support_upload(&gpu, dt, k, (size_t)sk.elements, 0, &bk);
    const CUdeviceptr dv = support_upload(&gpu, dt, v, (size_t)sk.elements, 0, &bv);
    const size_t o_bytes = (size_t)sq.elements * elem;
    SUPPORT_CHECK(&gpu, drv->cuMemAlloc(&bo, o_bytes));
    SUPPORT_CHECK(&gpu, drv->cuMemsetD8(bo, 0xff, o_bytes)); /* NaN in f16 and bf16 */
    const int64_t lse_n = varlen ? c->heads_q * tokens_q : c->batch * c->heads_q * c->seqlen_q;
    if (c->with_lse) {
        SUPPORT_CHECK(&gpu, drv->cuMemAlloc(&blse, (size_t)lse_n * sizeof(float)));
        SUPPORT_CHECK(&gpu, drv->cuMemsetD8(blse, 0xff, (size_t)lse_n * sizeof(float)));
    }
    if (varlen) {
        const size_t bytes = sizeof(int32_t) * (size_t)(c->batch + 1);
        SUPPORT_CHECK(&gpu, drv->cuMemAlloc(&bcq, bytes));
        SUPPORT_CHECK(&gpu, drv->cuMemAlloc(&bck, bytes));
        SUPPORT_CHECK(&gpu, drv->cuMemcpyHtoD(bcq, cu_q, bytes));
        SUPPORT_CHECK(&gpu, drv->cuMemcpyHtoD(bck, cu_k, bytes));
    }
    tile_flash_attention_args a;
    tile_flash_attention_init(&a, sizeof a);
    a.dtype = dt;
    a.batch = c->batch;
    a.heads_q = c->heads_q;
    a.heads_kv = c->heads_kv;
    a.head_dim = c->head_dim;
    a.causal = c->causal;
    a.seqlen_q = varlen ? max_q : c->seqlen_q;
    a.seqlen_k = varlen ? max_k : c->seqlen_k;
    a.q = (const void *)dq;
    a.k = (const void *)dk;
    a.v = (const void *)dv;
    a.o = (void *)bo;
    a.q_batch_stride = sq.batch, a.q_seq_stride = sq.seq, a.q_head_stride = sq.head;
    a.k_batch_stride = sk.batch, a.k_seq_stride = sk.seq, a.k_head_stride = sk.head;
    a.v_batch_stride = sk.batch, a.v_seq_stride = sk.seq, a.v_head_stride = sk.head;
    a.o_batch_stride = sq.batch, a.o_seq_stride = sq.seq, a.o_head_stride = sq.head;
    if (varlen) {
        a.cu_seqlens_q = (const int32_t *)bcq;
        a.cu_seqlens_k = (const int32_t *)bck;
        a.total_q = tokens_q;
        a.total_k = tokens_k;
    }
    a.lse = c->with_lse ? (float *)blse : NULL;
    /* odd seeds: a workspace of all the call can use (blocks from its counter, key splits),
     * its counters left zeroed */
    size_t ws_bytes = TILE_FLASH_ATTENTION_WORKSPACE_BYTES;
    if (c->seed & 1 && tile_flash_attention_workspace_size(&a, &ws_bytes) != TILE_STATUS_SUCCESS) {
        fprintf(stderr, "  workspace size: %s\n", tile_last_error());
        ws_bytes = TILE_FLASH_ATTENTION_WORKSPACE_BYTES;
    }
    const CUdeviceptr bws = c->seed & 1 ? support_zeroed_workspace(&gpu, ws_bytes) : 0;
    a.workspace = (void *)(uintptr_t)bws;
    a.workspace_bytes = bws ? ws_bytes : 0;
    *status = c->variant >= 0 ? tile_flash_attention_variant(c->variant, &a, NULL)
                              : tile_flash_attention(&a, NULL);
    int64_t problems = -1;
    if (*status == TILE_STATUS_SUCCESS) {
        SUPPORT_CHECK(&gpu, drv->cuCtxSynchronize());
        void *raw = support_xmalloc(o_bytes);
        float *o = support_xmalloc((size_t)sq.elements * sizeof *o);
        SUPPORT_CHECK(&gpu, drv->cuMemcpyDtoH(raw, bo, o_bytes));
        support_unpack(dt, o, raw, (size_t)sq.elements);
        float *lse = NULL;
        if (c->with_lse) {
            lse = support_xmalloc((size_t)lse_n * sizeof *lse);
            SUPPORT_CHECK(&gpu, drv->cuMemcpyDtoH(lse, blse, (size_t)lse_n * sizeof(float)));
        }
        problems = 0;
        problems += support_workspace_not_zeroed(
            &gpu, (void *)(uintptr_t)bws,
            ws_bytes < TILE_FLASH_ATTENTION_WORKSPACE_ZEROED_BYTES ? ws_bytes
                                                                  : TILE_FLASH_ATTENTION_WORKSPACE_ZEROED_BYTES,
            "  attention");
        /* Written exactly where the sequences are: finite there, poisoned elsewhere. */
        char *inside = calloc((size_t)sq.elements, 1);
        for (int32_t b = 0; b < c->batch; b++)
            for (int64_t i = 0; i < cu_q[b + 1] - cu_q[b]; i++)
                for (int64_t h = 0; h < c->heads_q; h++)
                    for (int64_t d = 0; d < D; d++) {
                        const int64_t t = varlen ? cu_q[b] + i : i;
                        inside[offset_of(&sq, varlen ? 0 : b, t, h) + d] = b == poisoned ? 2 : 1;
                    }
        for (int64_t e = 0; e < sq.elements; e++) {
            if (inside[e] == 2) continue; /* the poisoned sequence's own rows: anything */
            if (inside[e] && !isfinite(o[e])) {
                if (problems++ < 5)
                    fprintf(stderr, "  o[%lld] is %g (not written or not finite)\n", (long long)e,
                            (double)o[e]);
            } else if (!inside[e] && !isnan(o[e])) {
                if (problems++ < 5)
                    fprintf(stderr, "  o[%lld] outside the sequences was written (%g)\n",
                            (long long)e, (double)o[e]);
            }
        }
        free(inside);
        /* Against the references, on sampled query rows. */
        const float scale = 1.0f / sqrtf((float)D);
        double err = 0, err_lp = 0, out_scale = 0;
        double *s64 = support_xmalloc((size_t)(max_k > 0 ? max_k : 1) * sizeof *s64);
        float *s32 = support_xmalloc((size_t)(max_k > 0 ? max_k : 1) * sizeof *s32);
        double *acc = support_xmalloc((size_t)D * sizeof *acc);
        float *acc32 = support_xmalloc((size_t)D * sizeof *acc32);
        for (int32_t b = 0; b < c->batch; b++) {
            if (b == poisoned) continue;
            const int64_t lq = cu_q[b + 1] - cu_q[b], lk = cu_k[b + 1] - cu_k[b];
            /* a sampled row every 63 at most: every query block (64 rows or more) of every
             * variant meets the reference, at a row that moves through the block's positions */
            const int64_t step = c->sample && lq > c->sample ? imin(lq / c->sample, 63) : 1;
            for (int64_t h = 0; h < c->heads_q; h++) {
                const int64_t hk = h / (c->heads_q / c->heads_kv);
                /* every row's lse written (poisoned NaN before): finite where the row sees a
                 * key, -inf where it sees none; the sampled rows' values are checked below */
                for (int64_t i = 0; lse && step > 1 && i < lq; i++) {
                    const int64_t at = varlen ? h * tokens_q + cu_q[b] + i
                                              : ((int64_t)b * c->heads_q + h) * c->seqlen_q + i;
                    const int64_t last = c->causal ? imin(lk - 1, i + lk - lq) : lk - 1;
                    const int ok = last >= 0 ? isfinite(lse[at]) : (isinf(lse[at]) && lse[at] < 0);
                    if (!ok && problems++ < 5)
                        fprintf(stderr, "  lse b %d h %lld row %lld: %g (not written?)\n", b,
                                (long long)h, (long long)i, (double)lse[at]);
                }
                for (int64_t i0 = 0; i0 < lq; i0 += step) {
                    /* the sample always includes the last row */
                    const int64_t i = i0 + step >= lq ? lq - 1 : i0;
                    const int64_t tq = varlen ? cu_q[b] + i : i;
                    const float *qi = q + offset_of(&sq, varlen ? 0 : b, tq, h);
                    const int64_t last = c->causal ? imin(lk - 1, i + lk - lq) : lk - 1;
                    double m = -INFINITY;
                    float m32 = -INFINITY;
                    for (int64_t j = 0; j <= last; j++) {
                        const int64_t tk = varlen ? cu_k[b] + j : j;
                        const float *kj = k + offset_of(&sk, varlen ? 0 : b, tk, hk);
                        double dot = 0;
                        float dot32 = 0;
                        for (int64_t d = 0; d < D; d++) {
                            dot += (double)qi[d] * kj[d];
                            dot32 += qi[d] * kj[d];
                        }
                        s64[j] = dot * scale;
                        s32[j] = dot32 * scale;
                        if (s64[j] > m) m = s64[j];
                        if (s32[j] > m32) m32 = s32[j];
                    }
                    double l = 0;
                    float l32 = 0;
                    for (int64_t d = 0; d < D; d++) acc[d] = acc32[d] = 0;
                    for (int64_t j = 0; j <= last; j++) {
                        const int64_t tk = varlen ? cu_k[b] + j : j;
                        const float *vj = v + offset_of(&sk, varlen ? 0 : b, tk, hk);
                        const double p = exp(s64[j] - m);
                        const float p32 = expf(s32[j] - m32), p_stored = round_to(dt, p32);
                        l += p;
                        l32 += p32;
                        for (int64_t d = 0; d < D; d++) {
                            acc[d] += p * vj[d];
                            acc32[d] += p_stored * vj[d];
                        }
                    }
                    const float *oi = o + offset_of(&sq, varlen ? 0 : b, tq, h);
                    for (int64_t d = 0; d < D; d++) {
                        const double want = last >= 0 ? acc[d] / l : 0.0;
                        const double lp = last >= 0 ? round_to(dt, acc32[d] / l32) : 0.0;
                        if (fabs(want) > out_scale) out_scale = fabs(want);
                        const double e = fabs(oi[d] - want);
                        if (!(e <= err)) err = isnan(e) ? INFINITY : e;
                        if (fabs(lp - want) > err_lp) err_lp = fabs(lp - want);
                        if (last < 0 && oi[d] != 0.0f && problems++ < 5)
                            fprintf(stderr, "  row %lld head %lld sees no key but o = %g\n",
                                    (long long)i, (long long)h, (double)oi[d]);
                    }
                    if (lse) {
                        const int64_t at = varlen ? h * tokens_q + cu_q[b] + i
                                                  : ((int64_t)b * c->heads_q + h) * c->seqlen_q + i;
                        const double want = last >= 0 ? m + log(l) : -INFINITY;
                        const double got = lse[at];
                        const int ok = last >= 0 ? fabs(got - want) <= 1e-3 + 1e-4 * fabs(want)
                                                 : (isinf(got) && got < 0);
                        if (!ok && problems++ < 5)
                            fprintf(stderr, "  lse b %d h %lld row %lld: %g, want %g\n", b,
                                    (long long)h, (long long)i, got, want);
                    }
                }
            }
        }
        const double allowed = 2.0 * err_lp + 1e-3 * (out_scale > 1.0 ? out_scale : 1.0);
        if (!(err <= allowed)) {
            problems++;
            fprintf(stderr, "  max error %.3g exceeds %.3g (2 x the low-precision reference's %.3g + slack)\n",
                    err, allowed, err_lp);
        }
        *err_out = err;
        *err_lp_out = err_lp;
        free(s64), free(s32), free(acc), free(acc32), free(raw), free(o), free(lse);
    }
    CUdeviceptr bufs[] = {bq, bk, bv, bo, blse, bcq, bck, bws};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++)
        if (bufs[i]) SUPPORT_CHECK(&gpu, drv->cuMemFree(bufs[i]));
    free(q), free(k), free(v), free(cu_q), free(cu_k);
    return problems;
}

static void run_case(const char *label, const attn_case *c) {
    tile_status s = TILE_STATUS_SUCCESS;
    double err = 0, err_lp = 0;
    const int64_t bad = run_attn(c, &s, &err, &err_lp);
    cases_run++;
    char shape[160];
    snprintf(shape, sizeof shape, "%s b%d hq%d hkv%d d%d %s%s%s%s", tile_dtype_string(c->dtype),
             c->batch, c->heads_q, c->heads_kv, c->head_dim, c->causal ? "causal " : "",
             c->lens_q ? "varlen" : "", c->layout == BHSD ? " bhsd" : c->layout == BSHD_PADDED ? " padded" : "",
             c->seed & 1 ? " workspace" : "");
    if (bad == 0) {
        if (getenv("FUSEDOPS_TEST_VERBOSE"))
            printf("ok %s %s sq %lld sk %lld: error %.3g (low-precision reference %.3g)\n", label,
                   shape, (long long)c->seqlen_q, (long long)c->seqlen_k, err, err_lp);
        return;
    }
    case_failures++;
    if (bad < 0)
        fprintf(stderr, "FAIL %s %s sq %lld sk %lld: %s: %s\n", label, shape,
                (long long)c->seqlen_q, (long long)c->seqlen_k, tile_status_string(s),
                tile_last_error());
    else
        fprintf(stderr, "FAIL %s %s sq %lld sk %lld: %lld problems (error %.3g, low-precision %.3g)\n",
                label, shape, (long long)c->seqlen_q, (long long)c->seqlen_k, (long long)bad, err,
                err_lp);
}

static const int32_t ragged_q[] = {0, 1, 77, 300, 130};
static const int32_t ragged_k[] = {5, 1, 77, 513, 0};
/* varlen decode: one query a sequence (or none) against caches of 0 to 5000 keys; split, the
 * short caches' last splits see no key */
static const int32_t decode_q[] = {1, 1, 0, 1, 1};
static const int32_t decode_k[] = {3000, 17, 0, 5000, 1};
/* varlen speculative decode: a few queries a sequence (or none), causal against their caches
 * (the last one's 3 keys for 5 queries, bottom-right aligned: its first two rows see none) */
static const int32_t spec_q[] = {4, 1, 0, 7, 5};
static const int32_t spec_k[] = {3000, 17, 0, 5000, 3};

/* varlen decode of many sequences (more blocks than a split takes): one query a sequence, or
 * none, against 1 to 700 keys (filled in by dispatcher_cases) */
#define MANY 48
static int32_t many_q[MANY], many_k[MANY];

/* The dispatcher on the shapes, both dtypes. */
static void dispatcher_cases(void) {
    for (int i = 0; i < MANY; i++) many_q[i] = i % 7 != 3, many_k[i] = 1 + (i * 397) % 700;
    for (int di = 0; di < 2; di++) {
        const tile_dtype dt = di ? TILE_DTYPE_F16 : TILE_DTYPE_BF16;
        uint64_t seed = 100 + (uint64_t)di * 1000;
        const attn_case cases[] = {
            {-1, dt, 2, 4, 4, 64, 1, 1, 0, BSHD, NULL, NULL, 1, 0, seed++, 0},
            {-1, dt, 2, 8, 2, 128, 17, 17, 1, BSHD, NULL, NULL, 1, 0, seed++, 0},
            {-1, dt, 1, 4, 4, 64, 127, 127, 1, BHSD, NULL, NULL, 0, 0, seed++, 0},
            {-1, dt, 2, 4, 1, 128, 128, 128, 0, BSHD, NULL, NULL, 1, 0, seed++, 0},
            {-1, dt, 1, 8, 1, 128, 1000, 1000, 1, BSHD, NULL, NULL, 1, 48, seed++, 0},
            {-1, dt, 1, 8, 8, 128, 1000, 1000, 0, BHSD, NULL, NULL, 0, 48, seed++, 0},
            {-1, dt, 1, 2, 2, 128, 4096, 4096, 1, BSHD, NULL, NULL, 1, 24, seed++, 0},
            {-1, dt, 1, 2, 1, 64, 4096, 4096, 0, BSHD, NULL, NULL, 0, 24, seed++, 0},
            {-1, dt, 2, 4, 2, 64, 100, 300, 1, BSHD, NULL, NULL, 1, 0, seed++, 0},
            {-1, dt, 2, 4, 2, 64, 300, 100, 1, BSHD, NULL, NULL, 1, 0, seed++, 0},
            {-1, dt, 2, 4, 4, 128, 300, 100, 0, BSHD_PADDED, NULL, NULL, 1, 0, seed++, 0},
            {-1, dt, 5, 8, 2, 128, 0, 0, 1, BSHD_PADDED, ragged_q, ragged_k, 1, 0, seed++, 0},
            {-1, dt, 5, 8, 8, 64, 0, 0, 0, BSHD, ragged_q, ragged_k, 1, 0, seed++, 0},
            {-1, dt, 5, 8, 2, 128, 0, 0, 0, BSHD, ragged_q, ragged_k, 1, 0, seed++, 3},
            {-1, dt, 5, 8, 8, 64, 0, 0, 1, BHSD, ragged_q, ragged_k, 1, 0, seed++, 4},
            {-1, dt, 5, 4, 4, 256, 0, 0, 1, BHSD, ragged_q, ragged_k, 1, 0, seed++, 0},
            /* decode: one query a head, or a few BHSD ones without the mask, the query heads of
             * each key/value head read as one sequence (docs/api.md) ... */
            {-1, dt, 4, 32, 8, 128, 1, 1000, 0, BSHD, NULL, NULL, 1, 0, seed++, 0},
            {-1, dt, 2, 16, 2, 64, 1, 513, 1, BHSD, NULL, NULL, 1, 0, seed++, 0},
            {-1, dt, 2, 8, 2, 128, 3, 700, 0, BHSD, NULL, NULL, 1, 0, seed++, 0},
            {-1, dt, 2, 8, 1, 128, 1, 300, 1, BSHD_PADDED, NULL, NULL, 1, 0, seed++, 0}, /* MQA */
            /* ... and those the kernels fold, each row mapped to its head and query
             * (docs/api.md): causal, BSHD, varlen; GQA groups of more rows than a block
             * (16 x 8, 20 x 4) stay unfolded */
            {-1, dt, 2, 8, 2, 128, 3, 700, 1, BHSD, NULL, NULL, 1, 0, seed++, 0},
            {-1, dt, 2, 8, 2, 128, 3, 700, 0, BSHD, NULL, NULL, 1, 0, seed++, 0},
            {-1, dt, 2, 16, 2, 128, 16, 900, 1, BSHD, NULL, NULL, 1, 0, seed++, 0},
            {-1, dt, 1, 8, 2, 64, 20, 700, 1, BSHD_PADDED, NULL, NULL, 1, 0, seed++, 0},
            {-1, dt, 5, 8, 2, 128, 0, 0, 1, BSHD, spec_q, spec_k, 1, 0, seed++, 0},
            {-1, dt, 5, 16, 2, 64, 0, 0, 0, BHSD, spec_q, spec_k, 1, 0, seed++, 0},
            /* varlen decode, MHA (nothing folds), no workspace (no split): a window of one
             * query on whichever variant dispatch takes (perf-notes A51) */
            {-1, dt, 5, 8, 8, 128, 0, 0, 1, BSHD, decode_q, decode_k, 1, 0, 9024, 0},
            {-1, dt, 5, 4, 4, 64, 0, 0, 0, BSHD_PADDED, decode_q, decode_k, 1, 0, 9026, 0},
            {-1, dt, MANY, 32, 32, 128, 0, 0, 1, BSHD, many_q, many_k, 1, 0, 9028, 0},
            /* decode with a workspace (odd seeds): the keys split over programs, their shares
             * combined (docs/api.md): GQA, MHA causal (one query: every key seen), a ragged
             * last split, head dims 64 and 256, and 3 causal queries a head against 5000 keys
             * (splits whose keys some rows see none of) */
            {-1, dt, 1, 32, 8, 128, 1, 8192, 0, BSHD, NULL, NULL, 1, 0, 9001, 0},
            {-1, dt, 2, 16, 16, 128, 1, 4000, 1, BSHD_PADDED, NULL, NULL, 1, 0, 9003, 0},
            {-1, dt, 1, 8, 1, 64, 1, 3001, 0, BHSD, NULL, NULL, 1, 0, 9005, 0},
            {-1, dt, 1, 4, 2, 256, 1, 2500, 0, BSHD, NULL, NULL, 1, 0, 9007, 0},
            {-1, dt, 1, 4, 4, 128, 3, 5000, 1, BSHD, NULL, NULL, 1, 0, 9009, 0},
            {-1, dt, 1, 2, 2, 64, 100, 4096, 1, BSHD, NULL, NULL, 1, 0, 9011, 0},
            {-1, dt, 5, 8, 8, 128, 0, 0, 0, BSHD, decode_q, decode_k, 1, 0, 9013, 0},
            {-1, dt, 5, 8, 2, 64, 0, 0, 1, BHSD, decode_q, decode_k, 1, 0, 9015, 0},
            /* ... and folded by the kernels: speculative decode, fixed and varlen */
            {-1, dt, 1, 32, 8, 128, 4, 8192, 1, BSHD, NULL, NULL, 1, 0, 9017, 0},
            {-1, dt, 5, 32, 8, 128, 0, 0, 1, BSHD_PADDED, spec_q, spec_k, 1, 0, 9019, 0},
            {-1, dt, 5, 8, 1, 64, 0, 0, 0, BSHD, decode_q, decode_k, 1, 0, 9021, 0},
        };
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_case("dispatch", &cases[i]);
        static const int32_t dims[] = {8, 32, 40, 80, 96, 136, 160, 256};
        for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++) {
            const attn_case c = {-1, dt, 1, 4, 2, dims[i], 200, 200, (int)(i & 1), BSHD_PADDED,
                                 NULL, NULL, 1, 0, seed++, 0};
            run_case("head_dim", &c);
        }
    }
}

/* Every attention variant this GPU can run, on its own head width and a narrower one. */
static void variant_cases(void) {
    const char *filter = getenv("FUSEDOPS_TEST_VARIANT");
    int ran = 0;
    for (int32_t i = 0; i < tile_variant_count(); i++) {
        tile_variant_info info = {.struct_size = sizeof info};
        if (tile_variant_get(i, &info) != TILE_STATUS_SUCCESS) continue;
        if (strcmp(info.op, "attention") || !support_variant_runs_here(&gpu, &info)) continue;
        if (!support_variant_selected(info.name, filter)) continue;
        ran++;
        const int32_t d = (int32_t)info.max_cols, narrow = d > 8 ? d - 8 : d;
        const uint64_t seed = 5000 + (uint64_t)i * 32;
        const attn_case cases[] = {
            {i, info.dtype, 2, 4, 2, d, 200, 200, 1, BSHD, NULL, NULL, 1, 0, seed, 0},
            {i, info.dtype, 1, 8, 1, d, 77, 300, 0, BHSD, NULL, NULL, 1, 0, seed + 1, 0},
            {i, info.dtype, 2, 4, 4, narrow, 129, 65, 1, BSHD_PADDED, NULL, NULL, 1, 0, seed + 2, 0},
            {i, info.dtype, 5, 4, 1, d, 0, 0, 1, BSHD, ragged_q, ragged_k, 1, 0, seed + 3, 0},
            /* varlen, the third sequence's keys and values all +Inf: the others exact */
            {i, info.dtype, 5, 4, 2, d, 0, 0, 0, BSHD, ragged_q, ragged_k, 1, 0, seed + 13, 3},
            {i, info.dtype, 1, 8, 2, d, 1000, 1000, 1, BHSD, NULL, NULL, 1, 48, seed + 4, 0},
            {i, info.dtype, 2, 2, 2, narrow, 333, 1200, 0, BSHD, NULL, NULL, 0, 48, seed + 5, 0},
            /* 480 query blocks of 128 rows, more than the GPU holds at once: persistent
             * variants walk several each */
            {i, info.dtype, 4, 40, 8, d, 300, 300, 0, BSHD, NULL, NULL, 1, 16, seed + 6, 0},
            /* full, 384 rows: equal blocks of 128 or 192 (240 or 160 of them), which persistent
             * variants walk a head's blocks one after another (perf-notes A57) */
            {i, info.dtype, 2, 40, 8, d, 384, 384, 0, BHSD, NULL, NULL, 1, 16, seed + 25, 0},
            /* causal, more blocks than resident programs: 3 blocks of 128 rows (`ws` walks
             * long/short pairs of them on GPUs of about 132 SMs, the middle block alone) or 2
             * of 192 (`ws3`: one program per block) ... */
            {i, info.dtype, 4, 40, 8, d, 300, 300, 1, BSHD, NULL, NULL, 1, 16, seed + 10, 0},
            /* ... bottom-right aligned, 6 blocks of 128 rows or 4 of 192 ... */
            {i, info.dtype, 3, 40, 8, d, 650, 700, 1, BHSD, NULL, NULL, 1, 16, seed + 11, 0},
            /* ... and 832 rows: 7 blocks of 128 or 5 of 192, one of them of 64 rows (two idle
             * `ws3` warpgroups: the first block, moved back 128 rows, perf-notes A63), walked
             * in pairs on GPUs of 100-140 SMs (768 units of 192) */
            {i, info.dtype, 4, 64, 8, d, 832, 832, 1, BSHD, NULL, NULL, 0, 16, seed + 12, 0},
            /* causal, more queries than keys: blocks whose rows see no key (no key tile) */
            {i, info.dtype, 1, 4, 2, d, 300, 17, 1, BHSD, NULL, NULL, 1, 0, seed + 7, 0},
            /* batch, heads and sequence of one: every axis a lone one */
            {i, info.dtype, 1, 1, 1, d, 1, 1, 0, BSHD, NULL, NULL, 1, 0, seed + 8, 0},
            /* a head much narrower than the variant's (zero columns past it) */
            {i, info.dtype, 2, 4, 4, d > 32 ? d / 2 - 8 : 8, 130, 257, 1, BSHD_PADDED, NULL, NULL, 1, 0, seed + 9, 0},
            /* decode, causal, padded rows: each key/value head's 4 query heads of one query
             * run as one sequence of 4 (docs/api.md) */
            {i, info.dtype, 3, 8, 2, d, 1, 300, 1, BSHD_PADDED, NULL, NULL, 1, 0, seed + 14, 0},
            /* 5 queries a head, BHSD, not causal: each key/value head's 8 query heads as 40 rows */
            {i, info.dtype, 2, 16, 2, d, 5, 200, 0, BHSD, NULL, NULL, 1, 0, seed + 15, 0},
            /* decode with a workspace: one program a block variants split the keys (their last
             * split ragged), GQA folded; causal few-query calls split with the diagonal moved */
            {i, info.dtype, 1, 16, 4, d, 1, 2900, 0, BSHD_PADDED, NULL, NULL, 1, 0, seed + 17, 0},
            {i, info.dtype, 2, 2, 2, narrow, 7, 1500, 1, BHSD, NULL, NULL, 1, 0, seed + 19, 0},
            {i, info.dtype, 5, 4, 2, d, 0, 0, 1, BSHD_PADDED, decode_q, decode_k, 1, 0, seed + 21, 0},
            /* varlen speculative decode, GQA: folded by the kernels that copy by threads (with a
             * workspace, split), unfolded on those of tensor maps */
            {i, info.dtype, 5, 8, 2, d, 0, 0, 1, BSHD, spec_q, spec_k, 1, 0, seed + 23, 0},
            {i, info.dtype, 5, 16, 2, narrow, 0, 0, 1, BHSD, spec_q, spec_k, 1, 0, seed + 24, 0},
        };
        for (size_t j = 0; j < sizeof cases / sizeof cases[0]; j++) run_case(info.name, &cases[j]);
    }
    printf("%d attention variants run on this GPU\n", ran);
    if (!ran) { /* (a filter that selects nothing tested nothing: a typo, not a pass) */
        fprintf(stderr, "FAIL no attention variant%s%s runs on this GPU\n",
                filter ? " selected by FUSEDOPS_TEST_VARIANT=" : "", filter ? filter : "");
        case_failures++;
    }
}

/* Launch-time statuses a device is needed for: misalignment, and a variant of another op. */
static void device_statuses(void) {
    tile_flash_attention_args a;
    tile_flash_attention_init(&a, sizeof a);
    a.dtype = TILE_DTYPE_BF16, a.batch = 1, a.heads_q = 1, a.heads_kv = 1, a.head_dim = 64;
    a.seqlen_q = a.seqlen_k = 16;
    a.q_seq_stride = a.k_seq_stride = a.v_seq_stride = a.o_seq_stride = 64;
    a.q = a.k = a.v = (const void *)(uintptr_t)0x1000;
    a.o = (void *)(uintptr_t)0x2008; /* 8-byte aligned: no variant takes it */
    tile_status s = tile_flash_attention(&a, NULL);
    cases_run++;
    if (s != TILE_STATUS_MISALIGNED) {
        fprintf(stderr, "FAIL misaligned o gave %s (%s)\n", tile_status_string(s), tile_last_error());
        case_failures++;
    }
    a.o = (void *)(uintptr_t)0x2000;
    s = tile_flash_attention_variant(tile_variant_find("softmax_f32_r1_n1024_w4_v4"), &a, NULL);
    cases_run++;
    if (s != TILE_STATUS_NOT_SUPPORTED && s != TILE_STATUS_INVALID_ARGUMENT) {
        fprintf(stderr, "FAIL a softmax variant for attention gave %s (%s)\n", tile_status_string(s),
                tile_last_error());
        case_failures++;
    }
}

int main(void) {
    const char *why;
    if (support_gpu_open(&gpu, &why) != 0) {
        printf("skipped: %s\n", why);
        return SUPPORT_EXIT_NO_GPU;
    }
    printf("%s (sm_%d)\n", gpu.name, gpu.arch);
    dispatcher_cases();
    variant_cases();
    device_statuses();
    printf("%d cases, %d failures\n", cases_run, case_failures);
    support_gpu_close(&gpu);
    return case_failures ? 1 : 0;
}
