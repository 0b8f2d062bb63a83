/*
 * fusedops.h: the public C ABI of libfusedops.
 *
 * Every function validates its arguments, picks the best precompiled kernel variant for the
 * shape and the current device's architecture, and launches it on the caller's stream. Calls
 * never allocate device memory, never synchronize the host, and may be captured in a CUDA
 * graph. The device is the one of the calling thread's current CUDA context (what
 * cudaSetDevice() or cuCtxSetCurrent() made current). All functions are thread-safe.
 *
 * On failure a call returns a status other than TILE_STATUS_SUCCESS, writes nothing to its
 * outputs, and leaves a message naming the argument and its value in tile_last_error().
 */
#ifndef FUSEDOPS_H
#define FUSEDOPS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TILE_VERSION_MAJOR 0
#define TILE_VERSION_MINOR 9
#define TILE_VERSION_PATCH 12
/* MAJOR*10000 + MINOR*100 + PATCH; compare with tile_version() for the library loaded. */
#define TILE_VERSION (TILE_VERSION_MAJOR * 10000 + TILE_VERSION_MINOR * 100 + TILE_VERSION_PATCH)

#if defined(_WIN32)
#define TILE_API
#else
#define TILE_API __attribute__((visibility("default")))
#endif

/* The caller's stream: the same type as CUstream and cudaStream_t. NULL is the legacy default
 * stream of the current context. */
typedef struct CUstream_st *tile_stream;

typedef enum tile_status {
    TILE_STATUS_SUCCESS = 0,
    TILE_STATUS_INVALID_ARGUMENT = 1, /* NULL pointer, size or stride out of range */
    TILE_STATUS_MISALIGNED = 2,       /* a pointer or stride no variant can take */
    TILE_STATUS_UNSUPPORTED_DTYPE = 3,
    TILE_STATUS_NOT_SUPPORTED = 4,    /* valid problem, but no compiled variant covers it */
    TILE_STATUS_ARCH_MISMATCH = 5,    /* no variant was compiled for this GPU architecture */
    TILE_STATUS_NO_DEVICE = 6,        /* no CUDA driver or no GPU on this machine */
    TILE_STATUS_NO_CONTEXT = 7,       /* the calling thread has no current CUDA context */
    TILE_STATUS_CUDA_ERROR = 8,       /* a driver call failed; tile_last_error() has its name */
    TILE_STATUS_INTERNAL = 9,         /* a library bug: please report it */
    TILE_STATUS_COUNT_
} tile_status;

typedef enum tile_dtype {
    TILE_DTYPE_F32 = 0,
    TILE_DTYPE_F16 = 1,
    TILE_DTYPE_BF16 = 2,
    TILE_DTYPE_COUNT_
} tile_dtype;

/* Which rule of the dispatcher picked a variant. */
typedef enum tile_rule {
    TILE_RULE_TUNED = 0,     /* an entry of the tuned table for this arch and shape bucket */
    TILE_RULE_NEAREST = 1,   /* the tuned entry of the nearest shape bucket */
    TILE_RULE_HEURISTIC = 2, /* the cost heuristic: no tuned table entry applies */
    TILE_RULE_COUNT_
} tile_rule;

/* Library version as MAJOR*10000 + MINOR*100 + PATCH. */
TILE_API int32_t tile_version(void);

/* Static strings; never NULL (an out-of-range value gives "unknown"). */
TILE_API const char *tile_status_string(tile_status status);
TILE_API const char *tile_dtype_string(tile_dtype dtype);
TILE_API const char *tile_rule_string(tile_rule rule);

/* The detail of the last failing call made by this thread ("" if none). The pointer stays
 * valid until this thread's next call into the library. */
TILE_API const char *tile_last_error(void);

