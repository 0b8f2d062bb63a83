/* One pre-norm transformer block with libfusedops' ops, run as a captured CUDA graph and checked
 * against a CPU reference. Dense projections go through cuBLAS (its C API); the norms, the
 * attention and the residual adds are libfusedops calls on the same stream.
 *
 *   q|k|v = RMSNorm(x) Wq|Wk|Wv                                       tile_rmsnorm, cuBLAS
 *   a = softmax(q k^T / sqrt(HD) + causal mask) v, per head              tile_flash_attention
 *   s = x + a Wo;  h = RMSNorm(s)                                      tile_residual_dropout_norm
 *   out = s + h W1                                                     tile_residual_dropout
 *
 * Attention has HEADS query heads of width HD and KV_HEADS key/value heads (grouped-query
 * attention: query head h reads key/value head h / (HEADS / KV_HEADS), nothing is copied); q, k,
 * v and a stay in the projections' [token, head, HD] layout, which the attention call takes as
 * strides. Storage is fp16 throughout (flash attention takes fp16 or bf16), with fp32
 * accumulation in every op and projection; the CPU reference computes in double and rounds to
 * fp16 where the GPU stores. The MoE grouped matmul (and an activation in the MLP) replace their
 * stand-ins here as those ops land.
 * Build: cc transformer_block.c -lfusedops -lcublas -lcuda -lm */
#include <cublas_v2.h>
#include <cuda.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fusedops.h"

enum {
    T = 64,                /* tokens (one sequence) */
    D = 256,               /* model width */
    HEADS = 4,             /* query heads */
    KV_HEADS = 2,          /* key/value heads */
    HD = D / HEADS,        /* head width */
    KV = KV_HEADS * HD     /* width of k and v */
};

#define CU(call)                                                                             \
    do {                                                                                     \
        CUresult r_ = (call);                                                                \
        if (r_ != CUDA_SUCCESS) {                                                            \
            const char *n_ = "?";                                                            \
            cuGetErrorName(r_, &n_);                                                         \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, n_);              \
            exit(1);                                                                         \
        }                                                                                    \
    } while (0)
#define BLAS(call)                                                                           \
    do {                                                                                     \
        cublasStatus_t s_ = (call);                                                          \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                                   \
            fprintf(stderr, "%s:%d: %s: cuBLAS status %d\n", __FILE__, __LINE__, #call,     \
                    (int)s_);                                                                \
            exit(1);                                                                         \
        }                                                                                    \
    } while (0)
#define TILE(call)                                                                           \
    do {                                                                                     \
        tile_status t_ = (call);                                                             \
        if (t_ != TILE_STATUS_SUCCESS) {                                                     \
            fprintf(stderr, "%s:%d: %s: %s: %s\n", __FILE__, __LINE__, #call,               \
                    tile_status_string(t_), tile_last_error());                              \
            exit(1);                                                                         \
        }                                                                                    \
    } while (0)

/* fp16 storage on the host (IEEE binary16, round to nearest even; subnormals, infinities and
 * NaN included): for the uploads, and for the reference to round where the GPU stores. Bit
 * tricks after F. Giesen's float <-> half conversions; the default rounding mode does the
 * subnormal case. */
static float bits_to_float(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}
static uint32_t float_to_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}
static uint16_t to_half(float f) {
    uint32_t u = float_to_bits(f);
    const uint32_t sign = u & 0x80000000u;
    u ^= sign;
    uint32_t h;
    if (u >= (127u + 16u) << 23) { /* overflows to infinity, or is infinity or NaN */
        h = u > 0x7f800000u ? 0x7e00u : 0x7c00u;
    } else if (u < 113u << 23) { /* a half subnormal or zero: let the FPU round the mantissa */
        const float magic = bits_to_float(((127u - 15u) + (23u - 10u) + 1u) << 23);
        h = float_to_bits(bits_to_float(u) + magic) - float_to_bits(magic);
    } else { /* normal: rebias the exponent, round the 13 dropped bits to nearest even */
        const uint32_t odd = (u >> 13) & 1u;
        u += ((uint32_t)(15 - 127) << 23) + 0xfffu + odd;
        h = u >> 13;
    }
    return (uint16_t)(h | (sign >> 16));
}
static float from_half(uint16_t h) {
    const uint32_t exp_mask = 0x7c00u << 13;
    uint32_t u = (uint32_t)(h & 0x7fffu) << 13;
    const uint32_t exp = u & exp_mask;
    u += (127u - 15u) << 23;
    if (exp == exp_mask) { /* infinity or NaN */
        u += (128u - 16u) << 23;
    } else if (exp == 0) { /* zero or subnormal: renormalize */
        u += 1u << 23;
        u = float_to_bits(bits_to_float(u) - bits_to_float(113u << 23));
    }
    return bits_to_float(u | (uint32_t)(h & 0x8000u) << 16);
}

