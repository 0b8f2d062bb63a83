/* Programmatic dependent launch (PDL) and the launch of every variant: the loader decides once
 * per device whether launches may overlap the grid ahead of them in the stream
 * (src/loader.c, device_setup: a driver of CUDA 12.3 or newer, FUSEDOPS_PDL not "0", every
 * kernel set up loaded an image of PTX 9.0 or newer, a failed query counting as not), and
 * tile_launch_programs then gives every launch
 * CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION, beside a cluster variant's
 * CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION. Here the library loads fake_cuda (FUSEDOPS_LIBCUDA),
 * a stand-in driver that plays one GPU and records each launch instead of running it, and the
 * test reads what cuLaunchKernelEx was given: for the dispatched calls of every op, and for
 * every variant of every op and dtype forced through its *_variant entry point (softmax, norm,
 * attention, grouped matmul). One helper, check_launch, holds a recorded launch against the
 * variant's public description (tile_variant_info and its params) and the scenario.
 *
 * Device setup happens once per process, so each scenario is a run of its own
 * (tests/CMakeLists.txt): the environment sets the GPU the fake plays (FAKE_CUDA_CC,
 * FAKE_CUDA_DRIVER, FAKE_CUDA_PTX; fake_cuda.h) and FUSEDOPS_PDL, and EXPECT_PDL says what
 * every launch must carry: 1 (the default) the PDL attribute, 0 none. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_cuda.h"
#include "fusedops.h"

#define ROWS 4096
#define COLS 4096 /* softmax and norm rows, for variants of any width (max_cols 0) */

/* Stand-in device addresses, one per operand, 256-byte aligned as cuMemAlloc's and 64 GiB
 * apart (the largest operand here, 4096 f32 rows of a softmax at twice the widest variant's
 * 262144 columns, is 8 GiB), and a stream: never dereferenced (the fake runs nothing), only
 * passed through. */
#define DEV(slot) ((void *)(uintptr_t)(0x7e0000000000ull + (uint64_t)(slot) * 0x1000000000ull))
enum { Y, X, S, RESIDUAL, BIAS, WEIGHT, NORM_BIAS, MASK, MEAN, RSTD, Q, K, V, O, LSE, A, B, C,
       OFFSETS, WORKSPACE };
#define STREAM ((tile_stream)(uintptr_t)0x5000u)

static const tile_dtype dtypes[] = {TILE_DTYPE_F32, TILE_DTYPE_F16, TILE_DTYPE_BF16};
#define DTYPES ((int)(sizeof dtypes / sizeof dtypes[0]))

static int expect_pdl = 1;
static int32_t arch;
static int clamped; /* launches checked so far whose grid was clamped to the resident count */
static void *fake;
static fake_cuda_last_launch_fn *last_launch;

static fake_cuda_launch recorded(void) {
    fake_cuda_launch l;
    last_launch(&l);
    return l;
}

static void assert_status(tile_status got, tile_status want) {
    if (got != want) {
        print_error("got %s, want %s: %s\n", tile_status_string(got), tile_status_string(want),
                    tile_last_error());
        fail();
    }
}

/* The positive integer value of `key` in a variant's params ("ROWS=1 BLOCK_N=8192 ..."; the
 * keys each op's grid points define: docs/tile-language.md), or 0 when absent. */
static int64_t param(const tile_variant_info *v, const char *key) {
    const size_t len = strlen(key);
    for (const char *p = v->params; p && *p; p = strchr(p, ' ') ? strchr(p, ' ') + 1 : NULL)
        if (!strncmp(p, key, len) && p[len] == '=') return atoll(p + len + 1);
    return 0;
}

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* Whether the device the fake plays can run v at all: its arch range and shared memory. */
static int runs_here(const tile_variant_info *v) {
    return arch >= v->arch_min && (!v->arch_max || arch <= v->arch_max) &&
           v->smem_bytes <= FAKE_CUDA_SMEM_OPTIN;
}

/* How the grid follows from the programs a call asks for (the op's documented count:
 * docs/api.md). The public API does not say which variants are persistent, so where one may
 * be, either count passes. */
typedef enum grid_rule {
    GRID_ALL,     /* one program per unit of work (a causal attention call: docs/api.md) */
    GRID_ANY_CAP, /* that, or SMs x resident where fewer (a persistent variant) */
    GRID_CAPPED,  /* min(that, SMs x resident): persistent (every grouped matmul variant) */
} grid_rule;

#define EXPECT(cond)                                                                       \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            print_error("%s, %s: launched as %s, grid %u block %u smem %u, %u attrs, pdl %d, " \
                        "cluster %u, %d tensor maps: expected %s\n",                       \
                        info->name, what, l->kernel ? l->kernel : "(nothing)", l->grid[0], \
                        l->block[0], l->shared_bytes, l->num_attrs, l->pdl, l->cluster[0], \
                        l->tensor_maps - before->tensor_maps, #cond);                      \
            fail();                                                                        \
        }                                                                                  \
    } while (0)

/* The call `what` made after `before` was recorded launched variant `info` exactly once, on
 * STREAM: its kernel, `threads` threads a block, its shared memory, `programs` programs by
 * `rule` (each a cluster of info->cluster thread blocks), the cluster attribute exactly where
 * the variant has clusters, the PDL attribute as the scenario expects, and `tensor_maps` maps
 * encoded for it. Resident programs per SM are what the fake reports for the variant's
 * threads (fake_cuda_blocks_per_sm). */
static void check_launch(const char *what, const tile_variant_info *info,
                         const fake_cuda_launch *before, int64_t programs, grid_rule rule,
                         int tensor_maps) {
    const fake_cuda_launch launch = recorded(), *l = &launch;
    EXPECT(l->count == before->count + 1);
    EXPECT(l->tensor_maps == before->tensor_maps + tensor_maps);
    EXPECT(!strcmp(l->kernel, info->name));
    EXPECT(l->block[0] == (unsigned)info->threads && l->block[1] == 1 && l->block[2] == 1);
    EXPECT(l->shared_bytes == (unsigned)info->smem_bytes);
    EXPECT(l->stream == (const void *)STREAM);
    const int64_t resident =
        (int64_t)FAKE_CUDA_SM_COUNT * fake_cuda_blocks_per_sm(info->threads);
    const int64_t capped = programs < resident ? programs : resident;
    const int64_t c = info->cluster, grid = l->grid[0];
    EXPECT(programs > 0);
    if (rule == GRID_ALL) EXPECT(grid == programs * c);
    if (rule == GRID_ANY_CAP) EXPECT(grid == programs * c || grid == capped * c);
    if (rule == GRID_CAPPED) EXPECT(grid == capped * c);
    clamped += grid < programs * c;
    EXPECT(l->grid[1] == 1 && l->grid[2] == 1);
    if (c > 1)
        EXPECT(l->cluster[0] == (unsigned)c && l->cluster[1] == 1 && l->cluster[2] == 1);
    else
        EXPECT(l->cluster[0] == 0);
    EXPECT(l->pdl == (expect_pdl ? 1 : -1));
    EXPECT(l->num_attrs == (c > 1 ? 1u : 0u) + (expect_pdl ? 1u : 0u));
}