/*
 * Row softmax: y[r, c] = exp(x[r, c] - max_r) / sum_c exp(x[r, c] - max_r), for 0 <= r < rows,
 * 0 <= c < cols. Rows are `ld_x` (`ld_y`) elements apart; ld_x >= cols, ld_y >= cols. Storage
 * is fp32, fp16 or bf16 (x and y alike); math is fp32. y may equal x (in place) when
 * ld_y == ld_x; other overlaps are undefined.
 * Rows of any width are supported (wide rows take a two-pass variant).
 * Status: INVALID_ARGUMENT for NULL pointers, rows < 1, cols < 1, ld smaller than cols,
 * byte sizes that overflow int64, or y == x with ld_y != ld_x; UNSUPPORTED_DTYPE;
 * MISALIGNED when a pointer is not aligned to the element size; NOT_SUPPORTED when rows need
 * more than 2^31-1 thread blocks or the device ordinal is 64 or above; NO_DEVICE, NO_CONTEXT,
 * ARCH_MISMATCH, CUDA_ERROR as named; INTERNAL for a library bug.
 */
TILE_API tile_status tile_softmax(tile_dtype dtype, void *y, const void *x, int64_t rows,
                                  int64_t cols, int64_t ld_y, int64_t ld_x, tile_stream stream);

/* Row log-softmax: y[r, c] = x[r, c] - max_r - log(sum_c exp(x[r, c] - max_r)). Arguments and
 * statuses as tile_softmax. */
TILE_API tile_status tile_log_softmax(tile_dtype dtype, void *y, const void *x, int64_t rows,
                                      int64_t cols, int64_t ld_y, int64_t ld_x,
                                      tile_stream stream);

/*
 * Introspection: the variants compiled into this library. `index` runs from 0 to
 * tile_variant_count() - 1. Fill `info->struct_size = sizeof(*info)` before the call: the
 * library writes only the fields that fit, so a caller built against an older, shorter
 * struct keeps working when fields are appended.
 */
typedef struct tile_variant_info {
    size_t struct_size;   /* sizeof(tile_variant_info) as the caller compiled it */
    const char *name;     /* e.g. "softmax_bf16_r1_n8192_w8_v8": kernel symbol and table key */
    const char *op;       /* "softmax", ... */
    tile_dtype dtype;
    int32_t arch_min;     /* lowest compute capability, as 10*major+minor (80 = sm_80) */
    int32_t arch_max;     /* highest, or 0 for no upper bound */
    int32_t threads;      /* threads per program (CTA) */
    int32_t cluster;      /* programs per cluster (1: no cluster) */
    int32_t smem_bytes;   /* dynamic shared memory per program */
    int64_t max_cols;     /* widest row it takes (0: any) */
    int32_t align_bytes;  /* pointer and row-stride alignment it needs */
    const char *params;   /* its grid point, "ROWS=1 BLOCK_N=8192 ..." */
} tile_variant_info;

TILE_API int32_t tile_variant_count(void);
/* INVALID_ARGUMENT for a NULL info, a struct_size too small, or an index out of range. */
TILE_API tile_status tile_variant_get(int32_t index, tile_variant_info *info);
/* Index of the variant of that name, or -1. */
TILE_API int32_t tile_variant_find(const char *name);

/* Why dispatch picked a variant. Fill `struct_size = sizeof(*decision)` before the call (as
 * for tile_variant_info, only the fields that fit are written). */
typedef struct tile_decision {
    size_t struct_size;
    int32_t variant;  /* index for tile_variant_get(), -1 when none is eligible */
    tile_rule rule;
    int32_t eligible; /* how many variants passed the arch and shape predicates */
    int32_t arch;     /* the architecture decided for, 10*major+minor */
    char reason[256]; /* one line: the rule and the bucket or cost that decided */
} tile_decision;

/*
 * The variant tile_softmax (and tile_log_softmax) would launch for this problem, without
 * launching it. `pointer_align` is the largest power of two dividing both the x and y
 * addresses (pass 16 for typical allocations). `arch` is 10*major+minor, or 0 for the current
 * device (which then needs a driver and a context); for a given arch the heuristic assumes
 * 132 multiprocessors, and tuned lines kept to one memory system (docs/tuning.md) are passed
 * over, so on such a device the call itself may take another variant than explain for its
 * arch names: pass 0 there. Validation and statuses as tile_softmax, plus INVALID_ARGUMENT for a
 * NULL or too small decision, a pointer_align that is not a power of two, or an arch below
 * 10. On failure *decision is not written.
 */
