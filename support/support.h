/* Host-side support for programs that run libfusedops on a GPU: the CLI, the GPU tests and
 * the benches. Not part of the library. The driver comes from src/cuda_driver.c (dlopen), so
 * these programs start on machines without one and can say so. */
#ifndef FUSEDOPS_SUPPORT_H
#define FUSEDOPS_SUPPORT_H

#include <stddef.h>
#include <stdint.h>

#include "cuda_driver.h"
#include "fusedops.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Exit code of a GPU program that found no GPU (ctest SKIP_RETURN_CODE). */
#define SUPPORT_EXIT_NO_GPU 77

typedef struct support_gpu {
    const tile_driver *drv;
    CUdevice device;
    CUcontext context;
    int32_t arch;
    int32_t sm_count;
    int32_t smem_limit; /* shared memory one program may opt in to */
    int32_t mem_bandwidth_gbs; /* peak, as the library reckons it (tuning_peak_bandwidth_gbs);
                                * 0 where the driver does not tell */
    char name[128];
} support_gpu;

/* Whether `info`'s variant can run on this GPU at all: its arch range and shared memory. */
int support_variant_runs_here(const support_gpu *gpu, const tile_variant_info *info);

/* The GPU tests' FUSEDOPS_TEST_VARIANT filter: whether variant `name` is selected. NULL or ""
 * selects every variant; a filter with a glob character (* ? [) must match the whole name
 * (fnmatch), so `*_staged_n*_v[48]` picks the staged variants without a cluster; any other
 * filter is a substring of the name. */
int support_variant_selected(const char *name, const char *filter);

/* FUSEDOPS_TEST_MAX_ROWS=N, the GPU tests' scale-down for compute-sanitizer runs: cases of
 * more than N rows run with N rows. Parses `text` into *max_rows: 0 (no cap) for NULL or "",
 * else a whole decimal number of at least 1. Returns 0, or -1 for any other text. */
int support_parse_max_rows(const char *text, int64_t *max_rows);
/* Reads FUSEDOPS_TEST_MAX_ROWS into *max_rows as support_parse_max_rows does, and prints a line
 * saying that the cap is in effect when there is one. Returns -1 with a message on stderr
 * when the value is invalid: the test should then fail rather than run uncapped. */
int support_test_max_rows(int64_t *max_rows);
/* Environment variable `name`, a whole number of at least 1 parsed as support_parse_max_rows
 * does, into *value; `fallback` where it is unset or empty. Returns -1 with a message on
 * stderr when the value is invalid (the test should then fail). */
int support_env_count(const char *name, int64_t fallback, int64_t *value);
/* rows, or max_rows where that is a cap (> 0) below rows. */
int64_t support_cap_rows(int64_t rows, int64_t max_rows);

/* Persistent variants (names with `_persistent_`, `_pipe_` or `_streamed_`: the softmax and
 * norm ones, one row per program per step, no cluster) launch SMs x (programs resident per SM)
 * programs, an occupancy the library queries for itself
 * (cuOccupancyMaxActiveBlocksPerMultiprocessor on its own kernel handle) and does not export.
 * support_programs_per_sm_bound is an upper bound of it from this GPU's per-SM limits on
 * resident programs, threads and shared memory (the variant's dynamic shared memory only:
 * registers, static shared memory and the driver's reserve can only lower the true figure). */
int support_is_persistent(const tile_variant_info *info);
/* Whether the variant is a lean twin (LEAN=1 in its params, which the generator ties to the
 * registry's `lean`): rows of exactly max_cols columns, no bias, residual or s. */
int support_is_lean(const tile_variant_info *info);
/* Whether the variant is pointwise (POINTWISE=1 in its params, which the generator ties to the
 * registry's `column_tile`): a program takes a tile of a row, so it runs norm-less calls alone. */
int support_is_pointwise(const tile_variant_info *info);
/* The index of general variant `index`'s lean twin, or -1: the lean variant of the same op,
 * dtype, threads, cluster, shared memory, width and alignment whose params are the same but for
 * MAXREG and LEAN (generator/main.c's lean_twins pairs them so; dispatch swaps the twin in). */
int32_t support_lean_twin_of(int32_t index);
/* Whether the variant copies through tensor maps (the warp-specialized families: WARPGROUPS of 3
 * or more in their params, as the library's tile_variant_uses_tensor_maps). */