/* The call `what` was refused with `s` and launched nothing (nor encoded a map): ARCH_MISMATCH
 * where the device cannot run the variant, NOT_SUPPORTED where the call needs what the variant
 * lacks (dropout, optional inputs, wider rows); where both hold, either. */
static void check_refused(const char *what, const tile_variant_info *info,
                          const fake_cuda_launch *before, tile_status s, int lacks) {
    const fake_cuda_launch launch = recorded(), *l = &launch;
    const int wrong_device = !runs_here(info);
    EXPECT(wrong_device || lacks);
    EXPECT((wrong_device && s == TILE_STATUS_ARCH_MISMATCH) ||
           (lacks && s == TILE_STATUS_NOT_SUPPORTED));
    EXPECT(l->count == before->count);
    EXPECT(l->tensor_maps == before->tensor_maps);
}

/* A forced call: launched and checked where the device runs the variant and the variant takes
 * the call (`lacks` 0), else refused. Returns 1 when it launched. */
static int check_forced(const char *what, const tile_variant_info *info,
                        const fake_cuda_launch *before, tile_status s, int lacks,
                        int64_t programs, grid_rule rule, int tensor_maps) {
    if (runs_here(info) && !lacks) {
        assert_status(s, TILE_STATUS_SUCCESS);
        check_launch(what, info, before, programs, rule, tensor_maps);
        return 1;
    }
    check_refused(what, info, before, s, lacks);
    return 0;
}

static tile_variant_info variant_info(int32_t index) {
    tile_variant_info v = {.struct_size = sizeof v};
    assert_status(tile_variant_get(index, &v), TILE_STATUS_SUCCESS);
    return v;
}

/* The variants of `op` and `dtype` in turn: returns the next index after *i, or -1. */
static int32_t next_variant(int32_t i, const char *op, tile_dtype dtype, tile_variant_info *v) {
    for (i++; i < tile_variant_count(); i++) {
        *v = variant_info(i);
        if (!strcmp(v->op, op) && v->dtype == dtype) return i;
    }
    return -1;
}
#define FOR_VARIANTS(i, op, dtype, v) \
    for (int32_t i = next_variant(-1, op, dtype, &v); i >= 0; i = next_variant(i, op, dtype, &v))

/* ------------------------------------------------------------------ the calls of each op */

/* Flash attention over 2 sequences of 4096 queries and keys, 16 query and 4 key/value heads,
 * BSHD: programs are ceil(seqlen_q / BLOCK_M) query blocks per (sequence, head)
 * (docs/api.md). */
static tile_flash_attention_args attention_args(tile_dtype dtype, int32_t head_dim, int causal) {
    tile_flash_attention_args a;
    assert_status(tile_flash_attention_init(&a, sizeof a), TILE_STATUS_SUCCESS);
    a.dtype = dtype;
    a.batch = 2;
    a.heads_q = 16;
    a.heads_kv = 4;
    a.head_dim = head_dim;
    a.causal = causal;
    a.seqlen_q = a.seqlen_k = 4096;
    a.q = DEV(Q), a.k = DEV(K), a.v = DEV(V), a.o = DEV(O), a.lse = DEV(LSE);
    a.q_head_stride = a.o_head_stride = head_dim;
    a.q_seq_stride = a.o_seq_stride = (int64_t)a.heads_q * head_dim;
    a.q_batch_stride = a.o_batch_stride = a.seqlen_q * a.q_seq_stride;
    a.k_head_stride = a.v_head_stride = head_dim;
    a.k_seq_stride = a.v_seq_stride = (int64_t)a.heads_kv * head_dim;
    a.k_batch_stride = a.v_batch_stride = a.seqlen_k * a.k_seq_stride;
    return a;
}
/* Decode calls: 2 sequences, 16 query heads, few queries a head (BSHD unless said). */
typedef struct decode_case {
    const char *what;
    int32_t heads_kv, seqlen_q, causal;
    int q_bhsd, o_bhsd; /* q's or o's heads' queries back to back (BHSD) */
    int folds; /* docs/api.md, "Decode calls": FOLD_* */
} decode_case;
enum { FOLD_NONE, FOLD_STRIDES /* any variant */, FOLD_KERNELS /* those of no tensor map */ };
static const decode_case decode_cases[] = {
    {"decode, GQA 4, causal: folded", 4, 1, 1, 0, 0, FOLD_STRIDES},
    {"decode, MQA: folded (one key/value head)", 1, 1, 0, 0, 0, FOLD_STRIDES},
    {"3 queries, BHSD q and o: folded", 4, 3, 0, 1, 1, FOLD_STRIDES},
    {"3 queries, BHSD q, BSHD o: folded by the kernels", 4, 3, 0, 1, 0, FOLD_KERNELS},
    {"3 queries, BHSD, causal: folded by the kernels", 4, 3, 1, 1, 1, FOLD_KERNELS},
    {"3 queries, BSHD: folded by the kernels", 4, 3, 0, 0, 0, FOLD_KERNELS},
    {"16 queries, BSHD, causal (64 rows a key/value head): folded by the kernels", 4, 16, 1, 0, 0,
     FOLD_KERNELS},
    {"17 queries, BSHD (68 rows a key/value head): not folded", 4, 17, 0, 0, 0, FOLD_NONE},
    {"40 queries, BSHD (160 rows a key/value head): not folded", 4, 40, 1, 0, 0, FOLD_NONE},
};
#define DECODE_CASES ((int)(sizeof decode_cases / sizeof decode_cases[0]))
static tile_flash_attention_args decode_args(tile_dtype dtype, int32_t head_dim, const decode_case *c) {
    tile_flash_attention_args a = attention_args(dtype, head_dim, c->causal);
    a.heads_kv = c->heads_kv;
    a.seqlen_q = c->seqlen_q;
    a.k_seq_stride = a.v_seq_stride = (int64_t)a.heads_kv * head_dim;
    a.k_batch_stride = a.v_batch_stride = a.seqlen_k * a.k_seq_stride;
    const int64_t bshd_seq = (int64_t)a.heads_q * head_dim, per_batch = a.seqlen_q * bshd_seq;
    a.q_seq_stride = c->q_bhsd ? head_dim : bshd_seq;
    a.q_head_stride = c->q_bhsd ? a.seqlen_q * head_dim : head_dim;
    a.o_seq_stride = c->o_bhsd ? head_dim : bshd_seq;
    a.o_head_stride = c->o_bhsd ? a.seqlen_q * head_dim : head_dim;
    a.q_batch_stride = a.o_batch_stride = per_batch;
    return a;
}
static int64_t attention_programs(const tile_variant_info *v, const tile_flash_attention_args *a) {
    return ceil_div(a->seqlen_q, param(v, "BLOCK_M")) * a->heads_q * a->batch;
}
/* Tensor maps a call encodes: q, k and v for a warp-specialized variant (WARPGROUPS 3 or 4),
 * and o but where the variant hands blocks over (HANDED 1: its threads store the output);
 * attention_args' o is 16-byte aligned with 16-byte strides, so a map can describe it. */