TILE_API tile_status tile_softmax_explain(tile_dtype dtype, int64_t rows, int64_t cols,
                                          int64_t ld_y, int64_t ld_x, int32_t pointer_align,
                                          int32_t arch, tile_decision *decision);

/*
 * Runs exactly the variant `variant` (an index from tile_variant_find), for tests, tuning and
 * benchmarks. `log_softmax` selects log-softmax. INVALID_ARGUMENT for an index out of
 * range; NOT_SUPPORTED when the variant is not a softmax variant of this dtype or its shape
 * predicate does not hold; MISALIGNED when its alignment does not; ARCH_MISMATCH when the
 * current device is outside its arch range; otherwise as tile_softmax.
 */
TILE_API tile_status tile_softmax_variant(int32_t variant, int32_t log_softmax, tile_dtype dtype,
                                          void *y, const void *x, int64_t rows, int64_t cols,
                                          int64_t ld_y, int64_t ld_x, tile_stream stream);

/*
 * Normalization and the transformer block's add-and-norm (docs/api.md, "Norms").
 *
 * Shared rules: storage fp32, fp16 or bf16 (every tensor argument alike: x, y, s, residual,
 * bias, weight, norm_bias); math in fp32; any rows >= 1, cols >= 1; row strides in elements
 * (ld >= cols). Per-row statistics (mean, rstd) are fp32 arrays of `rows` floats. Vectors of
 * `cols` elements (bias, weight, norm_bias) are broadcast over rows; NULL means absent.
 * An output may equal an input of the same row stride (in place); other overlaps are
 * undefined. Rows of any width are supported: up to the widest one-pass variant the row stays
 * on chip (8192 columns in registers on sm_80+, 65536 over a thread-block cluster on sm_90),
 * wider rows take a two-pass variant that reads the row again from L2/memory.
 * Statuses as tile_softmax, plus INVALID_ARGUMENT for eps < 0 or not finite, p outside
 * [0, 1), or a required pointer that is NULL; MISALIGNED when any tensor pointer is not
 * aligned to its element size (or a statistics pointer to 4 bytes).
 */

/* y = (x - mean) * rstd * weight + bias per row, rstd = 1 / sqrt(var + eps) (biased variance).
 * weight and bias may each be NULL; mean and rstd, when not NULL, receive the row statistics
 * (what a backward pass needs). */
TILE_API tile_status tile_layernorm(tile_dtype dtype, void *y, const void *x, const void *weight,
                                    const void *bias, float *mean, float *rstd, int64_t rows,
                                    int64_t cols, int64_t ld_y, int64_t ld_x, float eps,
                                    tile_stream stream);

/* y = x * rstd * weight per row, rstd = 1 / sqrt(mean(x^2) + eps). weight and rstd may be NULL. */
TILE_API tile_status tile_rmsnorm(tile_dtype dtype, void *y, const void *x, const void *weight,
                                  float *rstd, int64_t rows, int64_t cols, int64_t ld_y,
                                  int64_t ld_x, float eps, tile_stream stream);

/*
 * Bias-dropout-add: y = residual + dropout(x + bias, p). residual is required; bias may be
 * NULL. Dropout keeps an element with probability 1 - p (p taken to 16 bits) and scales kept
 * ones by 1 / (1 - p) (the fp32 value 1.0f / (1.0f - p)); p = 0, and any p below 2^-16, is
 * exactly the identity (and draws no random numbers unless a mask is asked for). The keep
 * decision of element (r, c) is a pure function of (seed, offset, r, c): a 16-bit half of a
 * Philox4x32-10 word keyed by `seed`, counter (c / 8, r, offset) (docs/api.md, "Dropout random
 * numbers"; since 0.6.0), so the same (seed, offset) gives the same mask for every variant,
 * dtype and GPU. mask, when not NULL, receives
 * one byte per element (1 kept, 0 dropped), rows x cols with row stride cols.
 */
TILE_API tile_status tile_residual_dropout(tile_dtype dtype, void *y, const void *x,
                                           const void *residual, const void *bias,
                                           uint8_t *mask, int64_t rows, int64_t cols,
                                           int64_t ld_y, int64_t ld_x, int64_t ld_residual,
                                           float p, uint64_t seed, uint64_t offset,
                                           tile_stream stream);

