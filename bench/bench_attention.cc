// bench_attention: tile_flash_attention (forward) under Google Benchmark, timed with CUDA events
// (manual time), reported as TFLOP/s. See bench/README.md. Timing, buffer rotation and counters
// are bench_softmax's (bench_gpu.h).
//
//   bench_attention [--variant=NAME] [--shapes=BxHxSxD[xKV],...] [--benchmark_* flags]
//   FUSEDOPS_BENCH_VARIANT=NAME, FUSEDOPS_BENCH_SHAPES=...  (the same, from the environment)
//
// Exit codes: 0 all benchmarks ran and gave correct results, 1 a call failed or gave wrong
// results, 2 usage, 77 no GPU (ctest SKIP_RETURN_CODE).
//
// Names: attention/<dtype>/<batch>x<heads_q>x<seqlen>x<head_dim>[_kv<heads_kv>]/<full|causal>
// (Google Benchmark appends /manual_time). seqlen_q = seqlen_k = seqlen; GQA where heads_kv <
// heads_q. Layout BSHD, contiguous: q and o [batch, seqlen, heads_q, head_dim], k and v
// [batch, seqlen, heads_kv, head_dim]; scale 1 / sqrt(head_dim); no LSE.
//
// FLOPs counted: 4 * batch * heads_q * seqlen_q * seqlen_k * head_dim (the two matmuls, Q K^T
// and P V, at 2 FLOPs a multiply-add), halved for causal; the softmax's exponentials are not
// counted (FlashAttention's convention, so TFLOP/s compares with other reports). No measured
// matmul ceiling exists in bench_gpu.h, so there is no fraction-of-peak counter; GB/s counts q,
// k, v read once and o written once (a lower bound of the traffic; frac_copy divides it by the
// copy bandwidth and is small for these compute-bound shapes).
//
// Inputs are uniform random, never zeros: q and k in [-2, 2) (scores of standard deviation
// about 1.3 after the 1/sqrt(d) scale, so the softmax is far from uniform), v in [-1, 1).
// Buffer sets (q, k, v, o) rotate over copies holding at least max(256 MiB, 3 x L2) in all, at
// most 8. Before timing, o is poisoned (NaN), every set runs once, and five query rows of set 0
// (first and last row of the first (batch, head), a middle row of a middle one, first and last
// row of the last) are checked against a float64 reference (bench_check_attention_row).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "bench_gpu.h"
#include "fusedops.h"