/* Row-major C[m x n] = A[m x k] B[k x n], fp16 in and out, fp32 accumulation. */
static void gemm(cublasHandle_t h, int m, int n, int k, const uint16_t *a, const uint16_t *b,
                 uint16_t *c) {
    const float alpha = 1.0f, beta = 0.0f;
    /* cuBLAS is column-major: compute C^T = B^T A^T. */
    BLAS(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha, b, CUDA_R_16F, n, a,
                      CUDA_R_16F, k, &beta, c, CUDA_R_16F, n, CUBLAS_COMPUTE_32F,
                      CUBLAS_GEMM_DEFAULT));
}

typedef struct block {                                  /* device buffers, fp16 */
    uint16_t *x, *wq, *wk, *wv, *wo, *w1, *g1, *g2;     /* inputs and weights */
    uint16_t *h1, *q, *k, *v, *a, *o, *s, *h2, *m, *out; /* activations */
} block;

/* The block on `stream`: every call is asynchronous, so the whole of it can be captured. */
static void block_forward(const block *b, cublasHandle_t blas, tile_stream stream) {
    const float eps = 1e-5f;
    const tile_dtype f16 = TILE_DTYPE_F16;
    TILE(tile_rmsnorm(f16, b->h1, b->x, b->g1, NULL, T, D, D, D, eps, stream));
    gemm(blas, T, D, D, b->h1, b->wq, b->q);
    gemm(blas, T, KV, D, b->h1, b->wk, b->k);
    gemm(blas, T, KV, D, b->h1, b->wv, b->v);
    /* One sequence of T tokens. Element (token t, head h, i) of q and a is at t * D + h * HD + i,
     * of k and v at t * KV + h * HD + i: strides, nothing transposed. scale 0: 1 / sqrt(HD). */
    const tile_flash_attention_args fa = {
        .struct_size = sizeof fa, .dtype = f16, .batch = 1, .heads_q = HEADS,
        .heads_kv = KV_HEADS, .head_dim = HD, .causal = 1, .seqlen_q = T, .seqlen_k = T,
        .o = b->a, .q = b->q, .k = b->k, .v = b->v,
        .q_batch_stride = T * D, .q_seq_stride = D, .q_head_stride = HD,
        .k_batch_stride = T * KV, .k_seq_stride = KV, .k_head_stride = HD,
        .v_batch_stride = T * KV, .v_seq_stride = KV, .v_head_stride = HD,
        .o_batch_stride = T * D, .o_seq_stride = D, .o_head_stride = HD};
    TILE(tile_flash_attention(&fa, stream));
    gemm(blas, T, D, D, b->a, b->wo, b->o);
    /* s = x + o (dropout off at inference: p = 0 is exactly the sum), h2 = RMSNorm(s). */
    tile_add_norm_args an = {.struct_size = sizeof an, .dtype = f16, .norm = TILE_NORM_RMS,
                             .rows = T, .cols = D, .y = b->h2, .ld_y = D, .s = b->s, .ld_s = D,
                             .x = b->o, .ld_x = D, .residual = b->x, .ld_residual = D,
                             .weight = b->g2, .eps = eps};
    TILE(tile_residual_dropout_norm(&an, stream));
    gemm(blas, T, D, D, b->h2, b->w1, b->m);
    TILE(tile_residual_dropout(f16, b->out, b->m, b->s, NULL, NULL, T, D, D, D, D, 0.0f, 0, 0,
                               stream));
}