typedef enum tile_norm_kind {
    TILE_NORM_NONE = 0,  /* no norm: only s is written (tile_residual_dropout) */
    TILE_NORM_LAYER = 1, /* LayerNorm */
    TILE_NORM_RMS = 2,   /* RMSNorm (norm_bias and mean must be NULL) */
    TILE_NORM_COUNT_
} tile_norm_kind;

/* The arguments of the add-and-norm family. Set struct_size = sizeof(tile_add_norm_args) and
 * zero what is unused (a designated initializer does both): fields may be appended later. */
typedef struct tile_add_norm_args {
    size_t struct_size;
    tile_dtype dtype;
    tile_norm_kind norm;
    int64_t rows, cols;
    void *y;              /* norm(s) * weight + norm_bias; must be NULL for TILE_NORM_NONE (as
                             weight, norm_bias, mean and rstd must) */
    int64_t ld_y;
    void *s;              /* residual + dropout(x + bias): the new residual stream; may be NULL
                             only when there is nothing to add (no residual, bias or dropout) */
    int64_t ld_s;
    const void *x;
    int64_t ld_x;
    const void *residual; /* NULL: nothing added */
    int64_t ld_residual;
    const void *bias;     /* [cols], added to x before dropout, or NULL */
    const void *weight;   /* [cols] norm scale, or NULL (1) */
    const void *norm_bias;/* [cols] LayerNorm shift, or NULL (0) */
    float eps;
    float p;              /* dropout probability in [0, 1) */
    uint64_t seed, offset;
    uint8_t *mask;        /* rows x cols keep bytes (row stride cols), or NULL */
    float *mean, *rstd;   /* [rows] row statistics of s, or NULL */
} tile_add_norm_args;

/*
 * The add-and-norm of a transformer block in one pass over memory: s = residual +
 * dropout(x + bias, p) is written (the new residual stream, rounded to the storage dtype), and
 * y = LayerNorm(s) or RMSNorm(s) (args->norm) of exactly that stored s. Dropout as
 * tile_residual_dropout; norm as tile_layernorm / tile_rmsnorm. s may equal residual or x
 * (same row stride). INVALID_ARGUMENT also for a NULL args, a struct_size too small, norm not
 * LAYER or RMS, y or s or residual NULL.
 */
TILE_API tile_status tile_residual_dropout_norm(const tile_add_norm_args *args,
                                                tile_stream stream);

/* Runs exactly variant `variant` of op "norm" (the kernels behind the four functions above)
 * on `args` (any norm kind, TILE_NORM_NONE included), for tests, tuning and benchmarks.
 * Statuses as tile_softmax_variant. */
TILE_API tile_status tile_add_norm_variant(int32_t variant, const tile_add_norm_args *args,
                                           tile_stream stream);

/* The variant tile_layernorm and tile_rmsnorm would launch for this problem (a norm of x
 * alone: no dropout, bias, residual or s); as tile_softmax_explain. For other calls, see
 * tile_add_norm_explain. */
TILE_API tile_status tile_norm_explain(tile_dtype dtype, int64_t rows, int64_t cols,
                                       int64_t ld_y, int64_t ld_x, int32_t pointer_align,
                                       int32_t arch, tile_decision *decision);

/* The variant the norm functions would launch for exactly the call `args` describes (norm
 * kind, dropout, which operands are given, their alignment), validated as
 * tile_add_norm_variant validates (any norm kind) but never dereferenced. A tile_residual_dropout
 * call is norm TILE_NORM_NONE with its y as s; tile_layernorm's bias is norm_bias. `arch` as
 * for tile_softmax_explain. Since 0.5.0. */
TILE_API tile_status tile_add_norm_explain(const tile_add_norm_args *args, int32_t arch,
                                           tile_decision *decision);