static int attention_maps(const tile_variant_info *v) {
    if (param(v, "WARPGROUPS") < 3) return 0;
    return param(v, "HANDED") == 1 ? 3 : 4;
}

/* Decode with a workspace (docs/api.md, "Key splits"): 2 sequences of one query a head, 16
 * query heads over 4 key/value heads, 8192 keys: folded to 8 blocks. Given all that
 * tile_flash_attention_workspace_size asks for, a variant of one program a block (not
 * warp-specialized) launches each block's keys as 2 to 32 splits, in one wave of its resident
 * programs; given the counter's 64 bytes, or a warp-specialized (persistent) variant, 8 programs
 * or fewer. Fails without the split, or where a split call's workspace size is the counter's. */
static void test_attention_splits(void **state) {
    (void)state;
    tile_variant_info v;
    int split = 0;
    FOR_VARIANTS(i, "attention", TILE_DTYPE_BF16, v) {
        if (!runs_here(&v)) continue;
        const decode_case dc = {"decode", 4, 1, 0, 0, 0, FOLD_STRIDES};
        tile_flash_attention_args a = decode_args(TILE_DTYPE_BF16, (int32_t)v.max_cols, &dc);
        a.seqlen_k = 8192;
        a.k_batch_stride = a.v_batch_stride = a.seqlen_k * a.k_seq_stride;
        size_t bytes = 0;
        assert_status(tile_flash_attention_workspace_size(&a, &bytes), TILE_STATUS_SUCCESS);
        assert_true(bytes > TILE_FLASH_ATTENTION_WORKSPACE_ZEROED_BYTES);
        const int64_t blocks = 8, resident = FAKE_CUDA_SM_COUNT * fake_cuda_blocks_per_sm((int)v.threads);
        for (int full = 0; full < 2; full++) {
            a.workspace = DEV(WORKSPACE);
            a.workspace_bytes = full ? bytes : TILE_FLASH_ATTENTION_WORKSPACE_BYTES;
            const fake_cuda_launch before = recorded();
            assert_status(tile_flash_attention_variant(i, &a, STREAM), TILE_STATUS_SUCCESS);
            const fake_cuda_launch after = recorded();
            assert_int_equal(after.count, before.count + 1);
            const int64_t programs = (int64_t)after.grid[0] / (after.cluster[0] ? after.cluster[0] : 1);
            if (!full || attention_maps(&v)) {
                if (programs > blocks) {
                    print_error("%s: %lld programs for %lld blocks without a split\n", v.name,
                                (long long)programs, (long long)blocks);
                    fail();
                }
                continue;
            }
            if (programs % blocks || programs / blocks < 2 || programs / blocks > 32 ||
                programs > resident) {
                print_error("%s: %lld programs for %lld blocks (resident %lld): not a split of "
                            "2 to 32 in one wave\n",
                            v.name, (long long)programs, (long long)blocks, (long long)resident);
                fail();
            }
            split++;
        }
    }
    assert_true(split > 0);
    /* Dispatched: a head-64 MHA decode call (2 sequences x 16 heads, 8192 keys; the heuristic's
     * pick without a workspace is a warp-specialized variant, which never splits) takes a
     * variant of one program a block once its workspace holds the splits, and splits. */
    const decode_case mha = {"decode, MHA", 16, 1, 0, 0, 0, FOLD_NONE};
    tile_flash_attention_args m = decode_args(TILE_DTYPE_BF16, 64, &mha);
    m.seqlen_k = 8192;
    m.k_batch_stride = m.v_batch_stride = m.seqlen_k * m.k_seq_stride;
    size_t need = 0;
    assert_status(tile_flash_attention_workspace_size(&m, &need), TILE_STATUS_SUCCESS);
    tile_decision d = {.struct_size = sizeof d};
    m.workspace = DEV(WORKSPACE);
    for (int full = 0; full < 2; full++) {
        m.workspace_bytes = full ? need : TILE_FLASH_ATTENTION_WORKSPACE_BYTES;
        assert_status(tile_flash_attention_explain(&m, 0, &d), TILE_STATUS_SUCCESS);
        const tile_variant_info chosen = variant_info(d.variant);
        if (full) assert_int_equal(attention_maps(&chosen), 0);
        assert_int_equal(strstr(d.reason, "its keys split over programs") != NULL, full);
        const fake_cuda_launch before = recorded();
        assert_status(tile_flash_attention(&m, STREAM), TILE_STATUS_SUCCESS);
        const fake_cuda_launch after = recorded();
        assert_int_equal(after.count, before.count + 1);
        if (full) assert_true(after.grid[0] >= 2 * 32 && after.grid[0] % 32 == 0);
        else assert_true(after.grid[0] <= 32);
    }
    /* ... and a head-128 GQA decode call (folded, by strides or by the kernels: each block
     * streams its own K and V) takes the three-stage twin of its pick (take_deep_ring: copies
     * two key tiles ahead), with the splits' workspace or without; 40 queries a head in BSHD
     * do not fold (160 rows), so GQA heads share K and V: the twin only where the workspace
     * makes the keys split. The kernels' fold takes no variant of tensor maps. */
    const decode_case gqa[] = {{"decode, GQA 4", 4, 1, 0, 0, 0, FOLD_STRIDES},
                               {"3 queries, BSHD", 4, 3, 0, 0, 0, FOLD_KERNELS},
                               {"40 queries, BSHD", 4, 40, 0, 0, 0, FOLD_NONE}};
    for (int c = 0; c < 3; c++) {
        const int fold = gqa[c].folds != FOLD_NONE;
        tile_flash_attention_args g = decode_args(TILE_DTYPE_BF16, 128, &gqa[c]);
        g.seqlen_k = 8192;
        g.k_batch_stride = g.v_batch_stride = g.seqlen_k * g.k_seq_stride;
        assert_status(tile_flash_attention_workspace_size(&g, &need), TILE_STATUS_SUCCESS);
        g.workspace = DEV(WORKSPACE);
        for (int full = 0; full < 2; full++) {
            g.workspace_bytes = full ? need : TILE_FLASH_ATTENTION_WORKSPACE_BYTES;
            assert_status(tile_flash_attention_explain(&g, 0, &d), TILE_STATUS_SUCCESS);
            const tile_variant_info chosen = variant_info(d.variant);
            assert_int_equal(param(&chosen, "STAGES") == 3, (fold || full) && arch == 90);
            if (gqa[c].folds == FOLD_KERNELS) {
                assert_int_equal(attention_maps(&chosen), 0);
                assert_non_null(strstr(d.reason, "4 query heads a key/value head fold into its rows"));
            }
        }
    }
    /* Calls of too many blocks split nothing: the counter's bytes suffice. */
    tile_flash_attention_args a = attention_args(TILE_DTYPE_BF16, 128, 0);
    size_t bytes = 0;
    assert_status(tile_flash_attention_workspace_size(&a, &bytes), TILE_STATUS_SUCCESS);
    assert_int_equal(bytes, TILE_FLASH_ATTENTION_WORKSPACE_BYTES);
}