namespace {

struct AttnShape {
    int64_t batch, heads_q, seqlen, head_dim, heads_kv;
};

// Keep in step with ATTENTION_CASES in bench/vs_torch.py.
const AttnShape kShapes[] = {
    {16, 16, 1024, 64, 16}, {8, 16, 2048, 128, 16},  {4, 16, 4096, 128, 16},
    {2, 16, 8192, 128, 16}, {1, 16, 16384, 128, 16},
    {4, 32, 4096, 128, 8},  // GQA: 4 query heads per key/value head
};
// fp16 on one shape only: the kernels are the same code with another mma type.
const AttnShape kF16Shape = {8, 16, 2048, 128, 16};

constexpr int kMaxCopies = kBenchMaxCopies;

BenchSuite g;

// Elements of q (o) and of k (v) for a shape.
size_t q_elems(const AttnShape &s) {
    return static_cast<size_t>(s.batch * s.seqlen * s.heads_q * s.head_dim);
}
size_t kv_elems(const AttnShape &s) {
    return static_cast<size_t>(s.batch * s.seqlen * s.heads_kv * s.head_dim);
}

// The buffers of the last (dtype, shape) benchmarked: benchmarks are registered so that the full
// and causal runs of one dtype and shape follow each other and share them. Host copies of q, k,
// v (dtype storage, as uploaded) stay for the check.
struct Buffers {
    tile_dtype dtype = TILE_DTYPE_BF16;
    AttnShape shape = {};
    int copies = 0;
    size_t q_bytes = 0, kv_bytes = 0;
    uint64_t q[kMaxCopies] = {}, k[kMaxCopies] = {}, v[kMaxCopies] = {}, o[kMaxCopies] = {};
    std::vector<unsigned char> q_host, k_host, v_host;
};
Buffers g_buf;

bool same_shape(const AttnShape &a, const AttnShape &b) {
    return a.batch == b.batch && a.heads_q == b.heads_q && a.seqlen == b.seqlen &&
           a.head_dim == b.head_dim && a.heads_kv == b.heads_kv;
}

void release_buffers() {
    Buffers &b = g_buf;
    for (int i = 0; i < b.copies; i++)
        for (uint64_t p : {b.q[i], b.k[i], b.v[i], b.o[i]}) bench_free(p);
    g_buf = Buffers();
}

void prepare_buffers(tile_dtype dtype, const AttnShape &s, int copies) {
    Buffers &b = g_buf;
    if (b.copies && b.dtype == dtype && same_shape(b.shape, s)) return;
    release_buffers();
    b.dtype = dtype;
    b.shape = s;
    b.copies = copies;
    const size_t elem = bench_dtype_size(dtype);
    b.q_bytes = q_elems(s) * elem;
    b.kv_bytes = kv_elems(s) * elem;
    const uint64_t tag = static_cast<uint64_t>(s.seqlen * 1000 + s.head_dim);
    bench_make_input(dtype, b.q, copies, &b.q_host, q_elems(s), 0x5eed5000u + tag, -2.0f, 2.0f);
    bench_make_input(dtype, b.k, copies, &b.k_host, kv_elems(s), 0x5eed6000u + tag, -2.0f, 2.0f);
    bench_make_input(dtype, b.v, copies, &b.v_host, kv_elems(s), 0x5eed7000u + tag, -1.0f, 1.0f);
    for (int i = 0; i < copies; i++) b.o[i] = bench_alloc(b.q_bytes);
    bench_sync();
}

// Set k as tile_flash_attention_args: BSHD, contiguous, fixed lengths.
tile_flash_attention_args make_args(bool causal, int k) {
    const Buffers &b = g_buf;
    const AttnShape &s = b.shape;
    tile_flash_attention_args a = bench_init_args(
        "bench_attention", "tile_flash_attention_init", tile_flash_attention_init);
    a.dtype = b.dtype;
    a.batch = static_cast<int32_t>(s.batch);
    a.heads_q = static_cast<int32_t>(s.heads_q);
    a.heads_kv = static_cast<int32_t>(s.heads_kv);
    a.head_dim = static_cast<int32_t>(s.head_dim);
    a.causal = causal ? 1 : 0;
    a.seqlen_q = s.seqlen;
    a.seqlen_k = s.seqlen;
    a.scale = 0.0f;  // 1 / sqrt(head_dim)
    a.o = bench_ptr(b.o[k]);
    a.q = bench_ptr(b.q[k]);
    a.k = bench_ptr(b.k[k]);
    a.v = bench_ptr(b.v[k]);
    const int64_t d = s.head_dim;
    a.q_head_stride = a.o_head_stride = d;
    a.q_seq_stride = a.o_seq_stride = s.heads_q * d;
    a.q_batch_stride = a.o_batch_stride = s.seqlen * s.heads_q * d;
    a.k_head_stride = a.v_head_stride = d;
    a.k_seq_stride = a.v_seq_stride = s.heads_kv * d;
    a.k_batch_stride = a.v_batch_stride = s.seqlen * s.heads_kv * d;
    return a;
}

// Five query rows of set 0 against the float64 reference. Returns false with the reason.
bool check_rows(bool causal, std::string *why) {
    const Buffers &b = g_buf;
    const AttnShape &s = b.shape;
    const size_t elem = bench_dtype_size(b.dtype);
    const int64_t d = s.head_dim, group = s.heads_q / s.heads_kv;
    struct Row {
        int64_t batch, head, row;
    };
    const Row rows[] = {{0, 0, 0},
                        {0, 0, s.seqlen - 1},
                        {s.batch / 2, s.heads_q / 2, s.seqlen / 2},
                        {s.batch - 1, s.heads_q - 1, 0},
                        {s.batch - 1, s.heads_q - 1, s.seqlen - 1}};
    std::vector<unsigned char> o(static_cast<size_t>(d) * elem);
    int64_t bad = 0;
    double worst = 0;
    for (const Row &r : rows) {
        // Element offsets (BSHD) of the query row and of key/value 0 of its kv head.
        const int64_t q_at = ((r.batch * s.seqlen + r.row) * s.heads_q + r.head) * d;
        const int64_t kv_at = (r.batch * s.seqlen * s.heads_kv + r.head / group) * d;
        // Bottom-right causal with seqlen_q == seqlen_k: row i sees keys 0..i.
        const int64_t keys = causal ? r.row + 1 : s.seqlen;
        bench_download(o.data(), b.o[0] + static_cast<uint64_t>(q_at) * elem, o.size());
        char label[160];
        std::snprintf(label, sizeof label,
                      "attention %s %" PRId64 "x%" PRId64 "x%" PRId64 "x%" PRId64 " kv%" PRId64
                      "%s batch %" PRId64 " head %" PRId64 " row %" PRId64,
                      tile_dtype_string(b.dtype), s.batch, s.heads_q, s.seqlen, d, s.heads_kv,
                      causal ? " causal" : "", r.batch, r.head, r.row);
        double err = 0;
        bad += bench_check_attention_row(
            b.dtype, d, keys, 1.0 / std::sqrt(static_cast<double>(d)),
            b.q_host.data() + static_cast<size_t>(q_at) * elem,
            b.k_host.data() + static_cast<size_t>(kv_at) * elem, s.heads_kv * d,
            b.v_host.data() + static_cast<size_t>(kv_at) * elem, s.heads_kv * d, o.data(), label,
            &err);
        if (err > worst || std::isnan(err)) worst = err;
    }
    if (bad) {
        char msg[160];
        std::snprintf(msg, sizeof msg,
                      "wrong results: %" PRId64 " mismatches in 5 checked rows (max abs error "
                      "%.3g)", bad, worst);
        *why = msg;
        return false;
    }
    return true;
}

void bm_attention(benchmark::State &state, tile_dtype dtype, AttnShape shape, bool causal) {
    const double elem = static_cast<double>(bench_dtype_size(dtype));
    const double set_bytes = 2.0 * static_cast<double>(q_elems(shape)) * elem +
                             2.0 * static_cast<double>(kv_elems(shape)) * elem;  // q, o, k, v
    const double flops = 4.0 * static_cast<double>(shape.batch) *
                         static_cast<double>(shape.heads_q) * static_cast<double>(shape.seqlen) *
                         static_cast<double>(shape.seqlen) * static_cast<double>(shape.head_dim) *
                         (causal ? 0.5 : 1.0);
    const int copies = bench_rotation_copies(set_bytes, g.gpu.l2_bytes);
    const int batch = bench_batch_size(set_bytes);
    prepare_buffers(dtype, shape, copies);
    Buffers &b = g_buf;

    std::vector<tile_flash_attention_args> args;
    for (int k = 0; k < b.copies; k++) args.push_back(make_args(causal, k));

    // Outputs poisoned (0xff bytes are NaN in f16 and bf16), one launch per set, the check.
    bench_struct_op(
        state, g, args, "tile_flash_attention", tile_flash_attention,
        tile_flash_attention_variant, tile_flash_attention_explain, batch, set_bytes, flops,
        [&b] {
            for (int i = 0; i < b.copies; i++) bench_memset(b.o[i], 0xff, b.q_bytes);
        },
        [causal](std::string *why) { return check_rows(causal, why); });
    state.counters["GFLOP"] = flops / 1e9;
}

// "BxHxSxD[xKV][,...]" into *out (KV defaults to H); false when malformed.
bool parse_shapes(const char *text, std::vector<AttnShape> *out) {
    out->clear();
    const std::string s(text);
    size_t at = 0;
    while (at <= s.size()) {
        const size_t comma = std::min(s.find(',', at), s.size());
        const std::string item = s.substr(at, comma - at);
        long long v[5] = {0, 0, 0, 0, 0};
        char tail;
        const int n = std::sscanf(item.c_str(), "%lldx%lldx%lldx%lldx%lld%c", &v[0], &v[1], &v[2],
                                  &v[3], &v[4], &tail);
        if (n != 4 && n != 5) return false;
        if (n == 4) v[4] = v[1];
        for (long long x : v)
            if (x < 1) return false;
        out->push_back({v[0], v[1], v[2], v[3], v[4]});
        at = comma + 1;
    }
    return !out->empty();
}

std::string shape_name(const AttnShape &s) {
    std::string name = std::to_string(s.batch) + "x" + std::to_string(s.heads_q) + "x" +
                       std::to_string(s.seqlen) + "x" + std::to_string(s.head_dim);
    if (s.heads_kv != s.heads_q) name += "_kv" + std::to_string(s.heads_kv);
    return name;
}

void print_help() {
    benchmark::PrintDefaultHelp();
    std::fprintf(stdout,
                 "bench_attention options:\n"
                 "  [--variant=NAME]          time this variant of op attention\n"
                 "                            (tile_flash_attention_variant) instead of the\n"
                 "                            dispatcher's pick; env FUSEDOPS_BENCH_VARIANT\n"
                 "  [--shapes=BxHxSxD[xKV],...]  these shapes (batch x query heads x seqlen x\n"
                 "                            head_dim [x key/value heads]), bf16 and f16, full\n"
                 "                            and causal, instead of the built-in list; env\n"
                 "                            FUSEDOPS_BENCH_SHAPES\n"
                 "Exit: 0 ok, 1 a call failed or gave wrong results, 2 usage, 77 no GPU.\n");
}

}  // namespace