/*
 * Flash attention forward (docs/api.md, "Attention"): O = softmax(scale * Q K^T + mask) V per
 * (batch, head), computed tile by tile with an online softmax; the score matrix is never
 * stored. fp16 or bf16 storage (q, k, v, o alike), fp32 accumulation.
 *
 * Layout by strides, in elements: element (b, s, h, d) of q is
 * q[b * q_batch_stride + s * q_seq_stride + h * q_head_stride + d] (d contiguous), likewise
 * k, v (heads_kv heads) and o (heads_q heads). BSHD and BHSD are both stride choices.
 * GQA/MQA: query head h reads key/value head h / (heads_q / heads_kv); nothing is copied.
 * Causal masking is aligned to the bottom-right (FlashAttention 2.1+): query i sees key j iff
 * j <= i + seqlen_k - seqlen_q (per sequence); a query that sees no key gets output 0 and
 * log-sum-exp -inf.
 * Variable lengths: with cu_seqlens_q and cu_seqlens_k (int32 on the device, batch + 1
 * cumulative token offsets, starting at 0), sequence b is tokens cu_seqlens_q[b] ..
 * cu_seqlens_q[b + 1] - 1 of q and o (batch strides unused) and likewise of k and v;
 * seqlen_q / seqlen_k are then the caller's maxima over the batch (no host sync reads the
 * offsets) and total_q / total_k the token counts of the tensors.
 */
typedef struct tile_flash_attention_args {
    size_t struct_size;       /* sizeof(tile_flash_attention_args) as the caller compiled it */
    tile_dtype dtype;         /* TILE_DTYPE_F16 or TILE_DTYPE_BF16 */
    int32_t batch;            /* sequences, >= 1 */
    int32_t heads_q;          /* query (and output) heads, a multiple of heads_kv */
    int32_t heads_kv;         /* key/value heads, >= 1 */
    int32_t head_dim;         /* 8 to 256, a multiple of 8 */
    int32_t causal;           /* 0 or 1 */
    int64_t seqlen_q, seqlen_k; /* lengths (>= 1), or with cu_seqlens their maxima (>= 0) */
    float scale;              /* softmax scale; 0 means 1 / sqrt(head_dim) */
    void *o;
    const void *q, *k, *v;
    int64_t q_batch_stride, q_seq_stride, q_head_stride;
    int64_t k_batch_stride, k_seq_stride, k_head_stride;
    int64_t v_batch_stride, v_seq_stride, v_head_stride;
    int64_t o_batch_stride, o_seq_stride, o_head_stride;
    const int32_t *cu_seqlens_q, *cu_seqlens_k; /* both NULL (fixed lengths) or both given */
    int64_t total_q, total_k; /* with cu_seqlens: tokens in q/o and in k/v */
    float *lse;               /* NULL, or fp32 log-sum-exp (natural log) per (head, query):
                                 fixed lengths [batch, heads_q, seqlen_q], varlen
                                 [heads_q, total_q] */
    /* Since 0.8.0 (a smaller struct_size reads as NULL): NULL, or device memory of
     * workspace_bytes, 8-byte aligned, whose first TILE_FLASH_ATTENTION_WORKSPACE_ZEROED_BYTES
     * (all of it, if smaller) the caller zeroes once before its first call: its counters,
     * which every call leaves zeroed again, whatever the shapes; past them calls keep only
     * scratch. On Hopper the programs of the warp-specialized head-dim-64 variants of
     * 128-row blocks then take query blocks from a counter in it as they finish, not in a
     * fixed order; where it is large enough (tile_flash_attention_workspace_size), a
     * call of too few query blocks to fill the GPU splits the keys over more
     * programs and combines their shares in the workspace (decode). Other variants and calls
     * leave it untouched. Calls that share a workspace must not run at the same time (one
     * stream, or one call in flight). */
    void *workspace;
    /* Since 0.9.0 (a smaller struct_size reads as 0): the bytes of workspace; 0 means
     * TILE_FLASH_ATTENTION_WORKSPACE_BYTES. Must be 0 without a workspace. */
    size_t workspace_bytes;
} tile_flash_attention_args;

/* Bytes of a workspace that holds the block counter alone (no split of the keys). */
#define TILE_FLASH_ATTENTION_WORKSPACE_BYTES 64
/* The workspace's leading bytes that every call leaves zeroed (its counters). Since 0.9.0. */
#define TILE_FLASH_ATTENTION_WORKSPACE_ZEROED_BYTES 4160