int support_variant_uses_tensor_maps(const tile_variant_info *info);
int32_t support_programs_per_sm_bound(const support_gpu *gpu, const tile_variant_info *info);
/* Rows enough that every program of persistent variant `info` walks at least
 * `walk_length` rows here: walk_length x SMs x the bound above, plus 7 so that the
 * walk ends ragged (some programs take one row more than others). */
int64_t support_persistent_walk_rows(const support_gpu *gpu, const tile_variant_info *info,
                                     int64_t walk_length);

/* Makes device 0's primary context current. Returns 0, or -1 with the reason in *why. */
int support_gpu_open(support_gpu *gpu, const char **why);
void support_gpu_close(support_gpu *gpu);

/* Aborts the program with file:line and the driver's error name when r is not CUDA_SUCCESS. */
#define SUPPORT_CHECK(gpu, call) support_check((gpu), (call), #call, __FILE__, __LINE__)
void support_check(const support_gpu *gpu, CUresult r, const char *what, const char *file,
                   int line);

/* Storage conversions on the host (round to nearest even). */
uint16_t support_float_to_half(float f);
float support_half_to_float(uint16_t h);
uint16_t support_float_to_bf16(float f);
float support_bf16_to_float(uint16_t h);
/* Converts n floats into dtype storage at dst (n * tile element size bytes), and back. */
void support_pack(tile_dtype dtype, void *dst, const float *src, size_t n);
void support_unpack(tile_dtype dtype, float *dst, const void *src, size_t n);
size_t support_dtype_size(tile_dtype dtype);

/* malloc that exits the program with a message when memory runs out (never returns NULL). */
void *support_xmalloc(size_t n);

/* n floats uniform in [lo, hi) from seed, rounded to dtype (the values the GPU will read);
 * free() them. */
float *support_stored_uniform(tile_dtype dtype, size_t n, uint64_t seed, float lo, float hi);

/* A counter workspace of `bytes` (attention's, the grouped matmul's) on the device, zeroed once
 * as callers zero it before their first call; cuMemFree it. */
CUdeviceptr support_zeroed_workspace(const support_gpu *gpu, size_t bytes);

/* 1 (with a message naming `label`) where a call left its workspace (NULL: none) of `bytes`
 * not zeroed, which every call must, for the next; else 0. */
int64_t support_workspace_not_zeroed(const support_gpu *gpu, const void *workspace, size_t bytes,
                                     const char *label);

/* A device copy of n host floats stored as dtype, placed `offset` elements past a 256-byte
 * boundary (with 256 bytes to spare after it). Returns that address; *base is the allocation
 * to cuMemFree. The copy has finished when it returns, so any stream may read it;
 * support_attention_setup and support_grouped_matmul_setup likewise finish all they start. */
CUdeviceptr support_upload(const support_gpu *gpu, tile_dtype dtype, const float *v, size_t n,
                           size_t offset, CUdeviceptr *base);

/* Deterministic uniform floats in [lo, hi) (splitmix64 of seed and index). */
void support_fill_uniform(float *dst, size_t n, uint64_t seed, float lo, float hi);

/* Float64 reference softmax / log-softmax of rows x cols with row stride ld (elements). */
void support_softmax_reference(double *y, const float *x, int64_t rows, int64_t cols, int64_t ld,
                               int log_softmax);

/* Tolerance for outputs stored as dtype: |got - want| <= atol + rtol * |want|. */
void support_tolerance(tile_dtype dtype, int log_softmax, double *atol, double *rtol);

/* Compares got (rows x cols, stride ld_got) with want (stride cols). NaN never passes. Prints
 * up to 5 mismatches with their index to stderr under `label`. Returns the mismatch count. */
int64_t support_compare(const char *label, const float *got, int64_t ld_got, const double *want,
                        int64_t rows, int64_t cols, double atol, double rtol, double *max_err);

/* Compares got (rows x cols, stride ld_got) with want (stride ld_want) bit for bit: outputs
 * that must equal the reference exactly (the residual stream s). Prints up to 5 mismatches
 * like support_compare. Returns the mismatch count. */