/* ------------------------------------------------ CPU reference (double, fp16 where stored) */
static void ref_store(double *v, int n) { /* what the GPU keeps of v: fp16 */
    for (int i = 0; i < n; i++) v[i] = from_half(to_half((float)v[i]));
}
static void ref_rmsnorm(double *y, const double *x, const double *g, int rows, int cols) {
    for (int r = 0; r < rows; r++) {
        double ss = 0;
        for (int c = 0; c < cols; c++) ss += x[r * cols + c] * x[r * cols + c];
        const double rstd = 1.0 / sqrt(ss / cols + 1e-5);
        for (int c = 0; c < cols; c++) y[r * cols + c] = x[r * cols + c] * rstd * g[c];
    }
    ref_store(y, rows * cols);
}
static void ref_gemm(double *c, const double *a, const double *b, int m, int n, int k) {
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            double acc = 0;
            for (int l = 0; l < k; l++) acc += a[i * k + l] * b[l * n + j];
            c[i * n + j] = acc;
        }
    ref_store(c, m * n);
}
/* a = softmax(q k^T / sqrt(HD)) v per query head, token i seeing tokens 0..i (causal); query
 * head h reads key/value head h / (HEADS / KV_HEADS). q and a are [T, D], k and v [T, KV]. */
static void ref_attention(double *a, const double *q, const double *k, const double *v) {
    double p[T];
    for (int h = 0; h < HEADS; h++) {
        const int hk = h / (HEADS / KV_HEADS);
        for (int i = 0; i < T; i++) {
            const double *qi = q + i * D + h * HD;
            double m = -INFINITY, sum = 0;
            for (int j = 0; j <= i; j++) {
                const double *kj = k + j * KV + hk * HD;
                double dot = 0;
                for (int d = 0; d < HD; d++) dot += qi[d] * kj[d];
                p[j] = dot / sqrt((double)HD);
                m = fmax(m, p[j]);
            }
            for (int j = 0; j <= i; j++) sum += p[j] = exp(p[j] - m);
            for (int d = 0; d < HD; d++) {
                double acc = 0;
                for (int j = 0; j <= i; j++) acc += p[j] * v[j * KV + hk * HD + d];
                a[i * D + h * HD + d] = acc / sum;
            }
        }
    }
    ref_store(a, T * D);
}

static double *widen(const float *f, size_t n) {
    double *d = malloc(n * sizeof *d);
    for (size_t i = 0; i < n; i++) d[i] = f[i];
    return d;
}