/* Varlen tensor maps (encode_attention_map): a window of the longest sequence's rows whose
 * two token axes both move one token, based that many tokens early, so row r of the sequence
 * ending at token E is token E - S + r. Calls whose sequences hold at most one query (S 1,
 * varlen decode without a GQA fold) once took a stride past the tensor for both token axes, as
 * for a lone axis, and their warp-specialized kernels read and stored elsewhere; a tensor of
 * one token has a lone token axis, whose stride may be anything but must be the same for both
 * axes and the base. 3 sequences (and 1) of one query and one key, 4 heads (MHA: no fold),
 * BSHD, on every warp-specialized variant: the maps of q, k, v and (where encoded) o, in the
 * order the call encodes them. */
static void test_attention_varlen_maps(void **state) {
    (void)state;
    tile_variant_info v;
    int checked = 0;
    FOR_VARIANTS(i, "attention", TILE_DTYPE_BF16, v) {
        if (!runs_here(&v) || !attention_maps(&v)) continue;
        for (int tokens = 1; tokens <= 3; tokens += 2) {
            tile_flash_attention_args a = attention_args(TILE_DTYPE_BF16, (int32_t)v.max_cols, 0);
            a.batch = tokens, a.heads_q = a.heads_kv = 4;
            a.seqlen_q = a.seqlen_k = 1;
            a.cu_seqlens_q = DEV(OFFSETS), a.cu_seqlens_k = DEV(OFFSETS + 1);
            a.total_q = a.total_k = tokens;
            const int64_t seq = (int64_t)a.heads_q * a.head_dim; /* BSHD: a token's elements */
            a.q_seq_stride = a.o_seq_stride = a.k_seq_stride = a.v_seq_stride = seq;
            a.q_head_stride = a.o_head_stride = a.k_head_stride = a.v_head_stride = a.head_dim;
            a.q_batch_stride = a.o_batch_stride = a.k_batch_stride = a.v_batch_stride = 0;
            const fake_cuda_launch before = recorded();
            assert_status(tile_flash_attention_variant(i, &a, STREAM), TILE_STATUS_SUCCESS);
            const fake_cuda_launch after = recorded();
            const void *bases[4] = {a.q, a.k, a.v, a.o};
            for (int m = 0; m < after.tensor_maps - before.tensor_maps; m++) {
                const void *base = bases[m];
                const int at = (before.tensor_maps + m) % FAKE_CUDA_MAPS;
                const unsigned long long window = after.maps[at].strides[0],
                                         outer = after.maps[at].strides[2];
                assert_int_equal(after.maps[at].dims[1], 1);          /* S: one row */
                assert_int_equal(after.maps[at].dims[3], tokens + 1); /* the ending token */
                assert_int_equal(window, outer);
                if (tokens > 1) assert_int_equal(window, (unsigned long long)seq * 2);
                assert_true((const char *)after.maps[at].address + window == (const char *)base);
                checked++;
            }
        }
    }
    assert_true(checked > 0 || arch != 90);
}

/* The walk's order (perf-notes A57, A60): a persistent (warp-specialized) variant walks each
 * head's query blocks in a row on a full, fixed-length call (1), each head's turned where the
 * last block is ragged and the walk fixed (2: no block counter, as here), and
 * heads fastest otherwise: causal calls (the order balances their unequal blocks), varlen
 * calls; variants of one program a block keep heads fastest. Every bf16 attention variant
 * that runs here, forced. */
static void test_attention_walk_order(void **state) {
    (void)state;
    tile_variant_info v;
    int in_a_row = 0, turned = 0;
    FOR_VARIANTS(i, "attention", TILE_DTYPE_BF16, v) {
        if (!runs_here(&v)) continue;
        const int persistent = param(&v, "WARPGROUPS") >= 3;
        const int64_t bm = param(&v, "BLOCK_M");
        for (int c = 0; c < 4; c++) {
            tile_flash_attention_args a = attention_args(TILE_DTYPE_BF16, (int32_t)v.max_cols, c == 1);
            if (c == 2) a.seqlen_q = a.seqlen_k = 4000; /* a ragged last block (64, 128, 192 rows) */
            if (c == 3) { /* varlen: 2 sequences of 4096 tokens */
                a.cu_seqlens_q = DEV(OFFSETS), a.cu_seqlens_k = DEV(OFFSETS + 1);
                a.total_q = a.total_k = 2 * 4096;
                a.q_batch_stride = a.o_batch_stride = a.k_batch_stride = a.v_batch_stride = 0;
            }
            const tile_status s = tile_flash_attention_variant(i, &a, STREAM);
            if (s != TILE_STATUS_SUCCESS) continue; /* (refusals: test_attention's) */
            const fake_cuda_launch l = recorded();
            const int full = persistent && (c == 0 || c == 2);
            const int want = !full ? 0 : a.seqlen_q % bm == 0 ? 1 : 2; /* (no workspace) */
            assert_int_equal(l.blocks_fastest, want);
            /* the turn divides by the programs launched (A60b): the grid's */
            if (want == 2) assert_int_equal(l.walk_programs, l.grid[0]);
            in_a_row += want == 1;
            turned += want == 2;
        }
    }
    assert_true((in_a_row > 0 && turned > 0) || arch != 90);
}