int64_t support_compare_exact(const char *label, const float *got, int64_t ld_got,
                              const float *want, int64_t ld_want, int64_t rows, int64_t cols);

/* Dropout's random numbers (docs/api.md, "Dropout random numbers"). Philox4x32-10 (Salmon et
 * al., Random123): counter ctr, key key, the four output words in out. */
void support_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]);
/* The 16-bit random draw of element (row, col): key (seed low, seed high), counter (col / 8,
 * row, offset low, offset high ^ row high ^ (col / 8) high), half col % 2 (0: the low 16 bits)
 * of word (col / 2) % 4. */
uint32_t support_dropout_draw(uint64_t seed, uint64_t offset, int64_t row, int64_t col);
/* Keep an element iff its draw >= (uint32_t)(p * 2^16) (double arithmetic, truncated); kept
 * elements are scaled by the fp32 value 1.0f / (1.0f - p), or 1.0f where the threshold is 0
 * (p < 2^-16: the identity). p in [0, 1). */
uint32_t support_dropout_threshold(float p);
float support_dropout_scale(float p);
/* Whether dropout with probability p keeps element (row, col); p below 2^-16 keeps all. */
int support_dropout_keep(float p, uint64_t seed, uint64_t offset, int64_t row, int64_t col);

/* Float64 reference of the add-and-norm family (tile_residual_dropout_norm, and its special
 * cases tile_layernorm, tile_rmsnorm, tile_residual_dropout): per element, in fp32 and in
 * this order, t = x; t += bias; t = kept ? t * scale : 0 (p > 0 only); t += residual; then
 * s = t rounded to dtype. The norm of the stored s is in float64: LayerNorm
 * y = (s - mean) * rstd * weight + norm_bias, rstd = 1 / sqrt(biased var + eps); RMSNorm
 * y = s * rstd * weight, rstd = 1 / sqrt(mean(s^2) + eps). Inputs are floats holding the values
 * as stored (already rounded to dtype). Every output may be NULL; y, mean and rstd are not
 * written for TILE_NORM_NONE, mean not for TILE_NORM_RMS. */
typedef struct support_add_norm_ref_args {
    tile_dtype dtype;      /* storage: s is rounded to it */
    tile_norm_kind norm;
    int64_t rows, cols;
    const float *x;        /* rows x cols, row stride ld_x */
    int64_t ld_x;
    const float *residual; /* or NULL; row stride ld_residual */
    int64_t ld_residual;
    const float *bias, *weight, *norm_bias; /* [cols], or NULL */
    float eps, p;
    uint64_t seed, offset;
    /* outputs: rows x cols with row stride cols, and [rows] */
    float *s;              /* as stored, converted to float */
    double *y;
    uint8_t *mask;         /* 1 kept, 0 dropped */
    double *mean, *rstd;
} support_add_norm_ref_args;
void support_add_norm_reference(const support_add_norm_ref_args *a);

/* Tolerance for norm outputs, |got - want| <= atol + rtol * |want|: y stored as dtype
 * (stats = 0), or the fp32 row statistics mean and rstd (stats = 1, dtype unused). */
void support_norm_tolerance(tile_dtype dtype, int stats, double *atol, double *rtol);

/* One softmax case on the GPU: x is uniform in [-8, 8) from `seed`, rows x cols with row
 * strides cols + pad_x and cols + pad_y, pointers offset by `offset` elements from a 256-byte
 * aligned allocation (offset 1 exercises the scalar path). y is poisoned (NaN) first; the
 * padding between rows must stay poisoned. variant < 0 runs the dispatcher (tile_softmax).
 * Returns the number of mismatches (-1 when the call itself failed: *status says why). */
typedef struct support_softmax_case {
    int32_t variant;
    tile_dtype dtype;
    int log_softmax;
    int64_t rows, cols, pad_x, pad_y, offset;
    uint64_t seed;
} support_softmax_case;
int64_t support_softmax_run(const support_gpu *gpu, const support_softmax_case *c,
                            tile_status *status, double *max_err);