int main(int argc, char **argv) {
    benchmark::Initialize(&argc, argv, print_help);
    const char *variant, *shapes_text;
    if (!bench_take_options(&argc, argv, &variant, &shapes_text)) return 2;

    // (dtype, shape) in the order they run: full and causal of each share their buffers.
    std::vector<std::pair<tile_dtype, AttnShape>> cases;
    if (shapes_text && *shapes_text) {
        std::vector<AttnShape> shapes;
        if (!parse_shapes(shapes_text, &shapes)) {
            std::fprintf(stderr,
                         "bench_attention: --shapes is BxHxSxD[xKV][,...] (batch, query heads, "
                         "seqlen, head_dim, key/value heads), got '%s'\n",
                         shapes_text);
            return 2;
        }
        for (tile_dtype dt : {TILE_DTYPE_BF16, TILE_DTYPE_F16})
            for (const AttnShape &s : shapes) cases.push_back({dt, s});
    } else {
        for (const AttnShape &s : kShapes) cases.push_back({TILE_DTYPE_BF16, s});
        cases.push_back({TILE_DTYPE_F16, kF16Shape});
    }
    for (const auto &c : cases) {
        const AttnShape &s = c.second;
        if (s.heads_q % s.heads_kv) {
            std::fprintf(stderr, "bench_attention: %s: query heads must be a multiple of the "
                         "key/value heads\n", shape_name(s).c_str());
            return 2;
        }
    }

    tile_variant_info forced;
    const int exit_code = bench_start("bench_attention", "attention", variant, &g.gpu, &g.copy_gbps,
                                      &g.forced, &forced, &g.forced_name);
    if (exit_code >= 0) return exit_code;
    benchmark::AddCustomContext("attention_flops",
                                "4*batch*heads_q*seqlen_q*seqlen_k*head_dim, halved for causal");

    for (const auto &c : cases) {
        const tile_dtype dtype = c.first;
        const AttnShape &s = c.second;
        // A forced variant: only its dtype, only heads it takes (max_cols is its HEAD_DIM).
        if (g.forced >= 0 && (dtype != forced.dtype ||
                              (forced.max_cols && s.head_dim > forced.max_cols)))
            continue;
        for (bool causal : {false, true}) {
            const std::string name = std::string("attention/") + tile_dtype_string(dtype) + "/" +
                                     shape_name(s) + (causal ? "/causal" : "/full");
            benchmark::RegisterBenchmark(name.c_str(), bm_attention, dtype, s, causal)
                ->UseManualTime()
                ->Unit(benchmark::kMillisecond);
        }
    }

    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    release_buffers();
    bench_gpu_close();
    return g.failed ? 1 : 0;
}