/* Grouped matmul shapes: many tiles (more than stay resident) with B [groups, k, n], and a few
 * with B [groups, n, k] and a bias. */
static tile_grouped_matmul_args grouped_matmul_args(tile_dtype dtype, int large) {
    tile_grouped_matmul_args g;
    assert_status(tile_grouped_matmul_init(&g, sizeof g), TILE_STATUS_SUCCESS);
    g.dtype = dtype;
    g.groups = large ? 8 : 2;
    g.total_m = large ? 8192 : 256;
    g.n = large ? 4096 : 256;
    g.k = large ? 4096 : 512;
    g.a = DEV(A), g.b = DEV(B), g.c = DEV(C), g.offsets = DEV(OFFSETS);
    g.lda = g.k;
    g.ldc = g.n;
    g.b_group_stride = g.k * g.n;
    g.b_k_stride = large ? g.n : 1;
    g.b_n_stride = large ? 1 : g.k;
    if (!large) {
        g.bias = DEV(BIAS);
        g.bias_group_stride = g.n;
    }
    return g;
}
/* (ceil(total_m / BLOCK_M) + groups) * ceil(n / BLOCK_N) programs asked for (docs/api.md),
 * clamped to what stays resident. Which tiles each program then walks is the kernels'
 * scheduler, not checked here. */
static int64_t grouped_matmul_programs(const tile_variant_info *v,
                                       const tile_grouped_matmul_args *g) {
    return (ceil_div(g->total_m, param(v, "BLOCK_M")) + g->groups) *
           ceil_div(g->n, param(v, "BLOCK_N"));
}
/* Tensor maps: A (in two box heights) and B for a warp-specialized variant (WARPGROUPS 3), and C
 * where its rows end on a 16-byte boundary (n a multiple of 8; C's base and ldc always are). */
static int grouped_matmul_maps(const tile_variant_info *v, const tile_grouped_matmul_args *g) {
    if (param(v, "WARPGROUPS") < 3) return 0;
    return g->n % 8 == 0 ? 4 : 3;
}

/* ------------------------------------------------------------------ dispatched calls */

/* The public entry points of every op, with the variant their explain names for this device:
 * one launch each, of that variant. */
static void test_dispatched(void **state) {
    (void)state;
    for (int t = 0; t < DTYPES; t++) {
        const tile_dtype dtype = dtypes[t];
        tile_decision d = {.struct_size = sizeof d};
        assert_status(tile_softmax_explain(dtype, ROWS, COLS, COLS, COLS, 256, 0, &d),
                      TILE_STATUS_SUCCESS);
        tile_variant_info v = variant_info(d.variant);
        const int64_t programs = ceil_div(ROWS, param(&v, "ROWS"));
        for (int log_softmax = 0; log_softmax < 2; log_softmax++) {
            const fake_cuda_launch before = recorded();
            assert_status((log_softmax ? tile_log_softmax : tile_softmax)(
                              dtype, DEV(Y), DEV(X), ROWS, COLS, COLS, COLS, STREAM),
                          TILE_STATUS_SUCCESS);
            check_launch(log_softmax ? "tile_log_softmax" : "tile_softmax", &v, &before,
                         programs, GRID_ANY_CAP, 0);
        }
        printf("dispatched %s softmax: %s\n", tile_dtype_string(dtype), v.name);

        /* LayerNorm and RMSNorm of x alone: what tile_norm_explain describes */
        assert_status(tile_norm_explain(dtype, ROWS, COLS, COLS, COLS, 256, 0, &d),
                      TILE_STATUS_SUCCESS);
        v = variant_info(d.variant);
        fake_cuda_launch before = recorded();
        assert_status(tile_layernorm(dtype, DEV(Y), DEV(X), DEV(WEIGHT), DEV(NORM_BIAS),
                                     DEV(MEAN), DEV(RSTD), ROWS, COLS, COLS, COLS, 1e-5f, STREAM),
                      TILE_STATUS_SUCCESS);
        check_launch("tile_layernorm", &v, &before, ceil_div(ROWS, param(&v, "ROWS")),
                     GRID_ANY_CAP, 0);
        before = recorded();
        assert_status(tile_rmsnorm(dtype, DEV(Y), DEV(X), DEV(WEIGHT), DEV(RSTD), ROWS, COLS,
                                   COLS, COLS, 1e-5f, STREAM),
                      TILE_STATUS_SUCCESS);
        check_launch("tile_rmsnorm", &v, &before, ceil_div(ROWS, param(&v, "ROWS")),
                     GRID_ANY_CAP, 0);
        printf("dispatched %s norm: %s\n", tile_dtype_string(dtype), v.name);

        if (dtype == TILE_DTYPE_F32) continue; /* attention and grouped matmul: f16, bf16 */
        const tile_flash_attention_args a = attention_args(dtype, 128, 0);
        assert_status(tile_flash_attention_explain(&a, 0, &d), TILE_STATUS_SUCCESS);
        v = variant_info(d.variant);
        before = recorded();
        assert_status(tile_flash_attention(&a, STREAM), TILE_STATUS_SUCCESS);
        check_launch("tile_flash_attention", &v, &before, attention_programs(&v, &a),
                     GRID_ANY_CAP, attention_maps(&v));
        printf("dispatched %s attention: %s\n", tile_dtype_string(dtype), v.name);

        const tile_grouped_matmul_args g = grouped_matmul_args(dtype, 1);
        assert_status(tile_grouped_matmul_explain(&g, 0, &d), TILE_STATUS_SUCCESS);
        v = variant_info(d.variant);
        before = recorded();
        assert_status(tile_grouped_matmul(&g, STREAM), TILE_STATUS_SUCCESS);
        check_launch("tile_grouped_matmul", &v, &before, grouped_matmul_programs(&v, &g),
                     GRID_CAPPED, grouped_matmul_maps(&v, &g));
        printf("dispatched %s grouped matmul: %s\n", tile_dtype_string(dtype), v.name);
    }
}

/* ------------------------------------------------------------------ every variant, forced */