/* Sets *bytes to the workspace that a call of *args can use in full: at least
 * TILE_FLASH_ATTENTION_WORKSPACE_BYTES, more where the call may split its keys over programs
 * (the same on any GPU; a call given less splits less, or not at all). *args is validated as by
 * tile_flash_attention_explain, its workspace and workspace_bytes aside; *bytes is untouched on
 * failure. Since 0.9.0. */
TILE_API tile_status tile_flash_attention_workspace_size(const tile_flash_attention_args *args,
                                                         size_t *bytes);

/* Zeroes *args (struct_size bytes of it, the caller's sizeof) and sets args->struct_size.
 * INVALID_ARGUMENT for a NULL args or a struct_size smaller than version 1's struct. */
TILE_API tile_status tile_flash_attention_init(tile_flash_attention_args *args,
                                               size_t struct_size);

/*
 * Runs flash attention on `stream`. Status: INVALID_ARGUMENT for a NULL or too small args,
 * NULL q, k, v or o, batch, heads or sequence lengths out of range, heads_q not a multiple of
 * heads_kv, negative strides, o strides under which two output positions share an element
 * (taken in increasing order, each of o's strides must be at least head_dim plus the span of
 * the smaller ones; BSHD and BHSD pass), only one of the cu_seqlens,
 * extents that overflow int64, causal not 0 or 1, a scale that is not finite or of a
 * magnitude above FLT_MAX / log2(e), head_dim < 1; UNSUPPORTED_DTYPE for fp32;
 * NOT_SUPPORTED for a head_dim that is not a multiple of 8 or above 256, a sequence length
 * or total above 2^31 - 256, or more than 2^30 query blocks of 64 rows; MISALIGNED unless
 * every pointer is 16-byte aligned and every stride a multiple of 8 elements (16 bytes) (the
 * message names the least aligned argument), or a pointer is not
 * aligned to its element (lse, cu_seqlens: 4 bytes), or workspace not 8-byte aligned;
 * INVALID_ARGUMENT for a workspace_bytes without a workspace or under
 * TILE_FLASH_ATTENTION_WORKSPACE_BYTES; otherwise as tile_softmax.
 */
TILE_API tile_status tile_flash_attention(const tile_flash_attention_args *args,
                                          tile_stream stream);

/* Runs exactly variant `variant` of op "attention" (tests force the sm_80 path on Hopper
 * this way); statuses as tile_softmax_variant. */
TILE_API tile_status tile_flash_attention_variant(int32_t variant,
                                                  const tile_flash_attention_args *args,
                                                  tile_stream stream);

/* The variant tile_flash_attention would launch for *args, without launching it. The
 * pointers are validated (not NULL, aligned) but never dereferenced. `arch` as for
 * tile_softmax_explain. */
TILE_API tile_status tile_flash_attention_explain(const tile_flash_attention_args *args,
                                                  int32_t arch, tile_decision *decision);

/*
 * Grouped matrix product for mixture-of-experts layers (docs/api.md, "Grouped matmul"):
 * C_g = A_g B_g (+ bias_g) for g = 0 .. groups - 1. Tokens arrive sorted by group: A_g is rows
 * offsets[g - 1] .. offsets[g] - 1 of A (offsets[-1] taken as 0) and C_g the same rows of C.
 * fp16 or bf16 storage (a, b, c and bias alike), fp32 accumulation.
 *
 * Layout by strides, in elements: element (m, kk) of A is a[m * lda + kk]; element (m, nn) of C
 * is c[m * ldc + nn]; element (kk, nn) of B_g is
 * b[g * b_group_stride + kk * b_k_stride + nn * b_n_stride], with b_n_stride == 1 (B stored
 * [groups, k, n]) or b_k_stride == 1 (B stored [groups, n, k], as torch's weight.t() views);
 * both 1 only where n or k is 1.
 * offsets is int32 on the device, `groups` cumulative row ends (torch._grouped_mm's `offs`):
 * nondecreasing, offsets[groups - 1] <= total_m. It is read on the device only (no host sync,
 * no allocation: the call can be captured in a CUDA graph), so it is not validated: the kernel
 * clamps each end into [previous end, total_m], and rows of C past offsets[groups - 1] are left
 * untouched. Groups may be empty; total_m == 0 launches nothing (after the device and dispatch
 * checks) and succeeds.
 */