/* One add-and-norm case on the GPU, every operand present that the norm kind takes: x and
 * residual uniform in [-4, 4), bias in [-1, 1), weight in [0.5, 1.5), norm_bias in [-1, 1);
 * mean (LayerNorm) and rstd outputs, and the keep mask where p > 0. Rows x cols tensors have row stride cols + pad,
 * every pointer is `offset` elements past a 256-byte boundary. Outputs are poisoned first;
 * s and the mask must match the reference bit for bit, y, mean and rstd within tolerance, and
 * row padding must stay poisoned. variant < 0 runs the public function
 * (tile_residual_dropout_norm, or tile_residual_dropout for TILE_NORM_NONE). `plain`: no
 * bias, residual or s, the norm of x alone (what a lean variant takes; needs a norm and p 0).
 * Returns the mismatch count (-1 when the call failed: *status says why). */
typedef struct support_norm_case {
    int32_t variant;
    tile_dtype dtype;
    tile_norm_kind norm;
    int64_t rows, cols, pad, offset;
    float p;
    uint64_t seed;
    int plain;
} support_norm_case;
int64_t support_norm_run(const support_gpu *gpu, const support_norm_case *c, tile_status *status,
                         double *max_err);


/* Float64 reference of flash attention (tile_flash_attention), one query row at a time so that
 * callers can sample rows of large problems. `a` describes the problem exactly as
 * tile_flash_attention takes it (strides in elements, scale 0 meaning 1 / sqrt(head_dim) in
 * fp32, bottom-right causal mask, GQA), except that q, k and v point to host floats holding
 * the stored values at the same element offsets, and cu_seqlens_q / cu_seqlens_k, when given,
 * to host copies of the offsets. Row: sequence b, query head h, query i (0 <= i < that
 * sequence's query length). Writes out[head_dim] = softmax(scale * q k^T) v over the keys the
 * row sees and *lse = log(sum exp(scale * q k^T)) (natural log); a row that sees no key gets
 * out 0 and lse -inf. Reads head_dim * (1 + 2 * keys) values. */
void support_attention_reference(const tile_flash_attention_args *a, int32_t b, int32_t h,
                                 int64_t i, double *out, double *lse);

/* Tolerance for attention, |got - want| <= atol + rtol * |want|: the output stored as dtype
 * (lse = 0: probabilities rounded to dtype before the PV product, then the output rounded), or
 * the fp32 log-sum-exp (lse = 1, dtype unused). */
void support_attention_tolerance(tile_dtype dtype, int lse, double *atol, double *rtol);

/* One attention case on the GPU: q and k uniform in [-2, 2), v in [-1, 1), from `seed`;
 * every tensor's sequence rows padded by 8 elements (16 bytes: the alignment every variant
 * needs); q, k and o BSHD (bhsd = 0) or BHSD (bhsd = 1), v in the other layout. dense: no
 * padding and v in the layout of q (the tensors a model passes; what `fusedops tune` times). o and lse are poisoned (NaN) first; every o element the call must not
 * write (the padding) must stay poisoned. varlen: the same batch packed with cu_seqlens,
 * sequence b holding seqlen_q - (37 b mod (seqlen_q + 1)) queries and seqlen_k -
 * (53 b mod (seqlen_k + 1)) keys (sequence 0 the longest, some empty), seqlen_q / seqlen_k then
 * the maxima. Rows are compared against support_attention_reference: all of them when
 * rows x keys x head_dim is at most 2^26, else an evenly spaced sample of about that much work
 * (the first and last rows included). variant < 0 runs tile_flash_attention, else
 * tile_flash_attention_variant. Returns the mismatch count (-1 when the call failed: *status
 * says why); *max_err is the largest output error. The call gets a zeroed workspace unless
 * fixed_schedule, which it must leave zeroed. */
typedef struct support_attention_case {
    int32_t variant;
    tile_dtype dtype;
    int32_t batch, heads_q, heads_kv, head_dim;
    int64_t seqlen_q, seqlen_k;
    int causal, varlen, bhsd, lse;
    int dense;   /* unpadded rows, v laid out as q */
    float scale; /* 0: 1 / sqrt(head_dim) */
    uint64_t seed;
    int fixed_schedule; /* 1: no workspace (the programs' fixed walk); 0: a zeroed one */
} support_attention_case;
int64_t support_attention_run(const support_gpu *gpu, const support_attention_case *c,
                              tile_status *status, double *max_err);

/* The device problem support_attention_run runs, for callers that launch it themselves (the
 * stress test): the case's tensors uploaded and laid out as described above, o and lse
 * poisoned (NaN), and the args of the call (lse NULL unless c->lse; variant unused). */