/* Counts for the summary line of each op (start one with the clamped launches so far). */
typedef struct tally {
    int clamped_before;
    int variants, launched_variants, launches, clustered, refused;
} tally;
static void tally_variant(tally *t, const tile_variant_info *v, int launches, int refusals) {
    t->variants++;
    t->launched_variants += launches > 0;
    t->launches += launches;
    t->clustered += launches > 0 && v->cluster > 1;
    t->refused += refusals;
}
static void print_tally(const char *op, tile_dtype dtype, const tally *t) {
    printf("forced %s %s: %d of %d variants launched (%d launches, %d clamped to the resident "
           "count; %d of the variants clustered), %d calls refused\n",
           tile_dtype_string(dtype), op, t->launched_variants, t->variants, t->launches,
           clamped - t->clamped_before, t->clustered, t->refused);
    assert_true(t->variants > 0);
    assert_true(t->launched_variants > 0);
}

/* Every softmax variant, each dtype, at its own width (max_cols, or COLS for any width): those
 * the device can run launch; the others are refused before anything is launched. A one-pass
 * variant also refuses rows twice its width. */
static void test_softmax(void **state) {
    (void)state;
    int clustered_sm90 = 0;
    for (int t = 0; t < DTYPES; t++) {
        tally sum = {.clamped_before = clamped};
        tile_variant_info v;
        FOR_VARIANTS(i, "softmax", dtypes[t], v) {
            const tile_variant_info *info = &v;
            const int64_t cols = v.max_cols ? v.max_cols : COLS;
            fake_cuda_launch before = recorded();
            tile_status s = tile_softmax_variant(i, i % 2, dtypes[t], DEV(Y), DEV(X), ROWS, cols,
                                                 cols, cols, STREAM);
            const int launched = check_forced("its width", info, &before, s, 0,
                                              ceil_div(ROWS, param(info, "ROWS")), GRID_ANY_CAP,
                                              0);
            int refused = !launched;
            if (v.max_cols) {
                before = recorded();
                s = tile_softmax_variant(i, 0, dtypes[t], DEV(Y), DEV(X), ROWS, 2 * cols,
                                         2 * cols, 2 * cols, STREAM);
                check_refused("twice its width", info, &before, s, 1);
                refused++;
            }
            tally_variant(&sum, info, launched, refused);
        }
        print_tally("softmax", dtypes[t], &sum);
        clustered_sm90 += sum.clustered;
    }
    if (arch == 90) assert_true(clustered_sm90 > 0); /* the sm_90 grids have cluster variants */
}

/* Every norm variant, each dtype, at its own width, through tile_add_norm_variant: the norm
 * of x alone (LayerNorm, weight, shift and statistics: what a lean variant takes), RMSNorm of
 * residual + x + bias (optional inputs: not a lean variant's), and with dropout (p = 0.1 and
 * a keep mask) LayerNorm of the sum and the norm-less residual dropout: only variants with
 * DROPOUT=1 take those. Each variant runs every call it takes and refuses the others. */
static void test_norm(void **state) {
    (void)state;
    int clustered_sm90 = 0;
    for (int t = 0; t < DTYPES; t++) {
        tally sum = {.clamped_before = clamped};
        tile_variant_info v;
        FOR_VARIANTS(i, "norm", dtypes[t], v) {
            const tile_variant_info *info = &v;
            /* pointwise: a program a tile of a row (BLOCK_N columns), norm-less calls alone;
             * rows of 3 tiles of the widest and a ragged fourth, so every tile count differs */
            const int pointwise = param(info, "POINTWISE") == 1;
            const int64_t cols = pointwise ? 3 * 8192 + 8 : v.max_cols ? v.max_cols : COLS;
            const int dropout = param(info, "DROPOUT") == 1, lean = param(info, "LEAN") == 1;
            const int64_t programs = ceil_div(ROWS, param(info, "ROWS")) *
                                     (pointwise ? ceil_div(cols, param(info, "BLOCK_N")) : 1);
            const tile_add_norm_args base = {
                .struct_size = sizeof base, .dtype = dtypes[t], .rows = ROWS, .cols = cols,
                .x = DEV(X), .ld_x = cols, .eps = 1e-5f, .seed = 42, .offset = 7};
            struct {
                const char *what;
                tile_add_norm_args args;
                int optional_inputs, needs_dropout;
            } calls[5] = {
                {"LayerNorm of x", base, 0, 0},
                {"RMSNorm of residual + x + bias", base, 1, 0},
                {"LayerNorm of residual + dropout(x)", base, 1, 1},
                {"residual + dropout(x + bias)", base, 1, 1},
                {"residual + x + bias", base, 1, 0},
            };
            tile_add_norm_args *a = &calls[0].args;
            a->norm = TILE_NORM_LAYER, a->y = DEV(Y), a->ld_y = cols;
            a->weight = DEV(WEIGHT), a->norm_bias = DEV(NORM_BIAS);
            a->mean = DEV(MEAN), a->rstd = DEV(RSTD);
            a = &calls[1].args;
            a->norm = TILE_NORM_RMS, a->y = DEV(Y), a->ld_y = cols, a->s = DEV(S), a->ld_s = cols;
            a->residual = DEV(RESIDUAL), a->ld_residual = cols, a->bias = DEV(BIAS);
            a->weight = DEV(WEIGHT), a->rstd = DEV(RSTD);
            a = &calls[2].args;
            a->norm = TILE_NORM_LAYER, a->y = DEV(Y), a->ld_y = cols, a->s = DEV(S), a->ld_s = cols;
            a->residual = DEV(RESIDUAL), a->ld_residual = cols, a->p = 0.1f, a->mask = DEV(MASK);
            a->weight = DEV(WEIGHT), a->norm_bias = DEV(NORM_BIAS);
            a->mean = DEV(MEAN), a->rstd = DEV(RSTD);
            a = &calls[3].args;
            a->norm = TILE_NORM_NONE, a->s = DEV(S), a->ld_s = cols, a->residual = DEV(RESIDUAL);
            a->ld_residual = cols, a->bias = DEV(BIAS), a->p = 0.1f, a->mask = DEV(MASK);
            a = &calls[4].args;
            a->norm = TILE_NORM_NONE, a->s = DEV(S), a->ld_s = cols, a->residual = DEV(RESIDUAL);
            a->ld_residual = cols, a->bias = DEV(BIAS);
            int launches = 0, refused = 0;
            for (int c = 0; c < 5; c++) {
                const int lacks = (calls[c].optional_inputs && lean) ||
                                  (calls[c].needs_dropout && !dropout) ||
                                  (pointwise && calls[c].args.norm != TILE_NORM_NONE);
                const fake_cuda_launch before = recorded();
                const tile_status s = tile_add_norm_variant(i, &calls[c].args, STREAM);
                const int launched = check_forced(calls[c].what, info, &before, s, lacks,
                                                  programs, GRID_ANY_CAP, 0);
                launches += launched;
                refused += !launched;
            }
            tally_variant(&sum, info, launches, refused);
        }
        print_tally("norm", dtypes[t], &sum);
        clustered_sm90 += sum.clustered;
    }
    if (arch == 90) assert_true(clustered_sm90 > 0);
}

