/*
 * fusedops: the command-line tool.
 *
 *   fusedops list [--op OP] [--dtype D]         embedded variants, archs and parameters
 *   fusedops explain OP --dtype D --shape RxC [--arch sm_NN] [--align BYTES]
 *                    [--ld-x N] [--ld-y N]       the variant dispatch picks, and why
 *   fusedops explain attention --dtype D --shape BxHxSxD [--heads-kv N] [--causal]
 *                    [--seqlen-k N] [--varlen] [--fixed-schedule] [--arch sm_NN]
 *   fusedops explain grouped_matmul --dtype D --shape GxMxKxN [--b-layout kn|nk] [--bias]
 *                    [--arch sm_NN]
 *   fusedops check [--dtype D] [--variant NAME] [--quick]
 *                                                every variant vs a float64 CPU reference
 *   fusedops bench OP --dtype D --shape RxC [--variant NAME] [--iters N]
 *                                                GB/s for one shape, beside the copy ceiling
 *   fusedops bench attention --dtype D --shape BxHxSxD [--heads-kv N] [--causal]
 *                    [--seqlen-k N] [--varlen | --ragged] [--fixed-schedule] [--variant NAME]
 *                    [--iters N]
 *                                                     TFLOP/s
 *   fusedops bench grouped_matmul --dtype D --shape GxMxKxN [--b-layout kn|nk] [--bias]
 *                    [--fixed-schedule] [--variant NAME] [--iters N]
 *                                                     TFLOP/s, group sizes skewed (Dirichlet)
 *   fusedops tune [--op softmax|norm|residual_dropout|attention|grouped_matmul] [--dtype D]
 *                 [--out FILE] [--verify] [--min-rows N] [--max-rows N] [--min-cols N] [--max-cols N]
 *                 [--times FILE] [--shapes RxC,...]
 *                                                time every eligible variant over a shape
 *                                                grid and write the winners (autotune_results/)
 *   fusedops version
 *
 * OP: softmax, log_softmax, layernorm, rmsnorm, residual_dropout, residual_dropout_norm;
 * attention takes its own shape (batch x heads x sequence x head_dim), grouped_matmul its own
 * (groups x total rows x K x N).
 * Exit codes: 0 success, 1 a check failed or a call failed, 2 usage, 3 no GPU.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attention_tune_grid.h"
#include "fusedops.h"
#include "support.h"

enum { EXIT_CHECK_FAILED = 1, EXIT_USAGE = 2, EXIT_NO_GPU = 3 };

typedef struct options {
    const char *op, *variant;
    int dtype; /* -1: all */
    int64_t rows, cols, ld_x, ld_y;
    int32_t arch, align, iters, quick, log_softmax;
    int64_t dims[4]; /* --shape: rows x cols (dims 0, 1), or attention's B x H x S x D */
    int ndims;
    int64_t heads_kv, seqlen_k; /* attention: 0 means heads and S */
    int causal;
    int b_nk, bias; /* grouped_matmul: B stored [groups, n, k] (--b-layout nk); a bias */
    int fixed_schedule; /* attention and grouped_matmul bench: no workspace (the fixed order
                         * of blocks or tiles) */
    int varlen; /* attention: the B sequences packed as one varlen batch (cu_seqlens); 2:
                 * --ragged, lengths drawn in [1, S] */
} options;

/* The ops the CLI runs, by their C function; `family` is the registry op behind them. */
typedef enum cli_op {
    OP_SOFTMAX,
    OP_LOG_SOFTMAX,
    OP_LAYERNORM,
    OP_RMSNORM,
    OP_RESIDUAL_DROPOUT,
    OP_RESIDUAL_DROPOUT_NORM,
    OP_ATTENTION,
    OP_GROUPED_MATMUL,
    OP_COUNT_
} cli_op;
/* `table`: the op its calls' winners are listed under in the tuned tables (the family's, or a
 * table op of their own: docs/tuning.md). */
static const struct {
    const char *name, *family, *table;
    int tensors_read, tensors_written; /* rows x cols tensors: the minimum traffic */
} op_info[OP_COUNT_] = {
    [OP_SOFTMAX] = {"softmax", "softmax", "softmax", 1, 1},
    [OP_LOG_SOFTMAX] = {"log_softmax", "softmax", "softmax", 1, 1},
    [OP_LAYERNORM] = {"layernorm", "norm", "norm", 1, 1},
    [OP_RMSNORM] = {"rmsnorm", "norm", "norm", 1, 1},
    [OP_RESIDUAL_DROPOUT] = {"residual_dropout", "norm", "residual_dropout", 2, 1},
    [OP_RESIDUAL_DROPOUT_NORM] = {"residual_dropout_norm", "norm", "norm", 2, 2},
    [OP_ATTENTION] = {"attention", "attention", "attention", 3, 1}, /* q, k, v; o */
    [OP_GROUPED_MATMUL] = {"grouped_matmul", "grouped_matmul", "grouped_matmul", 2, 1}, /* a, b; c */
};

static tile_status explain_rowwise_op(cli_op op, tile_dtype dtype, int64_t rows, int64_t cols,
                                      int64_t ld_y, int64_t ld_x, int32_t align, int32_t arch,
                                      tile_decision *d);

static int parse_op(const char *s) {
    for (int i = 0; i < OP_COUNT_; i++)
        if (!strcmp(s, op_info[i].name)) return i;
    return -1;
}

static int usage(const char *msg) {
    if (msg) fprintf(stderr, "fusedops: %s\n", msg);
    fputs("usage:\n"
          "  fusedops list [--op OP] [--dtype f32|f16|bf16]\n"
          "  fusedops explain OP --dtype D --shape ROWSxCOLS [--arch sm_NN] [--align BYTES]"
          " [--ld-x N] [--ld-y N]\n"
          "  fusedops explain attention --dtype D --shape BxHxSxD [--heads-kv N] [--causal]"
          " [--seqlen-k N] [--varlen] [--fixed-schedule] [--arch sm_NN]\n"
          "  fusedops explain grouped_matmul --dtype D --shape GxMxKxN [--b-layout kn|nk]"
          " [--bias] [--arch sm_NN]\n"
          "  fusedops check [--dtype D] [--variant NAME] [--quick]\n"
          "  fusedops bench OP --dtype D --shape ROWSxCOLS [--log] [--variant NAME] [--iters N]\n"
          "  fusedops bench attention --dtype D --shape BxHxSxD [--heads-kv N] [--causal]"
          " [--seqlen-k N] [--varlen | --ragged] [--fixed-schedule] [--variant NAME] [--iters N]\n"
          "  fusedops bench grouped_matmul --dtype D --shape GxMxKxN [--b-layout kn|nk]"
          " [--bias] [--fixed-schedule] [--variant NAME] [--iters N]\n"
          "  fusedops tune [--op softmax|norm|residual_dropout|attention|grouped_matmul]"
          " [--dtype D]\n               "
          " [--out FILE] [--verify]\n                [--min-rows N] [--max-rows N] [--min-cols N] [--max-cols N]"
          " [--times FILE]\n                [--shapes ROWSxCOLS,...]\n"
          "  fusedops version\n"
          "OP: softmax log_softmax layernorm rmsnorm residual_dropout residual_dropout_norm\n"
          "attention: B batch, H query heads, S query length, D head_dim\n"
          "grouped_matmul: G groups, M rows of A and C in all, K, N; B stored [G, K, N] (kn)"
          " or [G, N, K] (nk)\n",
          stderr);
    return EXIT_USAGE;
}

/* A whole decimal number in [min, max] (no sign or space games beyond strtoll's, no trailing
 * text, no overflow): 0, else -1. */
static int parse_number(const char *text, int64_t min, int64_t max, int64_t *out) {
    if (!text || !*text) return -1;
    char *end;
    errno = 0;
    const long long v = strtoll(text, &end, 10);
    if (end == text || *end || errno == ERANGE || v < min || v > max) return -1;
    *out = v;
    return 0;
}

/* parse_number into a 32-bit option: 0, else -1. */
static int parse_int32(const char *text, int32_t min, int32_t max, int32_t *out) {
    int64_t n;
    if (parse_number(text, min, max, &n)) return -1;
    *out = (int32_t)n;
    return 0;
}

static int parse_dtype(const char *s) {
    for (int d = 0; d < TILE_DTYPE_COUNT_; d++)
        if (!strcmp(s, tile_dtype_string((tile_dtype)d))) return d;
    return -2;
}

/* Whether `name` is an option that takes a value: the last argument, it is missing its value,
 * else unknown (tune's own reach parse_options only without their value). */