typedef struct support_attention_problem {
    tile_flash_attention_args args; /* device pointers */
    float *q, *k, *v;               /* host copies of the stored values, at the args' offsets */
    int32_t *cu_q, *cu_k;           /* host offsets, batch + 1 (fixed lengths too) */
    int64_t tokens_q;               /* seqlen_q, or with varlen total_q */
    int64_t o_elements;             /* o's extent in elements, padding included */
    int64_t lse_elements;           /* lse's extent (fixed [batch, heads_q, seqlen_q], varlen
                                       [heads_q, total_q]); allocated even without c->lse */
    CUdeviceptr bufs[8];            /* allocations: q, k, v, o, lse, cu_seqlens_q, _k, workspace
                                       (or 0) */
} support_attention_problem;
void support_attention_setup(const support_gpu *gpu, const support_attention_case *c,
                             support_attention_problem *p);
/* Frees what support_attention_setup allocated (device and host) and zeroes *p. */
void support_attention_free(const support_gpu *gpu, support_attention_problem *p);

/* Group ends for a mixture-of-experts batch whose routing is skewed: `rows` tokens split over
 * `groups` groups in proportions drawn from a symmetric Dirichlet(alpha) (gamma samples,
 * normalized; smaller alpha, more skew: at 0.3 most tokens go to a few groups and many groups
 * are empty or nearly so), rounded to whole rows by largest remainder. Deterministic in seed.
 * Writes ends[groups], cumulative (ends[groups - 1] == rows), as tile_grouped_matmul's
 * offsets. */
void support_skewed_group_ends(int32_t groups, int64_t rows, double alpha, uint64_t seed,
                               int32_t *ends);

/* n values uniform in [lo, hi) from seed, as dtype storage at dst (n * element size bytes),
 * drawn in chunks so that no float copy of all n is needed: the same values as
 * support_fill_uniform over all n. */
void support_random_stored(tile_dtype dtype, void *dst, size_t n, uint64_t seed, float lo,
                           float hi);

/* Float64 reference of grouped matmul (tile_grouped_matmul), one row of C at a time, so that
 * callers can sample rows (and columns) of large problems. `a` describes the problem exactly as
 * tile_grouped_matmul takes it (strides in elements), except that a, b and bias point to host
 * floats holding the stored values at the same element offsets, and offsets to a host copy of
 * the group ends; ends are clamped into [previous end, total_m] as the kernels clamp them.
 * For row m and the columns cols[0 .. ncols) (cols NULL: columns 0 .. ncols - 1) writes
 * out[j] = sum_kk A[m, kk] B_g[kk, cols[j]] (+ bias_g[cols[j]]) in float64 and, when out_lp is
 * not NULL, the same computed the way a plain fp32 GPU kernel would (inputs as stored, products
 * accumulated in fp32 in increasing kk, the bias added in fp32, the sum rounded to the storage
 * dtype). Returns the row's group g, or -1 for a row past the last end (C left untouched). */
int32_t support_grouped_matmul_reference(const tile_grouped_matmul_args *a, int64_t m,
                                         const int64_t *cols, int64_t ncols, double *out,
                                         float *out_lp);

/* The error of grouped matmul outputs, gathered over the elements checked. */
typedef struct support_grouped_matmul_errors {
    double err;      /* largest |got - float64 reference| (infinite for a NaN) */
    double err_lp;   /* largest |fp32-accumulated reference rounded to dtype - float64| */
    double scale;    /* largest |float64 reference| */
    int64_t checked; /* elements compared */
} support_grouped_matmul_errors;

/* Row m of C as the GPU wrote it (got[j], column cols[j] or j as for the reference) against
 * support_grouped_matmul_reference, into *e. Returns the row's group (-1: not in a group, and
 * nothing compared). */
int32_t support_grouped_matmul_check_row(const tile_grouped_matmul_args *a, int64_t m,
                                         const int64_t *cols, int64_t ncols, const float *got,
                                         support_grouped_matmul_errors *e);

/* The error rule: the largest error may be at most twice that of the fp32-accumulated
 * reference at the storage precision, plus a slack of 1/8 of the dtype's unit roundoff at the
 * output's scale (max(scale, 1)): a case with very few elements can have an err_lp near 0.
 * A NaN (err infinite) never passes. Returns the error allowed. */