/* Every attention variant, f16 and bf16, at its head width (max_cols is HEAD_DIM), without
 * and with the causal mask. A causal call launches one program per query block; a
 * non-causal one may be clamped to what stays resident (the `ws` variants are persistent;
 * the public API does not say which variant is, so either count passes). Warp-specialized
 * variants encode q, k and v as tensor maps first. Not checked: the order in which a
 * persistent program walks its query blocks, and the head groups (the kernel's argument
 * block is opaque to the fake). */
static void test_attention(void **state) {
    (void)state;
    for (int t = 1; t < DTYPES; t++) {
        tally sum = {.clamped_before = clamped};
        tile_variant_info v;
        FOR_VARIANTS(i, "attention", dtypes[t], v) {
            const tile_variant_info *info = &v;
            int launches = 0;
            for (int causal = 0; causal < 2; causal++) {
                const tile_flash_attention_args a =
                    attention_args(dtypes[t], (int32_t)v.max_cols, causal);
                const fake_cuda_launch before = recorded();
                const tile_status s = tile_flash_attention_variant(i, &a, STREAM);
                launches += check_forced(causal ? "causal" : "not causal", info, &before, s, 0,
                                         attention_programs(info, &a),
                                         causal ? GRID_ALL : GRID_ANY_CAP, attention_maps(info));
            }
            /* Decode calls (docs/api.md): where the query heads of each key/value head can be
             * read as one sequence they are, so the programs are ceil(ratio x seqlen_q /
             * BLOCK_M) a key/value head of each sequence, not ceil(seqlen_q / BLOCK_M) a query
             * head. */
            for (int c = 0; c < DECODE_CASES; c++) {
                const decode_case *dc = &decode_cases[c];
                const tile_flash_attention_args d = decode_args(dtypes[t], (int32_t)v.max_cols, dc);
                const int folded = dc->folds == FOLD_STRIDES ||
                                   (dc->folds == FOLD_KERNELS && !attention_maps(info));
                const int64_t ratio = d.heads_q / d.heads_kv,
                              programs = folded ? ceil_div(ratio * d.seqlen_q, param(info, "BLOCK_M")) *
                                                      d.heads_kv * d.batch
                                                : attention_programs(info, &d);
                const fake_cuda_launch before = recorded();
                const tile_status s = tile_flash_attention_variant(i, &d, STREAM);
                launches += check_forced(dc->what, info, &before, s, 0, programs,
                                         d.causal && !folded ? GRID_ALL : GRID_ANY_CAP,
                                         attention_maps(info));
            }
            tally_variant(&sum, info, launches, 2 + DECODE_CASES - launches);
        }
        print_tally("attention", dtypes[t], &sum);
    }
    /* A decode call whose folded length would pass 2^31 (2^30 query heads of one key/value
     * head, 2 queries each, BHSD) stays as it is: one program a query head. */
    const int32_t mma = tile_variant_find("attention_bf16_d128_m64_n64_w4");
    assert_true(mma >= 0);
    const tile_variant_info info = variant_info(mma);
    decode_case wide = {"2^30 query heads, 2 queries, BHSD: not folded", 1, 2, 0, 1, 1, FOLD_NONE};
    tile_flash_attention_args d = decode_args(TILE_DTYPE_BF16, 128, &wide);
    d.heads_q = 1 << 30;
    d.batch = 1;
    d.q_batch_stride = d.o_batch_stride = 0; /* one sequence: a lone axis */
    const fake_cuda_launch before = recorded();
    const tile_status s = tile_flash_attention_variant(mma, &d, STREAM);
    check_forced(wide.what, &info, &before, s, 0, attention_programs(&info, &d), GRID_ALL, 0);
}

/* Every grouped matmul variant, f16 and bf16, on more tiles than stay resident and on a few:
 * the variants are persistent (docs/api.md), so the grid is the programs asked for clamped to
 * SMs x resident. Warp-specialized variants encode A, B and (n a multiple of 8) C as tensor maps
 * first. total_m == 0 launches nothing (and encodes nothing). */
static void test_grouped_matmul(void **state) {
    (void)state;
    for (int t = 1; t < DTYPES; t++) {
        tally sum = {.clamped_before = clamped};
        tile_variant_info v;
        FOR_VARIANTS(i, "grouped_matmul", dtypes[t], v) {
            const tile_variant_info *info = &v;
            int launches = 0;
            for (int large = 1; large >= 0; large--) {
                const tile_grouped_matmul_args g = grouped_matmul_args(dtypes[t], large);
                const fake_cuda_launch before = recorded();
                const tile_status s = tile_grouped_matmul_variant(i, &g, STREAM);
                launches += check_forced(large ? "8 groups, 8192 x 4096 x 4096, B [g, k, n]"
                                               : "2 groups, 256 x 256 x 512, B [g, n, k], bias",
                                         info, &before, s, 0, grouped_matmul_programs(info, &g),
                                         GRID_CAPPED, grouped_matmul_maps(info, &g));
            }
            tile_grouped_matmul_args empty = grouped_matmul_args(dtypes[t], 0);
            empty.total_m = 0;
            const fake_cuda_launch ahead = recorded(), *before = &ahead;
            const tile_status s = tile_grouped_matmul_variant(i, &empty, STREAM);
            if (runs_here(info)) {
                const fake_cuda_launch launch = recorded(), *l = &launch;
                const char *what = "total_m 0";
                assert_status(s, TILE_STATUS_SUCCESS);
                EXPECT(l->count == before->count && l->tensor_maps == before->tensor_maps);
            } else {
                check_refused("total_m 0", info, before, s, 0);
            }
            tally_variant(&sum, info, launches, 2 - launches);
        }
        print_tally("grouped_matmul", dtypes[t], &sum);
    }
}