typedef struct tile_grouped_matmul_args {
    size_t struct_size;       /* sizeof(tile_grouped_matmul_args) as the caller compiled it */
    tile_dtype dtype;         /* TILE_DTYPE_F16 or TILE_DTYPE_BF16 */
    int32_t groups;           /* 1 .. 65536 */
    int64_t total_m;          /* rows of A and C, >= 0 (0: nothing to do) */
    int64_t n, k;             /* columns of C and of A, >= 1 */
    void *c;
    const void *a, *b;
    int64_t ldc, lda;         /* row strides of C (>= n) and A (>= k) */
    int64_t b_group_stride, b_k_stride, b_n_stride;
    const void *bias;         /* NULL, or [groups, n]: bias of group g at bias + g * bias_group_stride */
    int64_t bias_group_stride;
    const int32_t *offsets;   /* [groups] cumulative row ends, on the device */
    /* Since 0.7.0 (a smaller struct_size reads as NULL): NULL, or device memory of at least
     * TILE_GROUPED_MATMUL_WORKSPACE_BYTES, 8-byte aligned, zeroed once by the caller before
     * its first call; every call leaves it zeroed. On Hopper the programs then take tiles
     * from a counter in it as they finish, not in a fixed order. Calls that share a workspace
     * must not run at the same time (one stream, or one call in flight). */
    void *workspace;
} tile_grouped_matmul_args;

/* Bytes of tile_grouped_matmul_args.workspace. */
#define TILE_GROUPED_MATMUL_WORKSPACE_BYTES 64

/* Zeroes *args (struct_size bytes of it) and sets args->struct_size; as
 * tile_flash_attention_init. */
TILE_API tile_status tile_grouped_matmul_init(tile_grouped_matmul_args *args,
                                              size_t struct_size);

/*
 * Runs the grouped matrix product on `stream`. Status: INVALID_ARGUMENT for a NULL or too small
 * args, NULL a, b, c or offsets, groups outside [1, 65536], total_m < 0, n or k < 1, ldc < n,
 * lda < k, neither B stride 1 (or both, with n and k above 1), negative strides, B strides
 * under which two elements of B share an address (taken in increasing order, each of B's
 * strides must be at least the contiguous extent plus the span of the smaller ones; across
 * groups too: b_group_stride 0 only with one group), a bias_group_stride < n with a bias and
 * groups > 1, extents that overflow int64; UNSUPPORTED_DTYPE for fp32; NOT_SUPPORTED for n or k
 * above 2^31 - 256; MISALIGNED unless a, b, c and bias are 16-byte aligned and lda, ldc, the B
 * strides other than the unit one and bias_group_stride are multiples of 8 elements where they
 * count (a stride over one position does not; the message names the least aligned argument),
 * or offsets is not 4-byte aligned, or workspace
 * not 8-byte aligned; otherwise as
 * tile_softmax. On sm_90 a call the Hopper tensor-map variants cannot take (total_m above
 * 2^31 - 1, a layout the driver cannot encode as a tensor map) runs on an mma.sync variant.
 */
TILE_API tile_status tile_grouped_matmul(const tile_grouped_matmul_args *args,
                                         tile_stream stream);

/* Runs exactly variant `variant` of op "grouped_matmul"; statuses as tile_softmax_variant. */
TILE_API tile_status tile_grouped_matmul_variant(int32_t variant,
                                                 const tile_grouped_matmul_args *args,
                                                 tile_stream stream);

/* The variant tile_grouped_matmul would launch for *args, without launching it; pointers are
 * validated but never dereferenced. `arch` as for tile_softmax_explain. */
TILE_API tile_status tile_grouped_matmul_explain(const tile_grouped_matmul_args *args,
                                                 int32_t arch, tile_decision *decision);

/* The compute capability of the current device as 10*major+minor, in *arch. */
TILE_API tile_status tile_device_arch(int32_t *arch);

#ifdef __cplusplus
}
#endif

#endif /* FUSEDOPS_H */