int main(void) {
    CUdevice dev;
    CUcontext ctx;
    if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, 0) != CUDA_SUCCESS) {
        fprintf(stderr, "no GPU\n");
        return 77;
    }
    CU(cuDevicePrimaryCtxRetain(&ctx, dev));
    CU(cuCtxSetCurrent(ctx));
    CUstream stream;
    CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    cublasHandle_t blas;
    BLAS(cublasCreate(&blas));
    BLAS(cublasSetStream(blas, (cudaStream_t)stream));
    /* A workspace of our own: cuBLAS must not allocate while the stream is being captured. */
    CUdeviceptr workspace;
    const size_t workspace_bytes = 4u << 20;
    CU(cuMemAlloc(&workspace, workspace_bytes));
    BLAS(cublasSetWorkspace(blas, (void *)workspace, workspace_bytes));

    /* Host inputs: deterministic pseudo-random values at sensible scales, kept as the fp16
     * values the GPU gets. */
    const size_t sizes[] = {T * D, D * D, D * KV, D * KV, D * D, D * D, D, D};
    const float scales[] = {1.0f, 0.0625f, 0.0625f, 0.0625f, 0.0625f, 0.0625f, 0.2f, 0.2f};
    float *host_in[8];
    uint16_t *stored = malloc(D * D * sizeof *stored); /* the largest input */
    uint64_t state = 42;
    block b;
    uint16_t **in[8] = {&b.x, &b.wq, &b.wk, &b.wv, &b.wo, &b.w1, &b.g1, &b.g2};
    for (int i = 0; i < 8; i++) {
        host_in[i] = malloc(sizes[i] * sizeof(float));
        for (size_t j = 0; j < sizes[i]; j++) {
            state = state * 6364136223846793005ull + 1442695040888963407ull;
            const float u = (float)(state >> 40) / (float)(1 << 24) * 2.0f - 1.0f;
            stored[j] = to_half((i >= 6 ? 1.0f : 0.0f) + scales[i] * u); /* gains near 1 */
            host_in[i][j] = from_half(stored[j]);
        }
        CUdeviceptr p;
        CU(cuMemAlloc(&p, sizes[i] * sizeof *stored));
        CU(cuMemcpyHtoD(p, stored, sizes[i] * sizeof *stored));
        *in[i] = (uint16_t *)p;
    }
    free(stored);
    uint16_t **act[] = {&b.h1, &b.q, &b.k, &b.v, &b.a, &b.o, &b.s, &b.h2, &b.m, &b.out};
    for (size_t i = 0; i < sizeof act / sizeof *act; i++) {
        CUdeviceptr p;
        CU(cuMemAlloc(&p, T * D * sizeof(uint16_t))); /* k and v use T x KV of theirs */
        *act[i] = (uint16_t *)p;
    }

    /* The library's first call on a device loads its kernels: make it outside the capture. */
    int32_t arch;
    TILE(tile_device_arch(&arch));
    /* Capture once, replay: the launches of a block cost one graph launch. */
    CUgraph graph;
    CUgraphExec exec;
    CU(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
    block_forward(&b, blas, (tile_stream)stream);
    CU(cuStreamEndCapture(stream, &graph));
    CU(cuGraphInstantiate(&exec, graph, 0));
    const int replays = 10;
    for (int i = 0; i < replays; i++) CU(cuGraphLaunch(exec, stream));
    static uint16_t out[T * D];
    CU(cuMemcpyDtoHAsync(out, (CUdeviceptr)b.out, sizeof out, stream));
    CU(cuStreamSynchronize(stream));

    /* The same block on the CPU, in double, rounded to fp16 wherever the GPU stores. */
    double *x = widen(host_in[0], T * D), *wq = widen(host_in[1], D * D),
           *wk = widen(host_in[2], D * KV), *wv = widen(host_in[3], D * KV),
           *wo = widen(host_in[4], D * D), *w1 = widen(host_in[5], D * D),
           *g1 = widen(host_in[6], D), *g2 = widen(host_in[7], D);
    static double h1[T * D], q[T * D], k[T * KV], v[T * KV], a[T * D], o[T * D], s[T * D],
        h2[T * D], m[T * D];
    ref_rmsnorm(h1, x, g1, T, D);
    ref_gemm(q, h1, wq, T, D, D);
    ref_gemm(k, h1, wk, T, KV, D);
    ref_gemm(v, h1, wv, T, KV, D);
    ref_attention(a, q, k, v);
    ref_gemm(o, a, wo, T, D, D);
    for (int i = 0; i < T * D; i++) s[i] = x[i] + o[i];
    ref_store(s, T * D);
    ref_rmsnorm(h2, s, g2, T, D);
    ref_gemm(m, h2, w1, T, D, D);
    /* Both sides round at the same points, but a value within the GPU's fp32 error of a
     * rounding boundary can land one fp16 unit (2^-10 relative) away, and flash attention
     * rounds its probabilities to fp16 before P V; a few units pass. */
    const double tol = 4.0 / 1024;
    double max_err = 0, max_ref = 0;
    int bad = 0;
    for (int i = 0; i < T * D; i++) {
        const double want = from_half(to_half((float)(s[i] + m[i])));
        const double err = fabs(from_half(out[i]) - want);
        if (!(err <= tol * (1.0 + fabs(want)))) bad++; /* NaN counts as bad */
        if (err > max_err) max_err = err;
        if (fabs(want) > max_ref) max_ref = fabs(want);
    }
    printf("transformer block %dx%d, %d heads (%d key/value), fp16, causal flash attention, "
           "CUDA graph replayed %d times: max |error| %.2e (max |out| %.2f), %d of %d outside "
           "tolerance: %s\n",
           T, D, HEADS, KV_HEADS, replays, max_err, max_ref, bad, T * D, bad ? "FAIL" : "ok");
    CU(cuGraphExecDestroy(exec));
    CU(cuGraphDestroy(graph));
    BLAS(cublasDestroy(blas));
    return bad ? 1 : 0;
}