double support_grouped_matmul_allowed(tile_dtype dtype, const support_grouped_matmul_errors *e);

/* One grouped matmul case on the GPU: A [total_m, k] uniform in [-1, 1), B [groups, k, n]
 * (b_nk = 0: n contiguous) or [groups, n, k] (b_nk = 1: k contiguous) uniform in [-1, 1), bias
 * [groups, n] uniform in [-1, 1) when `bias`, all from `seed`. Row strides are the extent
 * rounded up to a multiple of 8 elements (the 16 bytes every variant needs) plus `pad` elements
 * (a multiple of 8): lda from k, ldc from n, B's non-unit stride from its inner extent (n, or k
 * with b_nk), bias_group_stride from n; the padding of A, B and bias holds NaN (the kernels must
 * never use it). Group ends: `ends` (groups entries, used as
 * given, clamped by the kernels) or, when NULL, total_m - tail rows split over the groups by
 * support_skewed_group_ends(alpha, seed). C (and 256 bytes past it) is poisoned (0xff bytes,
 * NaN) first: every element of a group row must be written and finite, and everything else
 * (rows past the last end, the padding, the guard) must keep the poison bytes. Rows are
 * compared with the reference: all of them when rows x n x k is at most 2^26, else an evenly
 * spaced sample of about that much work plus the first and last row of every group. variant < 0
 * runs tile_grouped_matmul, else tile_grouped_matmul_variant. Returns the number of problems
 * (-1 when the call failed: *status says why); *errors (may be NULL) gets the errors. The
 * call gets a zeroed workspace unless fixed_schedule, which it must leave zeroed. */
typedef struct support_grouped_matmul_case {
    int32_t variant;
    tile_dtype dtype;
    int32_t groups;
    int64_t total_m, k, n;
    const int32_t *ends; /* or NULL: skewed */
    int64_t tail;        /* with ends NULL: rows past the last end */
    double alpha;        /* with ends NULL: the Dirichlet concentration (0: 1.0) */
    int b_nk, bias;
    int64_t pad;
    uint64_t seed;
    int fixed_schedule; /* 1: no workspace (the programs' fixed order of tiles); 0: a zeroed one */
    int64_t row_pad;    /* more elements on A's and C's row strides alone (beyond pad): with one
                         * row, strides no variant steps, which need not be 16-byte multiples */
} support_grouped_matmul_case;
int64_t support_grouped_matmul_run(const support_gpu *gpu, const support_grouped_matmul_case *c,
                                   tile_status *status, support_grouped_matmul_errors *errors);

/* The device problem support_grouped_matmul_run runs, for callers that launch it themselves
 * (the stress test, the GPU test's graph capture): the case's tensors uploaded as described
 * above, C poisoned, and the args of the call (variant unused). */
typedef struct support_grouped_matmul_problem {
    tile_grouped_matmul_args args; /* device pointers */
    float *a, *b, *bias;           /* host copies of the stored values, at the args' offsets
                                      (NaN in the padding); bias allocated even without c->bias */
    int32_t *ends;                 /* host copy of the group ends */
    int64_t c_elements;            /* C's extent in elements, padding included */
    size_t c_bytes;                /* C's allocation: c_elements and the 256-byte guard */
    CUdeviceptr bufs[6];           /* allocations: a, b, c, bias, offsets, workspace */
} support_grouped_matmul_problem;
void support_grouped_matmul_setup(const support_gpu *gpu, const support_grouped_matmul_case *c,
                                  support_grouped_matmul_problem *p);
/* Frees what support_grouped_matmul_setup allocated (device and host) and zeroes *p. */
void support_grouped_matmul_free(const support_gpu *gpu, support_grouped_matmul_problem *p);
/* Checks C after the call ran on p: downloads it and compares as support_grouped_matmul_run
 * does, messages under `label`. Returns the number of problems; *errors (may be NULL). */
int64_t support_grouped_matmul_check(const support_gpu *gpu,
                                     const support_grouped_matmul_problem *p, const char *label,
                                     support_grouped_matmul_errors *errors);

#ifdef __cplusplus
}
#endif

#endif