static int takes_value(const char *name) {
    static const char *const names[] = {
        "--b-layout", "--op",    "--variant", "--dtype",    "--shape",    "--heads-kv",
        "--seqlen-k", "--arch",  "--align",   "--iters",    "--ld-x",     "--ld-y",
        "--out",      "--times", "--shapes",  "--min-rows", "--max-rows", "--min-cols",
        "--max-cols"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (!strcmp(name, names[i])) return 1;
    return 0;
}

static int parse_options(int argc, char **argv, int first, options *o) {
    memset(o, 0, sizeof *o);
    o->dtype = -1;
    o->align = 256;
    o->iters = 200;
    for (int i = first; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--quick")) o->quick = 1;
        else if (!strcmp(a, "--log")) o->log_softmax = 1;
        else if (!strcmp(a, "--causal")) o->causal = 1;
        else if (!strcmp(a, "--bias")) o->bias = 1;
        else if (!strcmp(a, "--fixed-schedule")) o->fixed_schedule = 1;
        else if (!strcmp(a, "--varlen")) o->varlen = o->varlen ? o->varlen : 1;
        else if (!strcmp(a, "--ragged")) o->varlen = 2;
        else if (!v) return usage(takes_value(a) ? "option needs a value" : "unknown option");
        else if (!strcmp(a, "--b-layout")) {
            const char *l = argv[++i];
            if (strcmp(l, "kn") && strcmp(l, "nk")) return usage("--b-layout is kn or nk");
            o->b_nk = !strcmp(l, "nk");
        }
        else if (!strcmp(a, "--op")) o->op = argv[++i];
        else if (!strcmp(a, "--variant")) o->variant = argv[++i];
        else if (!strcmp(a, "--dtype")) {
            if ((o->dtype = parse_dtype(argv[++i])) < 0) return usage("unknown --dtype");
        } else if (!strcmp(a, "--shape")) {
            /* 2 to 4 numbers separated by 'x' */
            const char *p = argv[++i];
            char *end;
            for (o->ndims = 0; o->ndims < 4; o->ndims++) {
                errno = 0;
                o->dims[o->ndims] = strtoll(p, &end, 10);
                if (end == p)
                    return usage("--shape is ROWSxCOLS (attention: BxHxSxD, grouped_matmul: GxMxKxN)");
                if (errno == ERANGE) return usage("--shape: a number past 64 bits");
                p = end;
                if (*p != 'x') break;
                p++;
            }
            if (*p) return usage("--shape is ROWSxCOLS (attention: BxHxSxD, grouped_matmul: GxMxKxN)");
            o->ndims++;
            o->rows = o->dims[0];
            o->cols = o->dims[1];
        } else if (!strcmp(a, "--heads-kv")) {
            if (parse_number(argv[++i], 1, INT32_MAX, &o->heads_kv))
                return usage("--heads-kv is a number from 1 to 2^31 - 1");
        } else if (!strcmp(a, "--seqlen-k")) {
            if (parse_number(argv[++i], 1, INT64_MAX, &o->seqlen_k))
                return usage("--seqlen-k is a number of at least 1");
        } else if (!strcmp(a, "--arch")) {
            const char *arch = argv[++i];
            if (strncmp(arch, "sm_", 3) || parse_int32(arch + 3, 10, 999, &o->arch))
                return usage("--arch is sm_NN (sm_80, sm_90, ...)");
        } else if (!strcmp(a, "--align")) {
            if (parse_int32(argv[++i], 1, INT32_MAX, &o->align))
                return usage("--align is a number of bytes, at least 1");
        } else if (!strcmp(a, "--iters")) {
            if (parse_int32(argv[++i], 1, INT32_MAX, &o->iters))
                return usage("--iters is a number, at least 1");
        } else if (!strcmp(a, "--ld-x")) {
            if (parse_number(argv[++i], 1, INT64_MAX, &o->ld_x))
                return usage("--ld-x is a number of elements, at least 1");
        } else if (!strcmp(a, "--ld-y")) {
            if (parse_number(argv[++i], 1, INT64_MAX, &o->ld_y))
                return usage("--ld-y is a number of elements, at least 1");
        } else return usage("unknown option");
    }
    if (o->variant && tile_variant_find(o->variant) < 0)
        return usage("unknown --variant (see fusedops list)");
    if (!o->ld_x) o->ld_x = o->cols;
    if (!o->ld_y) o->ld_y = o->cols;
    return 0;
}

static int open_gpu(support_gpu *gpu) {
    const char *why = "";
    if (support_gpu_open(gpu, &why) == 0) return 0;
    fprintf(stderr, "fusedops: no GPU: %s\n", why);
    return -1;
}

static int cmd_list(const options *o) {
    printf("%-40s %-9s %-5s %-9s %7s %7s %9s %5s  %s\n", "variant", "op", "dtype", "arch",
           "threads", "cluster", "max_cols", "align", "params");
    int shown = 0;
    for (int32_t i = 0; i < tile_variant_count(); i++) {
        tile_variant_info v = {.struct_size = sizeof v};
        if (tile_variant_get(i, &v) != TILE_STATUS_SUCCESS) return EXIT_CHECK_FAILED;
        if ((o->op && strcmp(o->op, v.op)) || (o->dtype >= 0 && (int)v.dtype != o->dtype))
            continue;
        char arch[24], cols[24];
        if (v.arch_max) snprintf(arch, sizeof arch, "sm_%d-%d", v.arch_min, v.arch_max);
        else snprintf(arch, sizeof arch, "sm_%d+", v.arch_min);
        if (v.max_cols) snprintf(cols, sizeof cols, "%lld", (long long)v.max_cols);
        else snprintf(cols, sizeof cols, "any");
        printf("%-40s %-9s %-5s %-9s %7d %7d %9s %5d  %s\n", v.name, v.op,
               tile_dtype_string(v.dtype), arch, v.threads, v.cluster, cols, v.align_bytes,
               v.params);
        shown++;
    }
    printf("%d of %d variants\n", shown, tile_variant_count());
    return 0;
}

/* Attention's problem from --shape BxHxSxD, --heads-kv and --seqlen-k: BSHD, dense, on the
 * pointers given (explain's are never dereferenced); with --varlen the B sequences packed one
 * after another ([B * S, H, D], cu_seqlens_q and _k: B + 1 ends each, of equal lengths).
 * Returns 0 or a usage error. */
static int attention_args_of(const options *o, void *q, void *k, void *v, void *out,
                             const int32_t *cu_q, const int32_t *cu_k,
                             tile_flash_attention_args *a) {
    if (o->ndims != 4) return usage("attention's --shape is BxHxSxD, e.g. 2x16x1024x128");
    tile_flash_attention_init(a, sizeof *a);
    const int64_t hq = o->dims[1], hkv = o->heads_kv ? o->heads_kv : hq, d = o->dims[3];
    a->dtype = (tile_dtype)o->dtype;
    a->batch = (int32_t)o->dims[0];
    a->heads_q = (int32_t)hq;
    a->heads_kv = (int32_t)hkv;
    a->head_dim = (int32_t)d;
    a->causal = o->causal;
    a->seqlen_q = o->dims[2];
    a->seqlen_k = o->seqlen_k ? o->seqlen_k : o->dims[2];
    if (a->batch != o->dims[0] || a->heads_q != hq || a->heads_kv != hkv || a->head_dim != d)
        return usage("--shape and --heads-kv take 32-bit batch, heads and head_dim");
    /* the dense layout's batch strides (S x H x D elements) must fit int64 (the library
     * checks the rest: negative or zero sizes give their status, before it reads a stride or
     * total, so with a negative size those stay 0: their products could overflow) */
    const int sizes_nonnegative = a->batch >= 0 && hq >= 0 && hkv >= 0 && d >= 0 &&
                                  a->seqlen_q >= 0 && a->seqlen_k >= 0;
    if ((hq > 0 && d > 0 && a->seqlen_q > INT64_MAX / (hq * d)) ||
        (hkv > 0 && d > 0 && a->seqlen_k > INT64_MAX / (hkv * d)))
        return usage("--shape (or --seqlen-k): a sequence of S x H x D elements past 64 bits");
    a->q = q, a->k = k, a->v = v, a->o = out;
    a->q_head_stride = a->k_head_stride = a->v_head_stride = a->o_head_stride = d;
    a->q_seq_stride = a->o_seq_stride = hq * d;
    a->k_seq_stride = a->v_seq_stride = hkv * d;
    if (sizes_nonnegative) {
        a->q_batch_stride = a->o_batch_stride = a->seqlen_q * hq * d;
        a->k_batch_stride = a->v_batch_stride = a->seqlen_k * hkv * d;
    }
    if (o->varlen) {
        /* B x S tokens within 32 bits, asked by division: the product can pass 64 bits */
        if (sizes_nonnegative && a->batch > 0 &&
            (a->seqlen_q > INT32_MAX / a->batch || a->seqlen_k > INT32_MAX / a->batch))
            return usage("--varlen takes at most 2^31 - 1 tokens");
        a->cu_seqlens_q = cu_q, a->cu_seqlens_k = cu_k;
        if (sizes_nonnegative)
            a->total_q = (int64_t)a->batch * a->seqlen_q, a->total_k = (int64_t)a->batch * a->seqlen_k;
        a->q_batch_stride = a->o_batch_stride = a->k_batch_stride = a->v_batch_stride = 0;
    }
    return 0;
}

/* Grouped matmul's problem from --shape GxMxKxN, --b-layout and --bias: dense A [M, K] and
 * C [M, N], B [G, K, N] (kn) or [G, N, K] (nk), bias [G, N], on the pointers given (explain's
 * are never dereferenced). Returns 0 or a usage error. */
static int grouped_args_of(const options *o, void *c, const void *a, const void *b,
                           const void *bias, const int32_t *offsets, tile_grouped_matmul_args *g) {
    if (o->ndims != 4)
        return usage("grouped_matmul's --shape is GxMxKxN (groups, rows, K, N), e.g. "
                     "8x16384x4096x14336");
    if (o->dims[0] < 1 || o->dims[0] > 65536 || o->dims[1] < 0 || o->dims[1] > INT32_MAX ||
        o->dims[2] < 1 || o->dims[3] < 1)
        return usage("--shape needs G in [1, 65536], M in [0, 2^31 - 1] (int32 offsets), "
                     "K >= 1 and N >= 1");
    if (o->dims[2] > INT64_MAX / o->dims[3])
        return usage("--shape: K x N elements of a group's B past 64 bits");
    tile_grouped_matmul_init(g, sizeof *g);
    const int64_t k = o->dims[2], n = o->dims[3];
    g->dtype = (tile_dtype)o->dtype;
    g->groups = (int32_t)o->dims[0];
    g->total_m = o->dims[1];
    g->k = k, g->n = n;
    g->c = c, g->a = a, g->b = b, g->offsets = offsets;
    g->lda = k, g->ldc = n;
    g->b_group_stride = k * n;
    g->b_k_stride = o->b_nk ? 1 : n;
    g->b_n_stride = o->b_nk ? k : 1;
    if (o->bias) g->bias = bias, g->bias_group_stride = n;
    return 0;
}

static void print_decision(const tile_decision *d) {
    tile_variant_info v = {.struct_size = sizeof v};
    tile_variant_get(d->variant, &v);
    printf("  variant:  %s\n  params:   %s\n  rule:     %s\n  why:      %s\n  eligible: %d "
           "variants\n",
           v.name, v.params, tile_rule_string(d->rule), d->reason, d->eligible);
}

static int cmd_explain(int argc, char **argv) {
    const int op = argc < 3 ? -1 : parse_op(argv[2]);
    if (op < 0) return usage("explain takes an op (OP below)");
    options o;
    if (parse_options(argc, argv, 3, &o)) return EXIT_USAGE;
    if (o.dtype < 0 || !o.ndims) return usage("explain needs --dtype and --shape");
    tile_flash_attention_args a;
    tile_grouped_matmul_args g;
    /* attention's and grouped matmul's pointers, never read */
    static _Alignas(256) unsigned char stand_in[512];
    if (op == OP_ATTENTION) {
        if (attention_args_of(&o, stand_in, stand_in, stand_in, stand_in + 256,
                              (const int32_t *)(const void *)stand_in,
                              (const int32_t *)(const void *)stand_in, &a))
            return EXIT_USAGE;
        /* as bench calls: with a workspace of all the call can use unless --fixed-schedule
         * (dispatch weighs the walk, and decode calls that split their keys take variants of
         * one program a block) */
        if (!o.fixed_schedule) {
            size_t bytes = TILE_FLASH_ATTENTION_WORKSPACE_BYTES;
            if (tile_flash_attention_workspace_size(&a, &bytes) != TILE_STATUS_SUCCESS)
                bytes = TILE_FLASH_ATTENTION_WORKSPACE_BYTES; /* (explain reports what is wrong) */
            a.workspace = stand_in;
            a.workspace_bytes = bytes;
        }
    } else if (op == OP_GROUPED_MATMUL) {
        if (grouped_args_of(&o, stand_in + 256, stand_in, stand_in, stand_in,
                            (const int32_t *)(const void *)stand_in, &g))
            return EXIT_USAGE;
    } else if (o.ndims != 2) {
        return usage("--shape is ROWSxCOLS, e.g. 4096x4096");
    } else if (o.align < 1 || (o.align & (o.align - 1))) {
        return usage("--align is a power of two (bytes)");
    }
    tile_decision d = {.struct_size = sizeof d};
    /* Explaining for this GPU needs its context current through the call; none is opened
     * for a named arch (closing it then does nothing). */
    support_gpu gpu = {.drv = NULL};
    if (o.arch == 0 && open_gpu(&gpu)) {
        fprintf(stderr, "fusedops: give --arch sm_NN to explain for a GPU that is not here\n");
        return EXIT_NO_GPU;
    }
    tile_status s;
    if (op == OP_ATTENTION) {
        s = tile_flash_attention_explain(&a, o.arch, &d);
    } else if (op == OP_GROUPED_MATMUL) {
        s = tile_grouped_matmul_explain(&g, o.arch, &d);
    } else {
        s = explain_rowwise_op((cli_op)op, (tile_dtype)o.dtype, o.rows, o.cols, o.ld_y, o.ld_x,
                               o.align, o.arch, &d);
    }
    support_gpu_close(&gpu);
    if (s != TILE_STATUS_SUCCESS) {
        fprintf(stderr, "fusedops: %s: %s\n", tile_status_string(s), tile_last_error());
        return EXIT_CHECK_FAILED;
    }
    if (op == OP_ATTENTION)
        printf("attention %s batch %d, heads %d (kv %d), seqlen %lld (k %lld), head_dim %d%s, "
               "%s on sm_%d\n",
               tile_dtype_string(a.dtype), a.batch, a.heads_q, a.heads_kv, (long long)a.seqlen_q,
               (long long)a.seqlen_k, a.head_dim, a.causal ? ", causal" : "",
               o.varlen ? "varlen (packed)" : "BSHD", d.arch);
    else if (op == OP_GROUPED_MATMUL)
        printf("grouped_matmul %s groups %d, total_m %lld, k %lld, n %lld, B [g,%s]%s, dense, "
               "on sm_%d\n",
               tile_dtype_string(g.dtype), g.groups, (long long)g.total_m, (long long)g.k,
               (long long)g.n, o.b_nk ? "n,k" : "k,n", o.bias ? ", bias" : "", d.arch);
    else
        printf("%s %s %lldx%lld (ld_x %lld, ld_y %lld, %d-byte aligned) on sm_%d\n",
               op_info[op].name, tile_dtype_string((tile_dtype)o.dtype), (long long)o.rows,
               (long long)o.cols, (long long)o.ld_x, (long long)o.ld_y, o.align, d.arch);
    print_decision(&d);
    return 0;
}

/* Shapes a variant is checked on: ragged rows and columns around its capacity, strided rows,
 * and an offset pointer for variants that take element-aligned data. */
static int check_variant(const support_gpu *gpu, int32_t index, const tile_variant_info *v,
                         int quick, int *cases) {
    int64_t widths[8];
    int n = 0;
    int64_t cap = v->max_cols ? v->max_cols : (quick ? 70001 : (1 << 20) + 7);
    widths[n++] = cap;
    if (cap > 1) widths[n++] = cap - 1;
    widths[n++] = cap / 2 + 3 <= cap ? cap / 2 + 3 : cap;
    widths[n++] = 1;
    if (cap >= 17) widths[n++] = 17;
    if (!v->max_cols) widths[n++] = 781;
    const int64_t row_counts[] = {1, 3, 97};
    const int64_t elems_per_align = v->align_bytes / (int64_t)support_dtype_size(v->dtype);
    int failures = 0;
    for (int w = 0; w < n; w++)
        for (int r = 0; r < 3; r++) {
            int64_t rows = row_counts[r];
            if (widths[w] > 70000 && rows > 3) continue; /* keep the CPU reference quick */
            /* Row strides: the next multiple of the variant's alignment, plus extra padding
             * on the 3-row case so strided rows are covered. */
            int64_t round_up = (elems_per_align - widths[w] % elems_per_align) % elems_per_align;
            for (int log = 0; log < 2; log++) {
                if (log && r == 2 && quick) continue;
                support_softmax_case c = {
                    .variant = index, .dtype = v->dtype, .log_softmax = log, .rows = rows,
                    .cols = widths[w],
                    .pad_x = round_up + (r == 1 ? 3 * elems_per_align : 0),
                    .pad_y = round_up + (r == 1 ? elems_per_align : 0),
                    .offset = elems_per_align == 1 ? 1 : 0,
                    .seed = 1000u * (uint64_t)index + 10u * (uint64_t)w + (uint64_t)r};
                tile_status s;
                double err = 0;
                int64_t bad = support_softmax_run(gpu, &c, &s, &err);
                (*cases)++;
                if (bad) {
                    failures++;
                    fprintf(stderr, "FAIL %s %s %lldx%lld: %s: %s\n", v->name,
                            log ? "log_softmax" : "softmax", (long long)rows, (long long)c.cols,
                            tile_status_string(s), bad < 0 ? tile_last_error() : "mismatches above");
                }
            }
        }
    return failures;
}

/* A norm variant: each norm kind (none, LayerNorm, RMSNorm) with every operand, dropout on,
 * over ragged rows and columns up to its capacity and strided rows. A lean variant (LEAN=1):
 * LayerNorm and RMSNorm of x alone, on rows of exactly its width. */
static int check_norm_variant(const support_gpu *gpu, int32_t index, const tile_variant_info *v,
                              int quick, int *cases) {
    const int lean = support_is_lean(v), pointwise = support_is_pointwise(v);
    const int64_t cap = v->max_cols ? v->max_cols : (quick ? 20001 : 70001);
    const int64_t widths[] = {1, 17, cap / 2 + 3 <= cap ? cap / 2 + 3 : cap, cap};
    const int64_t row_counts[] = {1, 3, 97};
    const int64_t epa = v->align_bytes / (int64_t)support_dtype_size(v->dtype);
    int failures = 0;
    for (int w = 0; w < 4; w++)
        for (int r = 0; r < 3; r++)
            for (int k = 0; k < TILE_NORM_COUNT_; k++) {
                if (quick && r == 2 && k != (pointwise ? TILE_NORM_NONE : TILE_NORM_LAYER))
                    continue;
                if (pointwise && k != TILE_NORM_NONE) continue; /* no row statistics */
                if (widths[w] > 30000 && row_counts[r] > 3) continue; /* CPU reference time */
                if (lean && (widths[w] != cap || k == TILE_NORM_NONE)) continue;
                const int64_t round_up = (epa - widths[w] % epa) % epa;
                support_norm_case c = {
                    .variant = index, .dtype = v->dtype, .norm = (tile_norm_kind)k,
                    .rows = row_counts[r], .cols = widths[w],
                    .pad = round_up + (r == 1 ? 2 * epa : 0), .offset = epa == 1 ? 1 : 0,
                    .p = k == TILE_NORM_RMS || !strstr(v->params, "DROPOUT=1") ? 0.0f : 0.1f,
                    .seed = 1000u * (uint64_t)index + 10u * (uint64_t)w + (uint64_t)r,
                    .plain = lean};
                tile_status s;
                double err = 0;
                int64_t bad = support_norm_run(gpu, &c, &s, &err);
                (*cases)++;
                if (bad) {
                    failures++;
                    fprintf(stderr, "FAIL %s norm kind %d %lldx%lld: %s: %s\n", v->name, k,
                            (long long)c.rows, (long long)c.cols, tile_status_string(s),
                            bad < 0 ? tile_last_error() : "mismatches above");
                }
            }
    return failures;
}

/* An attention variant: its full head width and narrower heads (zero-padded in shared
 * memory), ragged query and key lengths (more queries than keys leaves causal rows that see
 * no key), causal or not, GQA and MQA, BSHD and BHSD, fixed lengths and varlen, with lse. */
static int check_attention_variant(const support_gpu *gpu, int32_t index,
                                   const tile_variant_info *v, int quick, int *cases) {
    const int32_t cap = (int32_t)v->max_cols;
    const int32_t dims[] = {cap, cap - 8, cap == 32 ? 8 : cap / 2 + 8};
    static const int64_t lengths[][2] = {{1, 1}, {17, 97}, {97, 17}, {130, 257}};
    const int nlengths = quick ? 3 : 4;
    int failures = 0;
    for (int w = 0; w < 3; w++)
        for (int l = 0; l < nlengths; l++)
            for (int causal = 0; causal < 2; causal++) {
                const int varlen = l % 2 == 1;
                support_attention_case c = {
                    .variant = index, .dtype = v->dtype, .batch = varlen ? 3 : 2,
                    .heads_q = causal ? 3 : 4, .heads_kv = causal ? 1 : 2, .head_dim = dims[w],
                    .seqlen_q = lengths[l][0], .seqlen_k = lengths[l][1], .causal = causal,
                    .varlen = varlen, .bhsd = (l + causal) % 2, .lse = 1,
                    .seed = 1000u * (uint64_t)index + 10u * (uint64_t)w + (uint64_t)l};
                tile_status s;
                double err = 0;
                int64_t bad = support_attention_run(gpu, &c, &s, &err);
                (*cases)++;
                if (bad) {
                    failures++;
                    fprintf(stderr, "FAIL %s attention %dx%dx%lldx%d kv %lld%s%s: %s: %s\n",
                            v->name, c.batch, c.heads_q, (long long)c.seqlen_q, c.head_dim,
                            (long long)c.seqlen_k, causal ? " causal" : "",
                            varlen ? " varlen" : "", tile_status_string(s),
                            bad < 0 ? tile_last_error() : "mismatches above");
                }
            }
    return failures;
}

/* A grouped_matmul variant: one group, skewed groups (some empty) with ragged K and N, rows
 * past the last group that must stay untouched, K = N = 8, total_m = 0 and (not --quick) 64
 * skewed groups; B in both layouts, with and without bias (--quick: [g,k,n] without bias and
 * [g,n,k] with). */
static int check_grouped_matmul_variant(const support_gpu *gpu, int32_t index,
                                        const tile_variant_info *v, int quick, int *cases) {
    static const struct {
        int32_t groups;
        int64_t total_m, k, n, tail;
        double alpha; /* Dirichlet concentration of the group sizes: 0.3 leaves groups empty */
        int64_t pad;
    } shapes[] = {{1, 128, 64, 96, 0, 1.0, 0},   {8, 300, 200, 136, 0, 0.3, 8},
                  {16, 500, 128, 256, 50, 1.0, 0}, {4, 64, 8, 8, 0, 1.0, 0},
                  {3, 0, 64, 64, 0, 1.0, 0},     {64, 2000, 256, 320, 0, 0.3, 0}};
    const int nshapes = (int)(sizeof shapes / sizeof *shapes) - (quick ? 1 : 0);
    int failures = 0;
    for (int i = 0; i < nshapes; i++)
        for (int layout = 0; layout < 4; layout++) {
            const int b_nk = layout / 2, bias = layout % 2;
            if (quick && b_nk != bias) continue;
            const support_grouped_matmul_case c = {
                .variant = index, .dtype = v->dtype, .groups = shapes[i].groups,
                .total_m = shapes[i].total_m, .k = shapes[i].k, .n = shapes[i].n,
                .tail = shapes[i].tail, .alpha = shapes[i].alpha, .b_nk = b_nk, .bias = bias,
                .pad = shapes[i].pad,
                .seed = 1000u * (uint64_t)index + 10u * (uint64_t)i + (uint64_t)layout};
            tile_status s;
            const int64_t bad = support_grouped_matmul_run(gpu, &c, &s, NULL);
            (*cases)++;
            if (bad) {
                failures++;
                fprintf(stderr, "FAIL %s grouped_matmul %dx%lldx%lldx%lld B [g,%s]%s: %s: %s\n",
                        v->name, c.groups, (long long)c.total_m, (long long)c.k,
                        (long long)c.n, b_nk ? "n,k" : "k,n", bias ? " bias" : "",
                        tile_status_string(s), bad < 0 ? tile_last_error() : "mismatches above");
            }
        }
    return failures;
}

/* Whether registry variant i is one `check` was asked for (--variant, --dtype). */
static int check_selects(const options *o, int32_t i, tile_variant_info *v) {
    *v = (tile_variant_info){.struct_size = sizeof *v};
    tile_variant_get(i, v);
    return !(o->variant && strcmp(o->variant, v->name)) &&
           !(o->dtype >= 0 && (int)v->dtype != o->dtype);
}

static int cmd_check(int argc, char **argv) {
    options o;
    if (parse_options(argc, argv, 2, &o)) return EXIT_USAGE;
    /* a selection of no variant would check nothing and pass: a usage error, before the GPU */
    int selected = 0;
    for (int32_t i = 0; i < tile_variant_count() && !selected; i++) {
        tile_variant_info v;
        selected = check_selects(&o, i, &v);
    }
    if (!selected) return usage("check: no variant has that --variant name and --dtype");
    support_gpu gpu;
    if (open_gpu(&gpu)) return EXIT_NO_GPU;
    printf("checking on %s (sm_%d)\n", gpu.name, gpu.arch);
    int variants = 0, failed = 0, cases = 0, skipped = 0;
    for (int32_t i = 0; i < tile_variant_count(); i++) {
        tile_variant_info v;
        if (!check_selects(&o, i, &v)) continue;
        if (!support_variant_runs_here(&gpu, &v)) {
            skipped++;
            continue;
        }
        int f = !strcmp(v.op, "norm")        ? check_norm_variant(&gpu, i, &v, o.quick, &cases)
                : !strcmp(v.op, "attention") ? check_attention_variant(&gpu, i, &v, o.quick, &cases)
                : !strcmp(v.op, "grouped_matmul")
                    ? check_grouped_matmul_variant(&gpu, i, &v, o.quick, &cases)
                    : check_variant(&gpu, i, &v, o.quick, &cases);
        variants++;
        if (f) failed++;
        printf("%-40s %s\n", v.name, f ? "FAIL" : "ok");
    }
    printf("%d variants checked (%d cases), %d failed, %d not for this GPU\n", variants, cases,
           failed, skipped);
    support_gpu_close(&gpu);
    return failed ? EXIT_CHECK_FAILED : 0;
}

/* A device buffer of n random values uniform in [lo, hi) as dtype storage, filled in chunks: B
 * of a large grouped matmul holds billions of elements, too many for a host float copy. */
static CUdeviceptr upload_random(const support_gpu *gpu, tile_dtype dtype, size_t n,
                                 uint64_t seed, float lo, float hi) {
    enum { CHUNK = 1 << 24 };
    const size_t elem = support_dtype_size(dtype), chunk = n < CHUNK ? n : CHUNK;
    CUdeviceptr p;
    SUPPORT_CHECK(gpu, gpu->drv->cuMemAlloc(&p, n * elem));
    void *host = support_xmalloc(chunk * elem);
    for (size_t at = 0; at < n; at += chunk) {
        const size_t m = n - at < chunk ? n - at : chunk;
        /* the seed offset continues one stream over all n (as support_random_stored's chunks) */
        support_random_stored(dtype, host, m, seed + 0x9e3779b97f4a7c15ull * at, lo, hi);
        SUPPORT_CHECK(gpu, gpu->drv->cuMemcpyHtoD(p + at * elem, host, m * elem));
    }
    free(host);
    return p;
}

/* Random dtype values uniform in [-8, 8) that timing inputs are cut from (tune makes one per
 * dtype for its whole grid instead of drawing every shape's inputs afresh). */
typedef struct random_pool {
    CUdeviceptr base;
    size_t bytes;
    tile_dtype dtype;
} random_pool;

/* Inputs for timing: random x rotated over enough copies (256 MiB in all, at most 64) that a
 * launch reads data the previous ones did not leave in L2; the residual of launch k is copy
 * k + 1. The copies lie 256-byte aligned in one random buffer: a shared pool's when it is
 * large enough, else the buffers' own. Outputs y and s rotate over as many copies (one where
 * a tensor is over 64 MiB, which L2 cannot keep anyway), so that a launch's writes do not
 * land on lines the previous launch left in L2 either (one y buffer made tensors that fit L2
 * look up to 30% faster than a caller's fresh outputs: an f32 4096 x 1024 softmax 11.0 us
 * against 14.5; perf-notes K7). Random weight and bias vectors.
 * The compute-bound ops bring their calls instead (each on its own buffers): `copies` of
 * them, launch k running call k % copies (copies 0 or 1: always the first). */
typedef struct bench_buffers {
    CUdeviceptr x[64], y, s, weight, bias; /* y and s: `copies` outputs, stride apart */
    CUdeviceptr own_pool; /* 0 when x lies in a shared pool */
    int copies, out_copies;
    size_t stride; /* bytes between consecutive copies */
    size_t bytes; /* one rows x cols tensor */
    size_t shift; /* bytes added to every pointer of a row op's call (x, residual, y, s, weight,
                   * bias): 0, or one element, to time calls on rows aligned to no more */
    const tile_flash_attention_args *attention; /* OP_ATTENTION's calls */
    const tile_grouped_matmul_args *grouped;    /* OP_GROUPED_MATMUL's calls */
} bench_buffers;

/* The pool bytes that buffers_alloc needs for a tensor of `bytes` bytes: its copies and their
 * 256-byte-aligned stride. */
static size_t pool_bytes_for(size_t bytes, int *copies, size_t *stride) {
    int c = (int)((256u * 1024 * 1024 + bytes - 1) / bytes);
    if (c > 64) c = 64;
    if (c < 2) c = 2; /* x and a different residual */
    *copies = c;
    *stride = (bytes + 255) / 256 * 256;
    return (size_t)c * *stride;
}

/* A pool for every tensor of B <= 2^26 elements (most of tune's grid; a larger tensor gets
 * its own, buffers_alloc): the copies of pool_bytes_for are ceil(256 MiB / B) (at least 2)
 * strides of B rounded up to 256 bytes, so under 256 MiB + B + 64 x 256 bytes. */
static random_pool random_pool_make(const support_gpu *gpu, tile_dtype dtype) {
    const size_t elem = support_dtype_size(dtype);
    random_pool p = {0, ((size_t)256 << 20) + ((size_t)1 << 26) * elem + 64 * 256, dtype};
    p.base = upload_random(gpu, dtype, p.bytes / elem, 7, -8.0f, 8.0f);
    return p;
}

static void buffers_alloc(const support_gpu *gpu, tile_dtype dtype, int64_t rows, int64_t cols,
                          const random_pool *pool, bench_buffers *b) {
    const size_t n = (size_t)(rows * cols), elem = support_dtype_size(dtype);
    b->bytes = n * elem;
    size_t stride;
    const size_t need = pool_bytes_for(b->bytes, &b->copies, &stride);
    CUdeviceptr base;
    b->own_pool = 0;
    if (pool && pool->dtype == dtype && pool->bytes >= need) base = pool->base;
    else base = b->own_pool = upload_random(gpu, dtype, need / elem + 16, 7, -8.0f, 8.0f);
    for (int i = 0; i < b->copies; i++) b->x[i] = base + (size_t)i * stride;
    b->stride = stride;
    b->out_copies = b->bytes > ((size_t)64 << 20) ? 1 : b->copies;
    /* (16 elements of slack everywhere: room for `shift`; the shared pool has its own) */
    b->shift = 0;
    b->weight = upload_random(gpu, dtype, (size_t)cols + 16, 3, 0.5f, 1.5f);
    b->bias = upload_random(gpu, dtype, (size_t)cols + 16, 5, -1.0f, 1.0f);
    const size_t out_bytes = (size_t)b->out_copies * stride + 16 * elem;
    SUPPORT_CHECK(gpu, gpu->drv->cuMemAlloc(&b->y, out_bytes));
    SUPPORT_CHECK(gpu, gpu->drv->cuMemAlloc(&b->s, out_bytes));
}

static void buffers_free(const support_gpu *gpu, bench_buffers *b) {
    if (b->own_pool) SUPPORT_CHECK(gpu, gpu->drv->cuMemFree(b->own_pool));
    const CUdeviceptr rest[] = {b->y, b->s, b->weight, b->bias};
    for (size_t i = 0; i < sizeof rest / sizeof *rest; i++)
        SUPPORT_CHECK(gpu, gpu->drv->cuMemFree(rest[i]));
}

static int compare_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int compare_float(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

#define DEVICE_PTR(p) ((void *)(uintptr_t)(p))

/* The operands of a norm op's call (NULL where the op takes none). */
typedef struct norm_operands {
    const void *x, *residual, *weight, *bias;
    void *y, *s;
} norm_operands;

/* The call `op` makes as a transformer block would (LayerNorm with weight and bias, RMSNorm
 * with weight, dropout p = 0.1 with a bias and no mask), as the args of tile_add_norm_variant
 * and tile_add_norm_explain: what each public function passes the kernels for that call.
 * `offset`: dropout's Philox offset (a fresh draw per launch). */
static tile_add_norm_args norm_call_args(cli_op op, tile_dtype dtype, int64_t rows, int64_t cols,
                                         int64_t ld_y, int64_t ld_x, const norm_operands *o,
                                         uint64_t offset) {
    tile_add_norm_args a = {.struct_size = sizeof a, .dtype = dtype, .rows = rows, .cols = cols,
                            .x = o->x, .ld_x = ld_x, .ld_y = ld_y, .ld_s = ld_y,
                            .ld_residual = ld_x, .eps = 1e-5f, .seed = 1234, .offset = offset};
    switch (op) {
    case OP_LAYERNORM:
        a.norm = TILE_NORM_LAYER, a.y = o->y, a.weight = o->weight, a.norm_bias = o->bias;
        break;
    case OP_RMSNORM:
        a.norm = TILE_NORM_RMS, a.y = o->y, a.weight = o->weight;
        break;
    case OP_RESIDUAL_DROPOUT: /* its y is the kernels' s */
        a.norm = TILE_NORM_NONE, a.s = o->y, a.residual = o->residual, a.bias = o->bias;
        a.p = 0.1f;
        break;
    default: /* OP_RESIDUAL_DROPOUT_NORM */
        a.norm = TILE_NORM_LAYER, a.y = o->y, a.s = o->s, a.residual = o->residual;
        a.bias = o->bias, a.weight = o->weight, a.norm_bias = o->bias, a.p = 0.1f;
        break;
    }
    return a;
}

/* One launch of `op` on launch number k's buffers: the public function (variant -1) or exactly
 * variant `variant`, with norm_call_args' operands. */
static tile_status launch_op(cli_op op, int32_t variant, tile_dtype dtype, const bench_buffers *b,
                             int k, int64_t rows, int64_t cols) {
    /* the compute-bound ops first: their copies may be 0 (bench), no x to index */
    const int call = b->copies > 1 ? k % b->copies : 0;
    if (op == OP_ATTENTION)
        return variant >= 0 ? tile_flash_attention_variant(variant, b->attention + call, NULL)
                            : tile_flash_attention(b->attention + call, NULL);
    if (op == OP_GROUPED_MATMUL)
        return variant >= 0 ? tile_grouped_matmul_variant(variant, b->grouped + call, NULL)
                            : tile_grouped_matmul(b->grouped + call, NULL);
    const void *x = DEVICE_PTR(b->x[k % b->copies] + b->shift);
    const size_t out = (size_t)(k % b->out_copies) * b->stride + b->shift;
    void *y = DEVICE_PTR(b->y + out);
    if (op == OP_SOFTMAX || op == OP_LOG_SOFTMAX) {
        const int log = op == OP_LOG_SOFTMAX;
        if (variant >= 0)
            return tile_softmax_variant(variant, log, dtype, y, x, rows, cols, cols, cols, NULL);
        return (log ? tile_log_softmax : tile_softmax)(dtype, y, x, rows, cols, cols, cols, NULL);
    }
    const norm_operands o = {.x = x, .residual = DEVICE_PTR(b->x[(k + 1) % b->copies] + b->shift),
                             .weight = DEVICE_PTR(b->weight + b->shift),
                             .bias = DEVICE_PTR(b->bias + b->shift), .y = y,
                             .s = DEVICE_PTR(b->s + out)};
    tile_add_norm_args a = norm_call_args(op, dtype, rows, cols, cols, cols, &o, (uint64_t)k);
    if (variant >= 0) return tile_add_norm_variant(variant, &a, NULL);
    switch (op) {
    case OP_LAYERNORM:
        return tile_layernorm(dtype, a.y, a.x, a.weight, a.norm_bias, NULL, NULL, rows, cols,
                              cols, cols, a.eps, NULL);
    case OP_RMSNORM:
        return tile_rmsnorm(dtype, a.y, a.x, a.weight, NULL, rows, cols, cols, cols, a.eps, NULL);
    case OP_RESIDUAL_DROPOUT:
        return tile_residual_dropout(dtype, a.s, a.x, a.residual, a.bias, NULL, rows, cols, cols,
                                     cols, cols, a.p, a.seed, a.offset, NULL);
    default: /* OP_RESIDUAL_DROPOUT_NORM */
        return tile_residual_dropout_norm(&a, NULL);
    }
}

/* The variant the public function of row-wise `op` would launch on a call of this shape whose
 * pointers and strides are aligned to `align` bytes (a power of two): for the norm ops, the
 * op's own call as norm_call_args makes it (dropout and operands move the choice), on
 * stand-in pointers the library never dereferences. */
static tile_status explain_rowwise_op(cli_op op, tile_dtype dtype, int64_t rows, int64_t cols,
                                      int64_t ld_y, int64_t ld_x, int32_t align, int32_t arch,
                                      tile_decision *d) {
    if (strcmp(op_info[op].family, "norm"))
        return tile_softmax_explain(dtype, rows, cols, ld_y, ld_x, align, arch, d);
    const uintptr_t a = align >= 256 ? 256 : (uintptr_t)align;
#define STAND_IN(i) ((void *)(uintptr_t)(0x100000u * (i) + a))
    const norm_operands operands = {.x = STAND_IN(1), .residual = STAND_IN(2),
                                    .weight = STAND_IN(3), .bias = STAND_IN(4),
                                    .y = STAND_IN(5), .s = STAND_IN(6)};
#undef STAND_IN
    const tile_add_norm_args n = norm_call_args(op, dtype, rows, cols, ld_y, ld_x, &operands, 0);
    return tile_add_norm_explain(&n, arch, d);
}

/* `bench attention`, `bench grouped_matmul` and `tune` of those ops time the GPU at a steady
 * state: batches of about 20 ms back to back, after about 0.5 s of untimed ones. Tensor-core
 * products bring a GPU to its power limit within a second, and its clock falls there. Batches
 * of 1 ms with a host synchronization between them leave it idle part of the time, below that
 * limit: they timed our attention 10-12% faster on an H100 than sustained launches do
 * (perf-notes M1). */
#define SUSTAINED_BATCH_MS 20.0
#define SUSTAINED_WARMUP_MS 500.0

/* Median over `repeats` batches of the time per launch, each batch `batch` back-to-back
 * launches between two events (launch gaps amortized), at most about `batch_ms` long. With
 * batch_ms above 1 (SUSTAINED_BATCH_MS), untimed batches run for about SUSTAINED_WARMUP_MS
 * first. variant -1: the dispatcher; -2: a device-to-device copy of one tensor's bytes (the
 * bandwidth ceiling). Returns 0 or the status. */
static tile_status time_op(const support_gpu *gpu, const bench_buffers *b, cli_op op,
                           int32_t variant, tile_dtype dtype, int64_t rows, int64_t cols,
                           int batch, int repeats, double batch_ms, double *median_ms) {
    const tile_driver *d = gpu->drv;
    CUevent start, stop;
    SUPPORT_CHECK(gpu, d->cuEventCreate(&start, CU_EVENT_DEFAULT));
    SUPPORT_CHECK(gpu, d->cuEventCreate(&stop, CU_EVENT_DEFAULT));
    float times[64];
    if (repeats > 64) repeats = 64;
    tile_status s = TILE_STATUS_SUCCESS;
    int launch = 0;
    /* A probe first: one launch to warm up (module load), then one timed; the batch shrinks
     * to about batch_ms at the probe's rate. The callers' batch assumes a variant near the
     * ceiling; a slow one (a wide tile on narrow rows) would otherwise run for seconds. A
     * steady-state batch (batch_ms above 1) is set to about batch_ms either way. */
    const int sustained = batch_ms > 1.0;
    for (int probe = 0; probe < 2 && (batch > 1 || sustained) && variant != -2 && s == TILE_STATUS_SUCCESS;
         probe++, launch++) {
        SUPPORT_CHECK(gpu, d->cuEventRecord(start, NULL));
        s = launch_op(op, variant, dtype, b, launch, rows, cols);
        SUPPORT_CHECK(gpu, d->cuEventRecord(stop, NULL));
        SUPPORT_CHECK(gpu, d->cuEventSynchronize(stop));
        float ms;
        SUPPORT_CHECK(gpu, d->cuEventElapsedTime(&ms, start, stop));
        if (probe == 1 && ms > 0 && (sustained || batch > batch_ms / ms))
            batch = batch_ms / ms < 1 ? 1 : (int)(batch_ms / ms);
    }
    const int warmups = sustained ? (int)(SUSTAINED_WARMUP_MS / batch_ms) + 1 : 1;
    for (int r = -warmups; r < repeats && s == TILE_STATUS_SUCCESS; r++) { /* r < 0: warm-up */
        SUPPORT_CHECK(gpu, d->cuEventRecord(start, NULL));
        for (int k = 0; k < batch && s == TILE_STATUS_SUCCESS; k++, launch++) {
            if (variant == -2)
                SUPPORT_CHECK(gpu, d->cuMemcpyDtoD(
                                       b->y + (size_t)(launch % b->out_copies) * b->stride,
                                       b->x[launch % b->copies], b->bytes));
            else s = launch_op(op, variant, dtype, b, launch, rows, cols);
        }
        SUPPORT_CHECK(gpu, d->cuEventRecord(stop, NULL));
        SUPPORT_CHECK(gpu, d->cuEventSynchronize(stop));
        float ms;
        SUPPORT_CHECK(gpu, d->cuEventElapsedTime(&ms, start, stop));
        if (r >= 0) times[r] = ms / (float)batch;
    }
    SUPPORT_CHECK(gpu, d->cuEventDestroy(start));
    SUPPORT_CHECK(gpu, d->cuEventDestroy(stop));
    if (s != TILE_STATUS_SUCCESS) return s;
    qsort(times, (size_t)repeats, sizeof *times, compare_float);
    *median_ms = times[repeats / 2];
    return TILE_STATUS_SUCCESS;
}

/* A batch long enough (about 1 ms) that event resolution and launch gaps do not matter. */
static int batch_for(size_t bytes) {
    double est_ms = 2.0 * (double)bytes / 2.5e9 + 0.004;
    int n = (int)(1.0 / est_ms);
    return n < 1 ? 1 : n > 200 ? 200 : n;
}

/* The batch of a compute-bound op: about 1 ms at 200 TFLOP/s plus 4 us per launch (`flops`
 * per launch), 1 to 200 launches. */
static int batch_for_flops(double flops) {
    const double est_ms = flops / 200e12 * 1e3 + 0.004;
    return est_ms >= 1.0 ? 1 : est_ms < 0.005 ? 200 : (int)(1.0 / est_ms);
}

/* The compute-bound ops (attention, grouped matmul; b holds the call's args): the median time
 * per launch at a steady state (batches of about SUSTAINED_BATCH_MS after SUSTAINED_WARMUP_MS
 * of untimed ones; inputs not rotated), and the name of the variant that ran: --variant's, or
 * the one dispatch picks. A failing call prints its status and gives EXIT_CHECK_FAILED, else 0. */
static int time_compute_op(const support_gpu *gpu, const bench_buffers *b, cli_op op,
                           const options *o, double flops, double *ms, const char **name) {
    const int batch = batch_for_flops(flops); /* the probe resizes it to SUSTAINED_BATCH_MS */
    const int32_t variant = o->variant ? tile_variant_find(o->variant) : -1;
    const tile_status s = time_op(gpu, b, op, variant, (tile_dtype)o->dtype, 0, 0, batch,
                                  o->iters < 64 ? o->iters : 64, SUSTAINED_BATCH_MS, ms);
    if (s != TILE_STATUS_SUCCESS) {
        fprintf(stderr, "fusedops: %s: %s\n", tile_status_string(s), tile_last_error());
        return EXIT_CHECK_FAILED;
    }
    *name = o->variant ? o->variant : "?";
    tile_decision dec = {.struct_size = sizeof dec};
    tile_variant_info info = {.struct_size = sizeof info};
    if (!o->variant &&
        (op == OP_ATTENTION ? tile_flash_attention_explain(b->attention, 0, &dec)
                            : tile_grouped_matmul_explain(b->grouped, 0, &dec)) ==
            TILE_STATUS_SUCCESS &&
        tile_variant_get(dec.variant, &info) == TILE_STATUS_SUCCESS)
        *name = info.name; /* the registry's string: static */
    return 0;
}

/* The sequence lengths of bench attention --ragged: B draws uniform in [1, S] (splitmix64 from
 * a fixed seed, so a shape always gets the same batch), queries and keys alike. */
static int64_t ragged_length(int64_t b, int64_t s) {
    uint64_t z = 0x9e3779b97f4a7c15ull * (uint64_t)(b + 1) + 7;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return 1 + (int64_t)(z % (uint64_t)s);
}

/* fusedops bench attention: TFLOP/s of one BSHD problem, q, k and v uniform in [-1, 1). It is
 * compute-bound, so the inputs are not rotated. FLOPs: 4 * b * h * s_q * s_k * d (QK^T and PV),
 * halved for causal (--ragged: the sum over the sequences of 4 * h * l^2 * d, halved). */
static int bench_attention(const options *o) {
    if (o->dtype < 0 || o->ndims != 4) return usage("bench attention needs --dtype and --shape BxHxSxD");
    for (int i = 0; i < 4; i++)
        if (o->dims[i] < 1 || o->dims[i] > (1 << 20))
            return usage("--shape needs B, H, S and D in [1, 2^20]");
    const int64_t hkv = o->heads_kv ? o->heads_kv : o->dims[1];
    const int64_t sk = o->seqlen_k ? o->seqlen_k : o->dims[2];
    if (o->varlen == 2 && o->seqlen_k) return usage("--ragged draws the key lengths too: no --seqlen-k");
    const double nq = (double)o->dims[0] * (double)o->dims[1] * (double)o->dims[2] * (double)o->dims[3];
    const double nk = (double)o->dims[0] * (double)hkv * (double)sk * (double)o->dims[3];
    if (hkv < 1 || sk < 1 || nq > (double)(1LL << 32) || nk > (double)(1LL << 32))
        return usage("bench attention takes at most 2^32 elements per tensor");
    if (o->varlen && (o->dims[0] * o->dims[2] > INT32_MAX || o->dims[0] * sk > INT32_MAX))
        return usage("--varlen takes at most 2^31 - 1 tokens");
    support_gpu gpu;
    if (open_gpu(&gpu)) return EXIT_NO_GPU;
    const tile_dtype dtype = (tile_dtype)o->dtype;
    CUdeviceptr out;
    const CUdeviceptr q = upload_random(&gpu, dtype, (size_t)nq, 11, -1.0f, 1.0f);
    const CUdeviceptr k = upload_random(&gpu, dtype, (size_t)nk, 12, -1.0f, 1.0f);
    const CUdeviceptr v = upload_random(&gpu, dtype, (size_t)nk, 13, -1.0f, 1.0f);
    SUPPORT_CHECK(&gpu, gpu.drv->cuMemAlloc(&out, (size_t)nq * support_dtype_size(dtype)));
    tile_flash_attention_args a;
    CUdeviceptr workspace = 0;
    /* --varlen: the sequences' ends, of equal lengths; --ragged: of drawn ones */
    CUdeviceptr cu[2] = {0, 0};
    int64_t longest = 0, tokens[2] = {0, 0};
    double pairs = 0; /* query-key pairs over the sequences (one head) */
    if (o->varlen)
        for (int i = 0; i < 2; i++) {
            const int64_t n = o->dims[0] + 1;
            int32_t *ends = support_xmalloc((size_t)n * sizeof *ends);
            ends[0] = 0;
            for (int64_t b = 0; b + 1 < n; b++) {
                const int64_t length = o->varlen == 2 ? ragged_length(b, o->dims[2]) : i ? sk : o->dims[2];
                ends[b + 1] = ends[b] + (int32_t)length;
                if (i == 0 && length > longest) longest = length;
                if (i == 0) pairs += (double)length * (double)(o->varlen == 2 ? length : sk);
            }
            SUPPORT_CHECK(&gpu, gpu.drv->cuMemAlloc(&cu[i], (size_t)n * sizeof *ends));
            SUPPORT_CHECK(&gpu, gpu.drv->cuMemcpyHtoD(cu[i], ends, (size_t)n * sizeof *ends));
            if (o->varlen == 2 && i == 0) printf("  ragged lengths: %lld tokens, the longest %lld\n",
                                                 (long long)ends[n - 1], (long long)longest);
            tokens[i] = ends[n - 1];
            free(ends);
        }
    int status = 0; /* past here every way out frees the buffers and closes the GPU */
    if (attention_args_of(o, DEVICE_PTR(q), DEVICE_PTR(k), DEVICE_PTR(v), DEVICE_PTR(out),
                          (const int32_t *)DEVICE_PTR(cu[0]), (const int32_t *)DEVICE_PTR(cu[1]), &a)) {
        status = EXIT_USAGE;
        goto release;
    }
    if (o->varlen == 2) { /* the drawn lengths (the tensors hold B x S tokens, at least these) */
        a.seqlen_q = a.seqlen_k = longest;
        a.total_q = tokens[0], a.total_k = tokens[1];
    }
    if (!o->fixed_schedule) { /* all the call can use (decode: its key splits too) */
        size_t bytes = TILE_FLASH_ATTENTION_WORKSPACE_BYTES;
        if (tile_flash_attention_workspace_size(&a, &bytes) != TILE_STATUS_SUCCESS)
            bytes = TILE_FLASH_ATTENTION_WORKSPACE_BYTES; /* (the call reports what is wrong) */
        workspace = support_zeroed_workspace(&gpu, bytes);
        a.workspace = DEVICE_PTR(workspace);
        a.workspace_bytes = bytes;
    }
    const double flops = o->varlen == 2
                             ? 4.0 * (double)o->dims[1] * (double)o->dims[3] * pairs * (o->causal ? 0.5 : 1.0)
                             : 4.0 * nq * (double)sk * (o->causal ? 0.5 : 1.0);
    bench_buffers b = {.attention = &a};
    double ms;
    const char *name;
    if (time_compute_op(&gpu, &b, OP_ATTENTION, o, flops, &ms, &name)) {
        status = EXIT_CHECK_FAILED;
        goto release;
    }
    printf("attention %s %lldx%lldx%lldx%lld (heads_kv %lld, seqlen_k %lld%s%s%s) on %s: %s\n"
           "  %.4f ms, %.1f TFLOP/s\n",
           tile_dtype_string(dtype), (long long)o->dims[0], (long long)o->dims[1],
           (long long)o->dims[2], (long long)o->dims[3], (long long)hkv, (long long)sk,
           o->causal ? ", causal" : "", o->varlen == 2 ? ", ragged varlen" : o->varlen ? ", varlen" : "",
           o->fixed_schedule ? ", fixed schedule" : "", gpu.name, name, ms,
           flops / (ms * 1e-3) / 1e12);
release:;
    const CUdeviceptr bufs[] = {q, k, v, out, workspace, cu[0], cu[1]};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++)
        if (bufs[i]) SUPPORT_CHECK(&gpu, gpu.drv->cuMemFree(bufs[i]));
    support_gpu_close(&gpu);
    return status;
}

static int compare_i64(const void *a, const void *b) {
    const int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The routing of bench grouped_matmul: group sizes from a symmetric Dirichlet (alpha 1:
 * uniform over the simplex, so some experts get several times the mean and some almost
 * nothing), always the same draw for a shape. */
static const double bench_gmm_alpha = 1.0;
static const uint64_t bench_gmm_seed = 7;

/* fusedops bench grouped_matmul: TFLOP/s of one dense problem, A, B and bias uniform in
 * [-1, 1), the rows split over the groups by a skewed draw. Compute-bound, so the inputs are not
 * rotated. FLOPs: 2 * M * N * K (the bias is not counted). */
static int bench_grouped_matmul(const options *o) {
    if (o->dtype < 0 || o->ndims != 4)
        return usage("bench grouped_matmul needs --dtype and --shape GxMxKxN");
    tile_grouped_matmul_args g;
    if (grouped_args_of(o, NULL, NULL, NULL, NULL, NULL, &g)) return EXIT_USAGE;
    const int64_t G = g.groups, M = g.total_m, K = g.k, N = g.n;
    const double most = (double)(1LL << 34);
    if (M < 1 || (double)M * K > most || (double)G * K * N > most || (double)M * N > most)
        return usage("bench grouped_matmul takes M >= 1 and at most 2^34 elements per tensor");
    support_gpu gpu;
    if (open_gpu(&gpu)) return EXIT_NO_GPU;
    const tile_driver *d = gpu.drv;
    const tile_dtype dtype = g.dtype;
    int32_t *ends = support_xmalloc((size_t)G * sizeof *ends);
    support_skewed_group_ends((int32_t)G, M, bench_gmm_alpha, bench_gmm_seed, ends);
    const CUdeviceptr a = upload_random(&gpu, dtype, (size_t)(M * K), 21, -1.0f, 1.0f);
    const CUdeviceptr b = upload_random(&gpu, dtype, (size_t)(G * K * N), 22, -1.0f, 1.0f);
    const CUdeviceptr bias = upload_random(&gpu, dtype, (size_t)(G * N), 23, -1.0f, 1.0f);
    CUdeviceptr c, offsets;
    SUPPORT_CHECK(&gpu, d->cuMemAlloc(&c, (size_t)(M * N) * support_dtype_size(dtype)));
    SUPPORT_CHECK(&gpu, d->cuMemAlloc(&offsets, (size_t)G * sizeof *ends));
    SUPPORT_CHECK(&gpu, d->cuMemcpyHtoD(offsets, ends, (size_t)G * sizeof *ends));
    const CUdeviceptr workspace =
        support_zeroed_workspace(&gpu, TILE_GROUPED_MATMUL_WORKSPACE_BYTES);
    g.c = DEVICE_PTR(c), g.a = DEVICE_PTR(a), g.b = DEVICE_PTR(b);
    g.offsets = DEVICE_PTR(offsets);
    if (!o->fixed_schedule) g.workspace = DEVICE_PTR(workspace);
    if (o->bias) g.bias = DEVICE_PTR(bias);
    const double flops = 2.0 * (double)M * (double)N * (double)K;
    bench_buffers bb = {.grouped = &g};
    double ms;
    const char *name;
    int status = 0; /* past here every way out frees the buffers and closes the GPU */
    if (time_compute_op(&gpu, &bb, OP_GROUPED_MATMUL, o, flops, &ms, &name)) {
        status = EXIT_CHECK_FAILED;
        goto release;
    }
    int64_t *sizes = support_xmalloc((size_t)G * sizeof *sizes);
    int32_t empty = 0;
    for (int64_t i = 0; i < G; i++) {
        sizes[i] = ends[i] - (i ? ends[i - 1] : 0);
        empty += sizes[i] == 0;
    }
    qsort(sizes, (size_t)G, sizeof *sizes, compare_i64);
    printf("grouped_matmul %s %lldx%lldx%lldx%lld (B [g,%s]%s%s) on %s: %s\n"
           "  group sizes skewed, from a Dirichlet(%.1f) draw (seed %llu): min %lld, median "
           "%lld, max %lld rows (mean %.1f), %d empty\n"
           "  %.4f ms, %.1f TFLOP/s (2 * M * N * K FLOPs)\n",
           tile_dtype_string(dtype), (long long)G, (long long)M, (long long)K, (long long)N,
           o->b_nk ? "n,k" : "k,n", o->bias ? ", bias" : "",
           o->fixed_schedule ? ", fixed schedule" : "", gpu.name, name,
           bench_gmm_alpha, (unsigned long long)bench_gmm_seed, (long long)sizes[0],
           (long long)sizes[G / 2], (long long)sizes[G - 1], (double)M / (double)G, empty, ms,
           flops / (ms * 1e-3) / 1e12);
    free(sizes);
release:;
    const CUdeviceptr bufs[] = {a, b, bias, c, offsets, workspace};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++) SUPPORT_CHECK(&gpu, d->cuMemFree(bufs[i]));
    free(ends);
    support_gpu_close(&gpu);
    return status;
}

static int cmd_bench(int argc, char **argv) {
    int op = argc < 3 ? -1 : parse_op(argv[2]);
    if (op < 0) return usage("bench takes an op (OP below)");
    options o;
    if (parse_options(argc, argv, 3, &o)) return EXIT_USAGE;
    if (op == OP_ATTENTION) return bench_attention(&o);
    if (op == OP_GROUPED_MATMUL) return bench_grouped_matmul(&o);
    if (o.ndims && o.ndims != 2) return usage("--shape is ROWSxCOLS, e.g. 4096x4096");
    if (o.log_softmax && op == OP_SOFTMAX) op = OP_LOG_SOFTMAX; /* --log, as before */
    if (o.dtype < 0 || !o.ndims) return usage("bench needs --dtype and --shape");
    if (o.rows < 1 || o.cols < 1 || o.rows > ((int64_t)1 << 40) / o.cols)
        return usage("--shape needs rows >= 1 and cols >= 1, at most 2^40 elements");
    if (o.ld_x != o.cols || o.ld_y != o.cols)
        return usage("bench times contiguous rows: --ld-x and --ld-y are not taken");
    int32_t variant = -1;
    if (o.variant && (variant = tile_variant_find(o.variant)) < 0)
        return usage("unknown --variant (see fusedops list)");
    support_gpu gpu;
    if (open_gpu(&gpu)) return EXIT_NO_GPU;
    const tile_dtype dtype = (tile_dtype)o.dtype;
    bench_buffers b;
    buffers_alloc(&gpu, dtype, o.rows, o.cols, NULL, &b);
    const int tensors = op_info[op].tensors_read + op_info[op].tensors_written;
    const int batch = batch_for(b.bytes * (size_t)tensors / 2), repeats = o.iters < 64 ? o.iters : 64;
    double ms, copy_ms;
    tile_status s = time_op(&gpu, &b, (cli_op)op, variant, dtype, o.rows, o.cols, batch, repeats, 1.0, &ms);
    if (s != TILE_STATUS_SUCCESS) {
        fprintf(stderr, "fusedops: %s: %s\n", tile_status_string(s), tile_last_error());
        buffers_free(&gpu, &b);
        support_gpu_close(&gpu);
        return EXIT_CHECK_FAILED;
    }
    time_op(&gpu, &b, (cli_op)op, -2, dtype, o.rows, o.cols, batch, repeats, 1.0, &copy_ms);
    const char *name = o.variant;
    tile_decision dec = {.struct_size = sizeof dec};
    tile_variant_info info = {.struct_size = sizeof info};
    if (!name &&
        explain_rowwise_op((cli_op)op, dtype, o.rows, o.cols, o.cols, o.cols, 256, 0, &dec) ==
            TILE_STATUS_SUCCESS &&
        tile_variant_get(dec.variant, &info) == TILE_STATUS_SUCCESS)
        name = info.name;
    /* Minimum traffic: each rows x cols input read once, each output written once. */
    const double gbs = (double)tensors * (double)b.bytes / (ms * 1e-3) / 1e9;
    const double copy_gbs = 2.0 * (double)b.bytes / (copy_ms * 1e-3) / 1e9;
    printf("%s %s %lldx%lld on %s: %s\n  %.4f ms, %.1f GB/s; device-to-device copy %.1f GB/s; "
           "%.1f%% of it\n",
           op_info[op].name, tile_dtype_string(dtype), (long long)o.rows, (long long)o.cols,
           gpu.name, name ? name : "?", ms, gbs, copy_gbs, 100.0 * gbs / copy_gbs);
    buffers_free(&gpu, &b);
    support_gpu_close(&gpu);
    return 0;
}

/* ---------------------------------------------------------------- fusedops tune */

/* What tune measured on one problem: every variant that ran and its median time per launch. */
enum { TUNE_MAX_VARIANTS = 512 };
typedef struct tune_times {
    int count;
    int32_t variant[TUNE_MAX_VARIANTS]; /* the general variant a table names */
    int32_t timed[TUNE_MAX_VARIANTS];   /* what ran: the variant, or its lean twin */
    int32_t align[TUNE_MAX_VARIANTS];   /* the variant's align_bytes */
    double ms[TUNE_MAX_VARIANTS];
} tune_times;

/* The fastest and the second fastest timed variant (-1: none) among those that need at most
 * `align` bytes of alignment (0: any). */
static void fastest_within(const tune_times *t, int32_t align, int32_t *best, int32_t *second) {
    *best = *second = -1;
    for (int i = 0; i < t->count; i++) {
        if (align && t->align[i] > align) continue;
        if (*best < 0 || t->ms[i] < t->ms[*best]) {
            *second = *best;
            *best = i;
        } else if (*second < 0 || t->ms[i] < t->ms[*second]) {
            *second = i;
        }
    }
}

/* The lean twin dispatch swaps in for general variant v (`info`) on a LayerNorm or RMSNorm of
 * x (no optional inputs) whose rows have exactly `cols` columns, the width v and its twin
 * share; else -1. */
static int32_t lean_twin_for(cli_op op, int32_t v, const tile_variant_info *info, int64_t cols) {
    if ((op != OP_LAYERNORM && op != OP_RMSNORM) || info->max_cols != cols) return -1;
    return support_lean_twin_of(v);
}

/* Times every variant of op's registry op and `dtype` that can run on this GPU (arch range,
 * shared memory) and take `cols` columns (max_cols; attention's is HEAD_DIM), and whose params
 * hold `params` where that is not NULL, on b's problem: the median of 5 batches of `batch`
 * launches, after warm-up (time_op's `batch_ms`: 1 ms batches for the row ops, the steady state
 * for the compute-bound ones). A variant whose call fails is skipped (a 128 KiB staged
 * variant where a block gets 99 KiB, a tensor map the driver refuses). A general variant whose
 * lean twin takes the problem (a LayerNorm of rows of exactly its width) is timed
 * through the twin, which is what dispatch runs for such calls. */
static void time_variants(const support_gpu *gpu, const bench_buffers *b, cli_op op,
                          tile_dtype dtype, int64_t rows, int64_t cols, int batch, double batch_ms,
                          const char *params, int32_t max_align, tune_times *t) {
    t->count = 0;
    for (int32_t v = 0; v < tile_variant_count() && t->count < TUNE_MAX_VARIANTS; v++) {
        tile_variant_info info = {.struct_size = sizeof info};
        tile_variant_get(v, &info);
        if (strcmp(info.op, op_info[op].family) || info.dtype != dtype) continue;
        if (params && !strstr(info.params, params)) continue;
        /* Tables name general variants; dispatch swaps in their lean twins (LEAN=1) itself. */
        if (support_is_lean(&info)) continue;
        if (max_align && info.align_bytes > max_align) continue;
        if (!support_variant_runs_here(gpu, &info)) continue;
        if (info.max_cols && cols > info.max_cols) continue;
        const int32_t twin = lean_twin_for(op, v, &info, cols);
        const int32_t run = twin >= 0 ? twin : v;
        double ms;
        if (time_op(gpu, b, op, run, dtype, rows, cols, batch, 5, batch_ms, &ms) != TILE_STATUS_SUCCESS)
            continue;
        t->variant[t->count] = v;
        t->timed[t->count] = run;
        t->align[t->count] = info.align_bytes;
        t->ms[t->count++] = ms;
    }
}

typedef struct tune_run {
    const support_gpu *gpu;
    FILE *out;
    int verify, tty;
    int within, total; /* --verify: problems within 5% of the fastest, problems measured */
    int within_search; /* --verify: the same against the search's own time of the fastest */
    FILE *times;       /* --times: every timed variant's median, a line each (or NULL) */
    const int64_t (*shapes)[2]; /* --shapes: instead of the grid, or of the held-out shapes */
    int nshapes;
} tune_run;

static const char *variant_name_or(int32_t v, const char *none) {
    tile_variant_info info = {.struct_size = sizeof info};
    return v >= 0 && tile_variant_get(v, &info) == TILE_STATUS_SUCCESS ? info.name : none;
}

/* One TSV line: the fastest of t's variants (entry `best`) and the runner-up (`second`). */
static void tune_line(const tune_run *r, cli_op op, tile_dtype dtype, int64_t rows,
                      int64_t cols, const tune_times *t, int32_t best, int32_t second) {
    fprintf(r->out, "sm_%d\t%s\t%s\t%lldx%lld\t%s\t%.2f\t%s\t%.2f\n", r->gpu->arch,
            op_info[op].table, tile_dtype_string(dtype), (long long)rows, (long long)cols,
            variant_name_or(t->variant[best], "-"), t->ms[best] * 1e3,
            second >= 0 ? variant_name_or(t->variant[second], "-") : "-",
            second >= 0 ? t->ms[second] * 1e3 : 0.0);
}

/* What --verify measured of one problem: the dispatched call's status, its median time and
 * (where known) variant, and the fastest variant's time taken beside it (same batches,
 * alternating with the dispatched call's). */
typedef struct verify_times {
    tile_status dispatched;
    double picked, fastest; /* ms */
    const char *picked_name;
    char why[512]; /* a failed dispatch's message (later calls clear tile_last_error) */
} verify_times;

/* One problem's result: the TSV lines of its bucket, rows x cols (dispatch's problem: a bucket
 * of its own on tune's grids), or with --verify the dispatched call against the fastest
 * variant; then progress on stderr: a bar redrawn in place on a terminal, else one line a
 * problem. The lines are the fastest variant of t, then for each narrower alignment the
 * winner needs and some variant does not, the fastest variant that takes it, from `narrow`
 * (those variants timed on rows of that alignment) or from t where NULL (dispatch takes a
 * bucket's first entry that the call's alignment allows). */
static void tune_report(tune_run *r, cli_op op, tile_dtype dtype, const char *shape,
                        int64_t rows, int64_t cols, const tune_times *t, const tune_times *narrow,
                        const verify_times *vt, int done, int count) {
    int32_t best, second;
    fastest_within(t, 0, &best, &second);
    const char *best_name = best >= 0 ? variant_name_or(t->variant[best], "-") : "-";
    for (int i = 0; r->times && i < t->count; i++)
        fprintf(r->times, "%s\t%s\t%s\t%s\t%.2f\n", op_info[op].name, tile_dtype_string(dtype),
                shape, variant_name_or(t->timed[i], "-"), t->ms[i] * 1e3);
    if (best < 0) {
        /* nothing ran: no line (a problem no variant of this GPU takes) */
    } else if (!r->verify) {
        tune_line(r, op, dtype, rows, cols, t, best, second);
        const tune_times *n = narrow ? narrow : t;
        for (int32_t align = t->align[best] / 2; align >= 1; align /= 2) {
            int32_t first, first_second;
            fastest_within(n, align, &first, &first_second);
            if (first < 0) break;
            tune_line(r, op, dtype, rows, cols, n, first, first_second);
            align = n->align[first]; /* the classes down to its own are covered */
        }
    } else {
        /* a hit: within 5% of the fastest variant, or that variant itself (then the two
         * sides' times differ by measurement alone: a 2-row LayerNorm read 248 against 232
         * us in one run, the same variant on both sides); dispatch names the lean twin
         * where the search ran the general variant through it */
        const int same = vt->picked_name && (!strcmp(vt->picked_name, best_name) ||
                                             !strcmp(vt->picked_name, variant_name_or(t->timed[best], "-")));
        const int ok = vt->dispatched == TILE_STATUS_SUCCESS && (same || vt->picked <= vt->fastest * 1.05);
        r->total++;
        r->within += ok;
        r->within_search += vt->dispatched == TILE_STATUS_SUCCESS && vt->picked <= t->ms[best] * 1.05;
        if (vt->dispatched != TILE_STATUS_SUCCESS)
            fprintf(r->out, "# verify %s %s %s: dispatch failed: %s: %s\n", op_info[op].name,
                    tile_dtype_string(dtype), shape, tile_status_string(vt->dispatched), vt->why);
        fprintf(r->out,
                "# verify %s %s %s: dispatched %s%s%.2f us, fastest %s %.2f us (%.2f us in the "
                "search)%s\n",
                op_info[op].name, tile_dtype_string(dtype), shape,
                vt->picked_name ? vt->picked_name : "", vt->picked_name ? " " : "",
                vt->picked * 1e3, best_name, vt->fastest * 1e3, t->ms[best] * 1e3,
                ok ? "" : "  (more than 5% slower)");
    }
    fflush(r->out);
    if (r->tty) {
        char bar[21];
        for (int i = 0; i < 20; i++) bar[i] = i < 20 * done / count ? '#' : '.';
        bar[20] = '\0';
        fprintf(stderr, "\r%s %-4s [%s] %3d/%d %-28s", op_info[op].name,
                tile_dtype_string(dtype), bar, done, count, shape);
    } else {
        fprintf(stderr, "tune: %s %s %s -> %s\n", op_info[op].name, tile_dtype_string(dtype),
                shape, best_name);
    }
}

/* --verify's measurement of one problem: the dispatcher (variant -1) and the search's fastest
 * variant, 3 rounds of 5 batches each, alternating; each side's median round. Timing the two
 * side by side, rather than setting the dispatcher against the least of the search's many
 * noisy medians, keeps the minimum's luck out of the comparison (the search's time is
 * reported beside it). */
static verify_times verify_dispatch(const support_gpu *gpu, const bench_buffers *b, cli_op op,
                                    tile_dtype dtype, int64_t rows, int64_t cols, int batch,
                                    double batch_ms, const tune_times *t) {
    verify_times vt = {TILE_STATUS_SUCCESS, 0, 0, NULL, ""};
    int32_t best, second;
    fastest_within(t, 0, &best, &second);
    if (best < 0) return vt;
    double picked[3], fastest[3];
    for (int round = 0; round < 3; round++) {
        vt.dispatched = time_op(gpu, b, op, -1, dtype, rows, cols, batch, 5, batch_ms, &picked[round]);
        if (vt.dispatched != TILE_STATUS_SUCCESS) {
            snprintf(vt.why, sizeof vt.why, "%s", tile_last_error());
            return vt;
        }
        if (time_op(gpu, b, op, t->timed[best], dtype, rows, cols, batch, 5, batch_ms, &fastest[round]))
            fastest[round] = t->ms[best];
    }
    qsort(picked, 3, sizeof *picked, compare_double);
    qsort(fastest, 3, sizeof *fastest, compare_double);
    vt.picked = picked[1];
    vt.fastest = fastest[1];
    return vt;
}

/* The column counts of the row ops' grid: 2^5 to 2^20 and, from 384 on (where one-pass tiles
 * and two-pass loops trade places), the buckets 3 * 2^k between them (tuning_parse.h). */
static int rowwise_grid_cols(int64_t *cols) {
    int n = 0;
    for (int k = 5; k <= 20; k++) {
        if (k >= 9) cols[n++] = (int64_t)3 << (k - 2); /* 3 * 2^(k-2), below 2^k: 384 first */
        cols[n++] = (int64_t)1 << k;
    }
    return n;
}

/* The part of a grid that one tune run covers (--min-rows, --max-rows, --min-cols, --max-cols:
 * a table re-measured in parts, or in pieces that fit a time limit). */
typedef struct tune_range {
    int64_t min_rows, max_rows, min_cols, max_cols;
} tune_range;

static int in_range(const tune_range *g, int64_t rows, int64_t cols) {
    return rows >= g->min_rows && rows <= g->max_rows && cols >= g->min_cols &&
           cols <= g->max_cols;
}

/* The calls a tuned table op is timed on, over the variants whose params hold `params` (NULL:
 * all): each on its most common use. norm: LayerNorm with weight and bias over the variants
 * without dropout, the fused dropout + LayerNorm over those with it; residual_dropout: the
 * norm-less call with dropout, whose lines dispatch looks up first for such calls. */
typedef struct tune_pass {
    cli_op op;
    const char *params;
} tune_pass;
static const tune_pass softmax_passes[] = {{OP_SOFTMAX, NULL}};
static const tune_pass norm_passes[] = {{OP_LAYERNORM, "DROPOUT=0"},
                                        {OP_RESIDUAL_DROPOUT_NORM, "DROPOUT=1"}};
static const tune_pass residual_dropout_passes[] = {{OP_RESIDUAL_DROPOUT, "DROPOUT=1"}};

/* softmax, norm and residual_dropout: dense rows x cols, x rotated (buffers_alloc) over copies
 * cut from one random pool per dtype. Tuned on the grid (rows tune_rows, cols
 * rowwise_grid_cols), verified on shapes between its points (held out); --shapes replaces
 * either list. */
static void tune_rowwise(tune_run *r, const tune_pass *passes, int npasses, int dtype_only,
                         const tune_range *range) {
    /* every power of two, so a shape's rows are at most a factor of sqrt(2) from a grid row
     * (how the programs fill the SMs moves the winners, at few rows as well) */
    static const int64_t tune_rows[] = {1,   2,    4,    8,    16,   32,    64,    128,
                                        256, 512,  1024, 2048, 4096, 8192, 16384, 32768};
    static const int64_t verify_shapes[][2] = {
        {3, 1000},    {100, 3000},  {777, 781},   {2000, 5000},  {5000, 12000}, {300, 50000},
        {1500, 700},  {20000, 200}, {8, 300000},  {64, 100000},  {10000, 2500}, {123, 33000},
        {40000, 100}, {2, 700000},  {700, 9000},  {3000, 1500},  {50, 20000},   {9000, 6000}};
    enum { MAX_SHAPES = 512 };
    int64_t shapes[MAX_SHAPES][2];
    int nshapes = 0;
    if (r->verify || r->nshapes) {
        const int64_t(*list)[2] = r->nshapes ? r->shapes : verify_shapes;
        const int count = r->nshapes ? r->nshapes : (int)(sizeof verify_shapes / sizeof *verify_shapes);
        for (int i = 0; i < count && nshapes < MAX_SHAPES; i++)
            if (in_range(range, list[i][0], list[i][1])) memcpy(shapes[nshapes++], list[i], sizeof *list);
    } else {
        int64_t cols[64];
        const int ncols = rowwise_grid_cols(cols);
        for (size_t i = 0; i < sizeof tune_rows / sizeof *tune_rows; i++)
            for (int j = 0; j < ncols && nshapes < MAX_SHAPES; j++) {
                /* at most 2^27 elements (32768 x 4096, 1024 x 131072): keeps it short */
                if (tune_rows[i] * cols[j] > ((int64_t)1 << 27) ||
                    !in_range(range, tune_rows[i], cols[j]))
                    continue;
                shapes[nshapes][0] = tune_rows[i];
                shapes[nshapes++][1] = cols[j];
            }
    }
    for (int dt = 0; dt < TILE_DTYPE_COUNT_ && nshapes; dt++) {
        if (dtype_only >= 0 && dt != dtype_only) continue;
        const tile_dtype dtype = (tile_dtype)dt;
        const random_pool pool = random_pool_make(r->gpu, dtype);
        for (int si = 0; si < nshapes; si++) {
            const int64_t rows = shapes[si][0], cols = shapes[si][1];
            char shape[48];
            snprintf(shape, sizeof shape, "%lldx%lld", (long long)rows, (long long)cols);
            bench_buffers b;
            buffers_alloc(r->gpu, dtype, rows, cols, &pool, &b);
            const int batch = batch_for(b.bytes);
            for (int pass = 0; pass < npasses; pass++) { /* over the same inputs */
                const cli_op pass_op = passes[pass].op;
                const char *params = passes[pass].params;
                tune_times t, narrow;
                time_variants(r->gpu, &b, pass_op, dtype, rows, cols, batch, 1.0, params, 0, &t);
                verify_times vt = {TILE_STATUS_SUCCESS, 0, 0, NULL, ""};
                if (!r->verify) {
                    /* The alignment lines serve calls whose rows are not 16-byte aligned:
                     * time their candidates on such rows (every pointer one element off),
                     * where a one-pass tile of scalar loads measured up to 2x slower than
                     * on aligned rows while a two-pass loop did not (docs/tuning.md). */
                    const int32_t elem = (int32_t)support_dtype_size(dtype);
                    b.shift = (size_t)elem;
                    time_variants(r->gpu, &b, pass_op, dtype, rows, cols, batch, 1.0, params, elem,
                                  &narrow);
                    b.shift = 0;
                } else {
                    vt = verify_dispatch(r->gpu, &b, pass_op, dtype, rows, cols, batch, 1.0, &t);
                    tile_decision d = {.struct_size = sizeof d};
                    if (explain_rowwise_op(pass_op, dtype, rows, cols, cols, cols, 256, 0, &d) ==
                        TILE_STATUS_SUCCESS)
                        vt.picked_name = variant_name_or(d.variant, NULL);
                }
                tune_report(r, pass_op, dtype, shape, rows, cols, &t, r->verify ? NULL : &narrow,
                            &vt, si + 1, nshapes);
            }
            buffers_free(r->gpu, &b);
        }
        SUPPORT_CHECK(r->gpu, r->gpu->drv->cuMemFree(pool.base));
    }
}

/* The grids of the compute-bound ops (docs/tuning.md). Dispatch's problem is attention's
 * batch * heads_q * seqlen_q query rows x head_dim and grouped matmul's total_m / groups rows
 * (the average group) x n: on the grids both are powers of two, so each problem is its own
 * bucket. The held-out problems of --verify lie between them. */
/* Attention: src/attention_tune_grid.h (dispatch scales a line's times from its shape). */
/* {batch, heads_q, heads_kv, seqlen, head_dim, causal} */
static const int64_t attention_held_out[][6] = {
    {2, 4, 1, 100, 64, 0},    {1, 12, 4, 300, 64, 0},    {8, 8, 8, 200, 64, 1},
    {3, 8, 8, 777, 128, 0},   {1, 24, 24, 1000, 96, 0},  {2, 20, 4, 1500, 128, 1},
    {16, 12, 12, 512, 64, 0}, {1, 40, 8, 3000, 128, 0},  {2, 28, 4, 4096, 128, 1},
    {1, 32, 8, 12000, 128, 0}};
/* Grouped matmul, k fixed (4096, a common expert width: the winners move with k, perf-notes
 * G11), B [g, k, n], no bias: {groups, total_m} x n. */
static const int64_t grouped_grid[][2] = {{64, 1024}, {32, 2048}, {16, 4096}, {8, 8192},
                                          {8, 16384}, {8, 32768}};
static const int64_t grouped_grid_n[] = {512, 1024, 2048, 4096, 8192, 16384};
static const int64_t grouped_grid_k = 4096;
/* {groups, total_m, k, n} */
static const int64_t grouped_held_out[][4] = {
    {64, 1000, 2048, 768},   {24, 900, 2048, 6144},   {128, 8192, 2048, 768},
    {32, 5000, 2048, 1408},  {8, 3000, 2048, 1536},   {16, 10000, 2048, 2816},
    {8, 12000, 4096, 2048},  {8, 20000, 2048, 5632},  {8, 16384, 4096, 14336},
    {4, 50000, 2048, 3584}};

/* One problem of a compute-bound op for tune, set up by support/'s helpers (dense), in copies
 * that launches rotate over. */
typedef struct compute_problem {
    int copies;
    int64_t rows, cols; /* dispatch's problem */
    double flops;       /* per launch, as bench counts them */
    char shape[64];
    support_attention_problem attention[64];
    support_grouped_matmul_problem grouped[64];
    tile_flash_attention_args attention_args[64];
    tile_grouped_matmul_args grouped_args[64];
} compute_problem;

/* Sets p up for op (s: attention {batch, heads_q, heads_kv, seqlen, head_dim, causal}, dense
 * BSHD; grouped matmul {groups, total_m, k, n}, B [g, k, n], no bias, the rows split over the
 * groups as bench grouped_matmul splits them) in min(64, ceil(256 MiB / bytes)) copies, at least
 * one, so that, as bench's x, the launches of a small problem do not find their inputs in L2;
 * b gets the calls. */
static void compute_setup(const support_gpu *gpu, cli_op op, tile_dtype dtype, const int64_t *s,
                          compute_problem *p, bench_buffers *b) {
    const double elem = (double)support_dtype_size(dtype);
    double bytes;
    int32_t *ends = NULL;
    if (op == OP_ATTENTION) {
        bytes = elem * (double)(s[0] * s[3] * s[4] * (2 * s[1] + 2 * s[2]));
        p->rows = s[0] * s[1] * s[3];
        p->cols = s[4];
        p->flops = 4.0 * (double)p->rows * (double)s[3] * (double)s[4] * (s[5] ? 0.5 : 1.0);
        snprintf(p->shape, sizeof p->shape, "%lldx%lldx%lldx%lld kv %lld%s", (long long)s[0],
                 (long long)s[1], (long long)s[3], (long long)s[4], (long long)s[2],
                 s[5] ? " causal" : "");
    } else {
        bytes = elem * (double)(s[1] * s[2] + s[0] * s[2] * s[3] + s[1] * s[3]);
        p->rows = s[1] / s[0] > 1 ? s[1] / s[0] : 1;
        p->cols = s[3];
        p->flops = 2.0 * (double)s[1] * (double)s[2] * (double)s[3];
        snprintf(p->shape, sizeof p->shape, "%lldx%lldx%lldx%lld", (long long)s[0],
                 (long long)s[1], (long long)s[2], (long long)s[3]);
        ends = support_xmalloc((size_t)s[0] * sizeof *ends);
        support_skewed_group_ends((int32_t)s[0], s[1], bench_gmm_alpha, bench_gmm_seed, ends);
    }
    const double rotation = 256.0 * 1024 * 1024;
    p->copies = bytes >= rotation ? 1 : (int)((rotation + bytes - 1) / bytes);
    if (p->copies > 64) p->copies = 64;
    for (int i = 0; i < p->copies; i++) {
        const uint64_t seed = 1000 + 10 * (uint64_t)i;
        if (op == OP_ATTENTION) {
            const support_attention_case c = {
                .variant = -1, .dtype = dtype, .batch = (int32_t)s[0], .heads_q = (int32_t)s[1],
                .heads_kv = (int32_t)s[2], .head_dim = (int32_t)s[4], .seqlen_q = s[3],
                .seqlen_k = s[3], .causal = (int)s[5], .dense = 1, .seed = seed};
            support_attention_setup(gpu, &c, &p->attention[i]);
            p->attention_args[i] = p->attention[i].args;
        } else {
            const support_grouped_matmul_case c = {
                .variant = -1, .dtype = dtype, .groups = (int32_t)s[0], .total_m = s[1],
                .k = s[2], .n = s[3], .ends = ends, .seed = seed};
            support_grouped_matmul_setup(gpu, &c, &p->grouped[i]);
            p->grouped_args[i] = p->grouped[i].args;
        }
    }
    free(ends);
    memset(b, 0, sizeof *b);
    b->copies = p->copies;
    b->attention = p->attention_args;
    b->grouped = p->grouped_args;
}

static void compute_free(const support_gpu *gpu, cli_op op, compute_problem *p) {
    for (int i = 0; i < p->copies; i++) {
        if (op == OP_ATTENTION) support_attention_free(gpu, &p->attention[i]);
        else support_grouped_matmul_free(gpu, &p->grouped[i]);
    }
}

static int has_variants(const char *family, int dtype) {
    for (int32_t v = 0; v < tile_variant_count(); v++) {
        tile_variant_info info = {.struct_size = sizeof info};
        if (tile_variant_get(v, &info) == TILE_STATUS_SUCCESS && !strcmp(info.op, family) &&
            (int)info.dtype == dtype)
            return 1;
    }
    return 0;
}

/* attention and grouped matmul over their grid (or held-out problems), for each dtype that has
 * variants of the op. */
static void tune_compute(tune_run *r, cli_op op, int dtype_only, const tune_range *range) {
    int64_t shapes[64][6] = {{0}};
    int n = 0;
    if (op == OP_ATTENTION && r->verify) {
        for (size_t i = 0; i < sizeof attention_held_out / sizeof *attention_held_out; i++, n++)
            memcpy(shapes[n], attention_held_out[i], sizeof *attention_held_out);
    } else if (op == OP_ATTENTION) {
        const size_t dims = sizeof attention_tune_head_dims / sizeof *attention_tune_head_dims,
                     shapes_a_dim = sizeof attention_tune_grid / sizeof *attention_tune_grid;
        for (size_t d = 0; d < dims; d++)
            for (size_t i = 0; i < shapes_a_dim; i++, n++) {
                memcpy(shapes[n], attention_tune_grid[i], sizeof *attention_tune_grid);
                shapes[n][4] = attention_tune_head_dims[d];
            }
    } else if (r->verify) {
        for (size_t i = 0; i < sizeof grouped_held_out / sizeof *grouped_held_out; i++, n++)
            memcpy(shapes[n], grouped_held_out[i], sizeof *grouped_held_out);
    } else {
        for (size_t i = 0; i < sizeof grouped_grid / sizeof *grouped_grid; i++)
            for (size_t j = 0; j < sizeof grouped_grid_n / sizeof *grouped_grid_n; j++, n++) {
                shapes[n][0] = grouped_grid[i][0];
                shapes[n][1] = grouped_grid[i][1];
                shapes[n][2] = grouped_grid_k;
                shapes[n][3] = grouped_grid_n[j];
            }
    }
    compute_problem *p = support_xmalloc(sizeof *p);
    for (int dt = 0; dt < TILE_DTYPE_COUNT_; dt++) {
        if ((dtype_only >= 0 && dt != dtype_only) || !has_variants(op_info[op].family, dt))
            continue;
        const tile_dtype dtype = (tile_dtype)dt;
        for (int i = 0; i < n; i++) {
            const int64_t rows = op == OP_ATTENTION ? shapes[i][0] * shapes[i][1] * shapes[i][3]
                                                    : shapes[i][1] / shapes[i][0];
            if (!in_range(range, rows, shapes[i][op == OP_ATTENTION ? 4 : 3])) continue;
            bench_buffers b;
            compute_setup(r->gpu, op, dtype, shapes[i], p, &b);
            const int batch = batch_for_flops(p->flops);
            tune_times t;
            /* at the steady state, as `bench` times these ops (perf-notes M1) */
            time_variants(r->gpu, &b, op, dtype, p->rows, p->cols, batch, SUSTAINED_BATCH_MS, NULL,
                          0, &t);
            verify_times vt = {TILE_STATUS_SUCCESS, 0, 0, NULL, ""};
            if (r->verify) {
                vt = verify_dispatch(r->gpu, &b, op, dtype, p->rows, p->cols, batch,
                                     SUSTAINED_BATCH_MS, &t);
                tile_decision d = {.struct_size = sizeof d};
                if ((op == OP_ATTENTION ? tile_flash_attention_explain(b.attention, 0, &d)
                                        : tile_grouped_matmul_explain(b.grouped, 0, &d)) ==
                    TILE_STATUS_SUCCESS)
                    vt.picked_name = variant_name_or(d.variant, NULL);
            }
            tune_report(r, op, dtype, p->shape, p->rows, p->cols, &t, NULL, &vt, i + 1, n);
            compute_free(r->gpu, op, p);
        }
    }
    free(p);
}

/* Empties a file opened for appending, as "w" would have: 0, else -1 (errno). A pipe or a
 * terminal (EINVAL) has nothing to empty. */
static int empty_file(FILE *f) {
    return ftruncate(fileno(f), 0) && errno != EINVAL ? -1 : 0;
}

/* fusedops tune: times every eligible variant of one op over a grid of shapes and writes the
 * winners as a TSV for autotune_results/, or (--verify) checks dispatch on held-out shapes
 * (docs/tuning.md). */
static int cmd_tune(int argc, char **argv) {
    options o;
    const char *out_path = NULL, *times_path = NULL, *shapes_arg = NULL;
    int verify = 0;
    tune_range range = {1, INT64_MAX, 1, INT64_MAX};
    /* --out FILE and --verify are tune's own; the rest are the common options. */
    char *rest[64];
    int nrest = 0;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--out") && i + 1 < argc) out_path = argv[++i];
        else if (!strcmp(argv[i], "--verify")) verify = 1;
        else if (!strcmp(argv[i], "--times") && i + 1 < argc) times_path = argv[++i];
        else if (!strcmp(argv[i], "--shapes") && i + 1 < argc) shapes_arg = argv[++i];
        else if ((!strcmp(argv[i], "--min-cols") || !strcmp(argv[i], "--max-cols") ||
                  !strcmp(argv[i], "--min-rows") || !strcmp(argv[i], "--max-rows")) &&
                 i + 1 < argc) {
            int64_t *bound = !strcmp(argv[i], "--min-cols")   ? &range.min_cols
                             : !strcmp(argv[i], "--max-cols") ? &range.max_cols
                             : !strcmp(argv[i], "--min-rows") ? &range.min_rows
                                                              : &range.max_rows;
            if (parse_number(argv[i + 1], 0, INT64_MAX, bound))
                return usage("--min-rows, --max-rows, --min-cols and --max-cols are numbers");
            i++;
        } else if (nrest == (int)(sizeof rest / sizeof *rest)) {
            return usage("tune: too many options"); /* (not to drop the ones past them) */
        } else rest[nrest++] = argv[i];
    }
    if (parse_options(nrest, rest, 2, &o)) return EXIT_USAGE;
    if (range.min_rows > range.max_rows || range.min_cols > range.max_cols)
        return usage("tune: --min-rows above --max-rows, or --min-cols above --max-cols");
    /* the ops tune knows, by their table op (op_info's `table`), and the calls each is timed
     * through (the row-wise ones' passes) */
#define PASSES(p) p, (int)(sizeof p / sizeof *p)
    static const struct {
        cli_op op;
        const tune_pass *passes;
        int npasses;
    } tuned_ops[] = {{OP_SOFTMAX, PASSES(softmax_passes)},
                     {OP_LAYERNORM, PASSES(norm_passes)},
                     {OP_RESIDUAL_DROPOUT, PASSES(residual_dropout_passes)},
                     {OP_ATTENTION, NULL, 0},
                     {OP_GROUPED_MATMUL, NULL, 0}};
#undef PASSES
    const char *table = o.op ? o.op : "softmax";
    int which = -1;
    for (int i = 0; i < (int)(sizeof tuned_ops / sizeof *tuned_ops); i++)
        if (!strcmp(table, op_info[tuned_ops[i].op].table)) which = i;
    if (which < 0)
        return usage("tune knows the ops: softmax, norm, residual_dropout, attention, "
                     "grouped_matmul");
    const cli_op op = tuned_ops[which].op;
    const char *family = op_info[op].family;
    if (o.dtype >= 0 && !has_variants(family, o.dtype))
        return usage("tune: the op has no variant of that --dtype (see fusedops list)");
    /* --shapes ROWSxCOLS[,ROWSxCOLS...]: the caller's shapes in place of the grid (tune) or of
     * the held-out ones (--verify) */
    enum { MAX_USER_SHAPES = 256 };
    static int64_t user_shapes[MAX_USER_SHAPES][2];
    int nuser = 0;
    if (shapes_arg) {
        if (op == OP_ATTENTION || op == OP_GROUPED_MATMUL)
            return usage("tune: --shapes is for softmax, norm and residual_dropout");
        /* a shape first and after every comma: "" and "64x64," are no list; numbers of at
         * most 18 digits (a longer one fails the match: sscanf's overflow is undefined) */
        for (const char *c = shapes_arg;;) {
            long long rows, cols;
            int used = 0;
            if (nuser == MAX_USER_SHAPES ||
                sscanf(c, "%18lldx%18lld%n", &rows, &cols, &used) != 2 ||
                rows < 1 || cols < 1 || rows > ((long long)1 << 31) / cols ||
                (c[used] != ',' && c[used] != '\0'))
                return usage("tune: --shapes takes up to 256 ROWSxCOLS, comma-separated, "
                             "each of at most 2^31 elements");
            user_shapes[nuser][0] = rows;
            user_shapes[nuser++][1] = cols;
            if (!c[used]) break;
            c += used + 1;
        }
    }
    support_gpu gpu;
    if (open_gpu(&gpu)) return EXIT_NO_GPU;
    /* Both files are opened (appending) before either is emptied: a --times that cannot be
     * opened must not cost an existing --out table its lines. */
    FILE *out = out_path ? fopen(out_path, "a") : stdout;
    if (!out) {
        perror(out_path);
        support_gpu_close(&gpu);
        return EXIT_USAGE;
    }
    FILE *times = times_path ? fopen(times_path, "a") : NULL;
    const char *failed = times_path && !times ? times_path
                         : out != stdout && empty_file(out) ? out_path
                         : times && empty_file(times) ? times_path
                         : NULL;
    if (failed) {
        perror(failed);
        if (out != stdout) fclose(out);
        if (times) fclose(times);
        support_gpu_close(&gpu);
        return EXIT_USAGE;
    }
    tune_run r = {.gpu = &gpu, .out = out, .verify = verify, .tty = isatty(fileno(stderr)),
                  .times = times, .shapes = (const int64_t(*)[2])user_shapes, .nshapes = nuser};
    if (!verify) {
        /* the tag that would keep these lines to devices like this one (docs/tuning.md);
         * none where the driver does not report the bandwidth */
        if (gpu.mem_bandwidth_gbs > 0)
            fprintf(out, "# %s: sm_%d, %d SMs, peak memory bandwidth %d GB/s (tag: sm_%d@%d)\n",
                    gpu.name, gpu.arch, gpu.sm_count, gpu.mem_bandwidth_gbs, gpu.arch,
                    gpu.mem_bandwidth_gbs);
        else
            fprintf(out, "# %s: sm_%d, %d SMs, peak memory bandwidth not reported (no tag)\n",
                    gpu.name, gpu.arch, gpu.sm_count);
        fprintf(out, "arch\top\tdtype\tbucket\tvariant\ttime_us\trunner_up\trunner_up_us\n");
    }
    if (op == OP_ATTENTION || op == OP_GROUPED_MATMUL) tune_compute(&r, op, o.dtype, &range);
    else tune_rowwise(&r, tuned_ops[which].passes, tuned_ops[which].npasses, o.dtype, &range);
    if (r.tty) fputc('\n', stderr);
    if (verify) {
        const double share = r.total ? 100.0 / r.total : 0.0;
        fprintf(out, "# held-out check of %s on %s: dispatched variant within 5%% of the fastest "
                     "on %d of %d shapes (%.0f%%)\n",
                table, gpu.name, r.within, r.total, share * r.within);
        /* the earlier measure: against the least of the search's medians */
        fprintf(out, "# against the search's own time of the fastest variant: within 5%% on %d "
                     "of %d shapes (%.0f%%)\n",
                r.within_search, r.total, share * r.within_search);
    }
    if (out != stdout) fclose(out);
    if (times) fclose(times);
    support_gpu_close(&gpu);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) return usage(NULL);
    const char *cmd = argv[1];
    if (!strcmp(cmd, "version")) {
        if (argc > 2) return usage("version takes no options");
        int32_t v = tile_version();
        printf("libfusedops %d.%d.%d (%d variants)\n", v / 10000, v / 100 % 100, v % 100,
               tile_variant_count());
        return 0;
    }
    if (!strcmp(cmd, "list")) {
        options o;
        if (parse_options(argc, argv, 2, &o)) return EXIT_USAGE;
        return cmd_list(&o);
    }
    if (!strcmp(cmd, "explain")) return cmd_explain(argc, argv);
    if (!strcmp(cmd, "check")) return cmd_check(argc, argv);
    if (!strcmp(cmd, "bench")) return cmd_bench(argc, argv);
    if (!strcmp(cmd, "tune")) return cmd_tune(argc, argv);
    return usage("unknown command");
}
