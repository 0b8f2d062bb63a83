/* One pre-norm transformer block with libfusedops' ops, run as a captured CUDA graph and checked
 * against a CPU reference. Dense projections go through cuBLAS (its C API); the norms, the
 * attention softmax and the residual adds are libfusedops calls on the same stream.
 *
 *   a = softmax(q k^T / sqrt(D)) v,  q|k|v = RMSNorm(x) Wq|Wk|Wv     attention (one head)
 *   s = x + a Wo;  h = RMSNorm(s)                                      tile_residual_dropout_norm
 *   out = s + h W1                                                     tile_residual_dropout
 *
 * The block grows with the library: flash attention and the MoE grouped matmul (and an
 * activation in the MLP) replace their stand-ins here as those ops land. fp32 storage keeps the
 * reference check tight; bf16 and fp16 take the same calls with another dtype.
 * Build: cc transformer_block.c -lfusedops -lcublas -lcuda -lm */
#include <cublas_v2.h>
#include <cuda.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fusedops.h"

enum { T = 64, D = 256 }; /* tokens, model width */

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

/* Row-major C[m x n] = alpha * A[m x k] B[k x n] (B transposed when trans_b: B is [n x k]). */
static void gemm(cublasHandle_t h, int m, int n, int k, float alpha, const float *a,
                 const float *b, int trans_b, float *c) {
    const float beta = 0.0f;
    /* cuBLAS is column-major: compute C^T = B^T A^T. */
    BLAS(cublasSgemm(h, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha, b,
                     trans_b ? k : n, a, k, &beta, c, n));
}

typedef struct block {
    float *x, *wq, *wk, *wv, *wo, *w1, *g1, *g2;         /* inputs and weights */
    float *h1, *q, *k, *v, *scores, *p, *a, *o, *s, *h2, *m, *out; /* activations */
} block;

/* The block on `stream`: every call is asynchronous, so the whole of it can be captured. */
static void block_forward(const block *b, cublasHandle_t blas, tile_stream stream) {
    const float eps = 1e-5f;
    TILE(tile_rmsnorm(TILE_DTYPE_F32, b->h1, b->x, b->g1, NULL, T, D, D, D, eps, stream));
    gemm(blas, T, D, D, 1.0f, b->h1, b->wq, 0, b->q);
    gemm(blas, T, D, D, 1.0f, b->h1, b->wk, 0, b->k);
    gemm(blas, T, D, D, 1.0f, b->h1, b->wv, 0, b->v);
    gemm(blas, T, T, D, 1.0f / sqrtf((float)D), b->q, b->k, 1, b->scores);
    TILE(tile_softmax(TILE_DTYPE_F32, b->p, b->scores, T, T, T, T, stream));
    gemm(blas, T, D, T, 1.0f, b->p, b->v, 0, b->a);
    gemm(blas, T, D, D, 1.0f, b->a, b->wo, 0, b->o);
    /* s = x + o (dropout off at inference: p = 0 is exactly the sum), h2 = RMSNorm(s). */
    tile_add_norm_args an = {.struct_size = sizeof an, .dtype = TILE_DTYPE_F32,
                             .norm = TILE_NORM_RMS, .rows = T, .cols = D, .y = b->h2, .ld_y = D,
                             .s = b->s, .ld_s = D, .x = b->o, .ld_x = D, .residual = b->x,
                             .ld_residual = D, .weight = b->g2, .eps = eps};
    TILE(tile_residual_dropout_norm(&an, stream));
    gemm(blas, T, D, D, 1.0f, b->h2, b->w1, 0, b->m);
    TILE(tile_residual_dropout(TILE_DTYPE_F32, b->out, b->m, b->s, NULL, NULL, T, D, D, D, D,
                               0.0f, 0, 0, stream));
}