/* Layouts whose strides validation leaves out (an axis of one position: A or C of one row, B
 * of one column) or that no tensor map takes: explain names what the call launches, and forcing
 * that variant succeeds. (A review found the tensor-map variants handed such strides to the
 * driver as given, which refused them: the call then ran an mma.sync variant instead of the
 * one explain named, and forcing explain's pick failed.) */
static void test_grouped_matmul_lone_axes(void **state) {
    (void)state;
    for (int c = 0; c < 4; c++) {
        tile_grouped_matmul_args g = grouped_matmul_args(TILE_DTYPE_BF16, 1);
        const char *what = "one row, lda 1025";
        g.total_m = 1, g.n = g.k = 1024, g.lda = 1025, g.ldc = 1024;
        g.b_k_stride = 1, g.b_n_stride = 1024, g.b_group_stride = 1 << 20;
        if (c == 1) { /* one column of B, K-major, 3 elements apart (never stepped) */
            what = "n 1, b_n_stride 3";
            g.groups = 4, g.total_m = 4096, g.n = 1, g.k = 1024, g.lda = 1024, g.ldc = 8;
            g.b_k_stride = 1, g.b_n_stride = 3, g.b_group_stride = 1024;
        } else if (c == 2) { /* one row of C at a stride whose bytes overflow int64 */
            what = "one row, ldc 2^62";
            g.lda = 1024, g.ldc = (int64_t)1 << 62;
        } else if (c == 3) { /* one k row of B, N-major, 3 elements from the next (never) */
            what = "k 1, b_k_stride 3";
            g.groups = 2, g.total_m = 256, g.k = 1, g.n = 1024, g.lda = 8, g.ldc = 1024;
            g.b_n_stride = 1, g.b_k_stride = 3, g.b_group_stride = 1024;
        }
        /* the tensor the substituted stride belongs to, and the stride a map should take: just
         * past its row, rounded up to 8 elements */
        const void *lone = c == 0 ? g.a : c == 2 ? g.c : g.b;
        const unsigned long long lone_stride = (unsigned long long)((c >= 2 ? g.n : g.k) + 7) / 8 * 8 * 2;
        tile_decision d = {.struct_size = sizeof d};
        assert_status(tile_grouped_matmul_explain(&g, 0, &d), TILE_STATUS_SUCCESS);
        const tile_variant_info v = variant_info(d.variant);
        for (int forced = 0; forced < 2; forced++) {
            const fake_cuda_launch before = recorded();
            assert_status(forced ? tile_grouped_matmul_variant(d.variant, &g, STREAM)
                                 : tile_grouped_matmul(&g, STREAM),
                          TILE_STATUS_SUCCESS);
            const fake_cuda_launch l = recorded();
            if (l.count != before.count + 1 || !l.kernel || strcmp(l.kernel, v.name)) {
                print_error("%s (%s): launched %s, explain names %s\n", what,
                            forced ? "forced" : "dispatched", l.kernel ? l.kernel : "nothing",
                            v.name);
                fail();
            }
            if (param(&v, "WARPGROUPS") < 3) continue; /* no tensor maps (sm_80) */
            int found = 0; /* this call's maps of that tensor: the first stride substituted */
            for (int m = before.tensor_maps; m < l.tensor_maps; m++)
                if (l.maps[m % FAKE_CUDA_MAPS].address == lone) {
                    found++;
                    if (l.maps[m % FAKE_CUDA_MAPS].strides[0] != lone_stride) {
                        print_error("%s: a map's stride %llu bytes, want %llu\n", what,
                                    l.maps[m % FAKE_CUDA_MAPS].strides[0], lone_stride);
                        fail();
                    }
                }
            if (!found) {
                print_error("%s: no tensor map of the tensor whose stride is substituted\n", what);
                fail();
            }
        }
        printf("grouped matmul, %s: %s\n", what, v.name);
    }
}

/* ------------------------------------------------------------------ setup */

/* The first call loads the driver: it must be the fake, on the device it plays. */
static int setup(void **state) {
    (void)state;
    const char *e = getenv("EXPECT_PDL");
    if (e && strcmp(e, "0") && strcmp(e, "1")) {
        fprintf(stderr, "EXPECT_PDL is \"%s\": 0 or 1\n", e);
        return -1;
    }
    expect_pdl = !e || !strcmp(e, "1");
    const tile_status s = tile_device_arch(&arch);
    if (s != TILE_STATUS_SUCCESS) {
        fprintf(stderr, "tile_device_arch: %s: %s\n", tile_status_string(s), tile_last_error());
        return -1;
    }
    const char *cc = getenv("FAKE_CUDA_CC");
    if (arch != (cc ? atoi(cc) : 90)) {
        fprintf(stderr, "device is sm_%d, FAKE_CUDA_CC %s\n", arch, cc ? cc : "unset (90)");
        return -1;
    }
    fake = dlopen(FAKE_CUDA, RTLD_NOW | RTLD_NOLOAD);
    last_launch = fake ? (fake_cuda_last_launch_fn *)dlsym(fake, FAKE_CUDA_LAST_LAUNCH) : NULL;
    if (!last_launch) {
        fprintf(stderr, "%s is not loaded, or lacks %s\n", FAKE_CUDA, FAKE_CUDA_LAST_LAUNCH);
        return -1;
    }
    printf("sm_%d, FAKE_CUDA_DRIVER %s, FAKE_CUDA_PTX %s, FUSEDOPS_PDL %s: expecting %s\n", arch,
           getenv("FAKE_CUDA_DRIVER") ? getenv("FAKE_CUDA_DRIVER") : "unset",
           getenv("FAKE_CUDA_PTX") ? getenv("FAKE_CUDA_PTX") : "unset",
           getenv("FUSEDOPS_PDL") ? getenv("FUSEDOPS_PDL") : "unset",
           expect_pdl ? "PDL" : "no PDL");
    return 0;
}

static int teardown(void **state) {
    (void)state;
    if (fake) dlclose(fake); /* our reference; the library keeps its own */
    return 0;
}

int main(void) {
    /* before any library call: the driver is loaded once per process */
    if (setenv("FUSEDOPS_LIBCUDA", FAKE_CUDA, 1)) return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dispatched),
        cmocka_unit_test(test_softmax),
        cmocka_unit_test(test_norm),
        cmocka_unit_test(test_attention),
        cmocka_unit_test(test_attention_splits),
        cmocka_unit_test(test_attention_varlen_maps),
        cmocka_unit_test(test_attention_walk_order),
        cmocka_unit_test(test_grouped_matmul),
        cmocka_unit_test(test_grouped_matmul_lone_axes),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