/* ------------------------------------------------------------------ CPU reference (double) */
static void ref_rmsnorm(double *y, const double *x, const double *g, int rows, int cols) {
    for (int r = 0; r < rows; r++) {
        double ss = 0;
        for (int c = 0; c < cols; c++) ss += x[r * cols + c] * x[r * cols + c];
        const double rstd = 1.0 / sqrt(ss / cols + 1e-5);
        for (int c = 0; c < cols; c++) y[r * cols + c] = x[r * cols + c] * rstd * g[c];
    }
}
static void ref_gemm(double *c, const double *a, const double *b, int m, int n, int k, double alpha,
                     int trans_b) {
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            double acc = 0;
            for (int l = 0; l < k; l++) acc += a[i * k + l] * (trans_b ? b[j * k + l] : b[l * n + j]);
            c[i * n + j] = alpha * acc;
        }
}
static void ref_softmax(double *y, const double *x, int rows, int cols) {
    for (int r = 0; r < rows; r++) {
        double m = -INFINITY, sum = 0;
        for (int c = 0; c < cols; c++) m = fmax(m, x[r * cols + c]);
        for (int c = 0; c < cols; c++) sum += exp(x[r * cols + c] - m);
        for (int c = 0; c < cols; c++) y[r * cols + c] = exp(x[r * cols + c] - m) / sum;
    }
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

    /* Host inputs: deterministic pseudo-random values at sensible scales. */
    const size_t sizes[] = {T * D, D * D, D * D, D * D, D * D, D * D, D, D};
    const float scales[] = {1.0f, 0.0625f, 0.0625f, 0.0625f, 0.0625f, 0.0625f, 0.2f, 0.2f};
    float *host_in[8];
    uint64_t state = 42;
    for (int i = 0; i < 8; i++) {
        host_in[i] = malloc(sizes[i] * sizeof(float));
        for (size_t j = 0; j < sizes[i]; j++) {
            state = state * 6364136223846793005ull + 1442695040888963407ull;
            const float u = (float)(state >> 40) / (float)(1 << 24) * 2.0f - 1.0f;
            host_in[i][j] = (i >= 6 ? 1.0f : 0.0f) + scales[i] * u; /* gains near 1 */
        }
    }
    block b;
    float **in[8] = {&b.x, &b.wq, &b.wk, &b.wv, &b.wo, &b.w1, &b.g1, &b.g2};
    for (int i = 0; i < 8; i++) {
        CUdeviceptr p;
        CU(cuMemAlloc(&p, sizes[i] * sizeof(float)));
        CU(cuMemcpyHtoD(p, host_in[i], sizes[i] * sizeof(float)));
        *in[i] = (float *)p;
    }
    float **act[] = {&b.h1, &b.q, &b.k, &b.v, &b.scores, &b.p, &b.a, &b.o, &b.s, &b.h2, &b.m, &b.out};
    for (size_t i = 0; i < sizeof act / sizeof *act; i++) {
        CUdeviceptr p;
        CU(cuMemAlloc(&p, T * D * sizeof(float)));
        *act[i] = (float *)p;
    }

    /* Capture once, replay: the launches of a block cost one graph launch. */
    CUgraph graph;
    CUgraphExec exec;
    CU(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
    block_forward(&b, blas, (tile_stream)stream);
    CU(cuStreamEndCapture(stream, &graph));
    CU(cuGraphInstantiate(&exec, graph, 0));
    const int replays = 10;
    for (int i = 0; i < replays; i++) CU(cuGraphLaunch(exec, stream));
    static float out[T * D];
    CU(cuMemcpyDtoHAsync(out, (CUdeviceptr)b.out, sizeof out, stream));
    CU(cuStreamSynchronize(stream));

    /* The same block on the CPU, in double. */
    double *x = widen(host_in[0], T * D), *wq = widen(host_in[1], D * D),
           *wk = widen(host_in[2], D * D), *wv = widen(host_in[3], D * D),
           *wo = widen(host_in[4], D * D), *w1 = widen(host_in[5], D * D),
           *g1 = widen(host_in[6], D), *g2 = widen(host_in[7], D);
    static double h1[T * D], q[T * D], k[T * D], v[T * D], sc[T * T], p[T * T], a[T * D],
        o[T * D], s[T * D], h2[T * D], m[T * D];
    ref_rmsnorm(h1, x, g1, T, D);
    ref_gemm(q, h1, wq, T, D, D, 1.0, 0);
    ref_gemm(k, h1, wk, T, D, D, 1.0, 0);
    ref_gemm(v, h1, wv, T, D, D, 1.0, 0);
    ref_gemm(sc, q, k, T, T, D, 1.0 / sqrt((double)D), 1);
    ref_softmax(p, sc, T, T);
    ref_gemm(a, p, v, T, D, T, 1.0, 0);
    ref_gemm(o, a, wo, T, D, D, 1.0, 0);
    for (int i = 0; i < T * D; i++) s[i] = x[i] + o[i];
    ref_rmsnorm(h2, s, g2, T, D);
    ref_gemm(m, h2, w1, T, D, D, 1.0, 0);
    double max_err = 0, max_ref = 0;
    int bad = 0;
    for (int i = 0; i < T * D; i++) {
        const double want = s[i] + m[i], err = fabs(out[i] - want);
        if (!(err <= 2e-3 + 2e-3 * fabs(want))) bad++; /* NaN counts as bad */
        if (err > max_err) max_err = err;
        if (fabs(want) > max_ref) max_ref = fabs(want);
    }
    printf("transformer block %dx%d, CUDA graph replayed %d times: max |error| %.2e (max |out| "
           "%.2f), %d of %d outside tolerance: %s\n",
           T, D, replays, max_err, max_ref, bad, T * D, bad ? "FAIL" : "ok");
    CU(cuGraphExecDestroy(exec));
    CU(cuGraphDestroy(graph));
    BLAS(cublasDestroy(blas));
    return bad ? 1 : 0;
}
