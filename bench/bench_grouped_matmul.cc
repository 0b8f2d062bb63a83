// bench_grouped_matmul: tile_grouped_matmul (mixture-of-experts grouped matrix product) under
// Google Benchmark, timed with CUDA events (manual time), reported as TFLOP/s. See
// bench/README.md. Timing, buffer rotation and counters are bench_softmax's (bench_gpu.h).
//
//   bench_grouped_matmul [--variant=NAME] [--shapes=GxMxKxN,...] [--benchmark_* flags]
//   FUSEDOPS_BENCH_VARIANT=NAME, FUSEDOPS_BENCH_SHAPES=...  (the same, from the environment)
//
// Exit codes: 0 all benchmarks ran and gave correct results, 1 a call failed or gave wrong
// results, 2 usage, 77 no GPU (ctest SKIP_RETURN_CODE).
//
// Names: grouped_matmul/<dtype>/<groups>x<total_m>x<K>x<N>/<kn|nk> (Google Benchmark appends
// /manual_time). C_g = A_g B_g for g < groups, A [total_m, K] and C [total_m, N] dense, B
// [groups, K, N] (kn: N contiguous) or [groups, N, K] (nk: K contiguous, as torch's weight.t()
// views); no bias. Both layouts of a shape read the same B bytes, with other strides.
//
// Routing: the total_m rows are split over the groups in proportions drawn from a symmetric
// Dirichlet(1) with a fixed seed (bench_skewed_group_ends: gamma samples, normalized, rounded to
// whole rows), so some groups get several times the mean and some few rows; the same draw as
// `fusedops bench grouped_matmul` and vs_torch.py --ops grouped_matmul for the same shape.
//
// FLOPs counted: 2 * total_m * N * K (one multiply-add per element of every group's product).
// No measured matmul ceiling exists in bench_gpu.h, so there is no fraction-of-peak counter;
// GB/s counts A read once, the B of every non-empty group read once and C written once (a lower
// bound of the traffic; for few rows per group, as 8x512x4096x14336, B dominates and the shape
// is closer to memory-bound: frac_copy says how close).
//
// Inputs are uniform random in [-1, 1), never zeros. Buffer sets (A, B, C, offsets) rotate
// over copies holding at least max(256 MiB, 3 x L2) in all, at most 8 (B alone is larger than
// that for the built-in shapes: one set). Before timing, C is poisoned (NaN), every set runs
// once, and five rows of set 0 (the first and last row of the first non-empty group, a middle
// row, the first and last row of the last non-empty group) are checked on 256 columns against a
// float64 reference (bench_check_grouped_matmul_row).
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

struct GmmShape {
    int64_t groups, total_m, k, n;
};

// The shapes (a Mixtral-like FFN up projection, a fine-grained MoE with 64 experts, a
// DeepSeek-like layer with 128 experts, and a small decode-time batch); keep in step with
// GROUPED_MATMUL_SHAPES in bench/vs_torch.py.
const GmmShape kShapes[] = {
    {8, 16384, 4096, 14336},
    {64, 16384, 2048, 1408},
    {128, 32768, 7168, 2048},
    {8, 512, 4096, 14336},
};

constexpr double kAlpha = 1.0;    // Dirichlet concentration of the group sizes
constexpr uint64_t kSeed = 7;     // and its seed: as `fusedops bench grouped_matmul`
constexpr int64_t kCheckCols = 256;

BenchSuite g;

// The buffers of the last (dtype, shape) benchmarked: both layouts of one shape run one after
// the other and share them (B's bytes are read as [g, k, n] or [g, n, k]). Host copies of A and
// B (dtype storage, as uploaded) and the group ends stay for the check.
struct Buffers {
    tile_dtype dtype = TILE_DTYPE_BF16;
    GmmShape shape = {};
    int copies = 0;
    size_t a_bytes = 0, b_bytes = 0, c_bytes = 0;
    uint64_t a[kBenchMaxCopies] = {}, b[kBenchMaxCopies] = {}, c[kBenchMaxCopies] = {};
    uint64_t offsets = 0;  // the group ends on the device: the same for every set
    std::vector<unsigned char> a_host, b_host;
    std::vector<int32_t> ends;
};
Buffers g_buf;

bool same_shape(const GmmShape &x, const GmmShape &y) {
    return x.groups == y.groups && x.total_m == y.total_m && x.k == y.k && x.n == y.n;
}

void release_buffers() {
    Buffers &b = g_buf;
    for (int i = 0; i < b.copies; i++)
        for (uint64_t p : {b.a[i], b.b[i], b.c[i]}) bench_free(p);
    if (b.offsets) bench_free(b.offsets);
    g_buf = Buffers();
}

void prepare_buffers(tile_dtype dtype, const GmmShape &s, int copies) {
    Buffers &b = g_buf;
    if (b.copies && b.dtype == dtype && same_shape(b.shape, s)) return;
    release_buffers();
    b.dtype = dtype;
    b.shape = s;
    b.copies = copies;
    const size_t elem = bench_dtype_size(dtype);
    b.a_bytes = static_cast<size_t>(s.total_m * s.k) * elem;
    b.b_bytes = static_cast<size_t>(s.groups * s.k * s.n) * elem;
    b.c_bytes = static_cast<size_t>(s.total_m * s.n) * elem;
    const uint64_t tag = static_cast<uint64_t>(s.groups * 1000003 + s.k * 1009 + s.n);
    bench_make_input(dtype, b.a, copies, &b.a_host, static_cast<size_t>(s.total_m * s.k),
                     0x5eed8000u + tag, -1.0f, 1.0f);
    bench_make_input(dtype, b.b, copies, &b.b_host, static_cast<size_t>(s.groups * s.k * s.n),
                     0x5eed9000u + tag, -1.0f, 1.0f);
    for (int i = 0; i < copies; i++) b.c[i] = bench_alloc(b.c_bytes);
    b.ends.assign(static_cast<size_t>(s.groups), 0);
    bench_skewed_group_ends(static_cast<int32_t>(s.groups), s.total_m, kAlpha, kSeed,
                            b.ends.data());
    b.offsets = bench_alloc(b.ends.size() * sizeof(int32_t));
    bench_upload(b.offsets, b.ends.data(), b.ends.size() * sizeof(int32_t));
    bench_sync();
}

// Set k as tile_grouped_matmul_args: dense A and C, B [g, k, n] or (nk) [g, n, k].
tile_grouped_matmul_args make_args(bool nk, int k) {
    const Buffers &b = g_buf;
    const GmmShape &s = b.shape;
    tile_grouped_matmul_args a = bench_init_args(
        "bench_grouped_matmul", "tile_grouped_matmul_init", tile_grouped_matmul_init);
    a.dtype = b.dtype;
    a.groups = static_cast<int32_t>(s.groups);
    a.total_m = s.total_m;
    a.k = s.k;
    a.n = s.n;
    a.c = bench_ptr(b.c[k]);
    a.a = bench_ptr(b.a[k]);
    a.b = bench_ptr(b.b[k]);
    a.lda = s.k;
    a.ldc = s.n;
    a.b_group_stride = s.k * s.n;
    a.b_k_stride = nk ? 1 : s.n;
    a.b_n_stride = nk ? s.k : 1;
    a.offsets = static_cast<const int32_t *>(bench_ptr(b.offsets));
    return a;
}

// Five rows of set 0 against the float64 reference, on kCheckCols columns. Returns false with
// the reason.
bool check_rows(const tile_grouped_matmul_args &a, std::string *why) {
    const Buffers &b = g_buf;
    const size_t elem = bench_dtype_size(b.dtype);
    // [start, end) of each group
    std::vector<std::pair<int64_t, int64_t>> spans;
    int64_t start = 0;
    for (size_t i = 0; i < b.ends.size(); i++) {
        spans.push_back({start, b.ends[i]});
        start = b.ends[i];
    }
    size_t first = 0, last = spans.size() - 1;
    while (first < spans.size() && spans[first].first == spans[first].second) first++;
    while (last > first && spans[last].first == spans[last].second) last--;
    if (first == spans.size()) return true;  // no rows: nothing to check
    const int64_t rows[] = {spans[first].first, spans[first].second - 1, b.shape.total_m / 2,
                            spans[last].first, spans[last].second - 1};
    std::vector<unsigned char> c(static_cast<size_t>(a.n) * elem);
    int64_t bad = 0;
    double worst = 0, worst_lp = 0;
    for (int64_t m : rows) {
        size_t grp = 0;
        while (m >= spans[grp].second) grp++;
        bench_download(c.data(), b.c[0] + static_cast<uint64_t>(m * a.ldc) * elem, c.size());
        char label[160];
        std::snprintf(label, sizeof label,
                      "grouped_matmul %s %" PRId64 "x%" PRId64 "x%" PRId64 "x%" PRId64
                      " %s row %" PRId64 " (group %zu)",
                      tile_dtype_string(b.dtype), b.shape.groups, b.shape.total_m, b.shape.k,
                      b.shape.n, a.b_k_stride == 1 ? "nk" : "kn", m, grp);
        double err = 0, err_lp = 0;
        bad += bench_check_grouped_matmul_row(
            b.dtype, a.k, a.n, b.a_host.data() + static_cast<size_t>(m * a.lda) * elem,
            b.b_host.data() + static_cast<size_t>(static_cast<int64_t>(grp) * a.b_group_stride) *
                                  elem,
            a.b_k_stride, a.b_n_stride, nullptr, c.data(), kCheckCols, label, &err, &err_lp);
        if (err > worst || std::isnan(err)) worst = err;
        worst_lp = std::max(worst_lp, err_lp);
    }
    if (bad) {
        char msg[200];
        std::snprintf(msg, sizeof msg,
                      "wrong results: %" PRId64 " of 5 checked rows fail (max abs error %.3g, "
                      "fp32-accumulated reference %.3g)", bad, worst, worst_lp);
        *why = msg;
        return false;
    }
    return true;
}

void bm_grouped_matmul(benchmark::State &state, tile_dtype dtype, GmmShape shape, bool nk) {
    const double elem = static_cast<double>(bench_dtype_size(dtype));
    const double set_bytes = static_cast<double>(shape.total_m * shape.k) * elem +
                             static_cast<double>(shape.groups * shape.k * shape.n) * elem +
                             static_cast<double>(shape.total_m * shape.n) * elem;  // A, B, C
    const int copies = bench_rotation_copies(set_bytes, g.gpu.l2_bytes);
    prepare_buffers(dtype, shape, copies);
    Buffers &b = g_buf;
    // Minimum traffic: A read, C written, B of every group with rows read once.
    int64_t used = 0, prev = 0;
    for (int32_t end : b.ends) {
        used += end > prev;
        prev = end;
    }
    const double traffic = static_cast<double>(shape.total_m * (shape.k + shape.n)) * elem +
                           static_cast<double>(used * shape.k * shape.n) * elem;
    const double flops = 2.0 * static_cast<double>(shape.total_m) *
                         static_cast<double>(shape.n) * static_cast<double>(shape.k);
    const int batch = bench_batch_size(traffic);

    std::vector<tile_grouped_matmul_args> args;
    for (int k = 0; k < b.copies; k++) args.push_back(make_args(nk, k));

    // Outputs poisoned (0xff bytes are NaN in f16 and bf16), one launch per set, the check.
    bench_struct_op(
        state, g, args, "tile_grouped_matmul", tile_grouped_matmul, tile_grouped_matmul_variant,
        tile_grouped_matmul_explain, batch, traffic, flops,
        [&b] {
            for (int i = 0; i < b.copies; i++) bench_memset(b.c[i], 0xff, b.c_bytes);
        },
        [&args](std::string *why) { return check_rows(args[0], why); });
    state.counters["GFLOP"] = flops / 1e9;
    state.counters["groups_used"] = static_cast<double>(used);
}

// "GxMxKxN[,...]" into *out; false when malformed.
bool parse_shapes(const char *text, std::vector<GmmShape> *out) {
    out->clear();
    const std::string s(text);
    size_t at = 0;
    while (at <= s.size()) {
        const size_t comma = std::min(s.find(',', at), s.size());
        const std::string item = s.substr(at, comma - at);
        long long v[4] = {0, 0, 0, 0};
        char tail;
        if (std::sscanf(item.c_str(), "%lldx%lldx%lldx%lld%c", &v[0], &v[1], &v[2], &v[3],
                        &tail) != 4)
            return false;
        if (v[0] < 1 || v[0] > 65536 || v[1] < 1 || v[1] > INT32_MAX || v[2] < 1 || v[3] < 1)
            return false;
        out->push_back({v[0], v[1], v[2], v[3]});
        at = comma + 1;
    }
    return !out->empty();
}

std::string shape_name(const GmmShape &s) {
    return std::to_string(s.groups) + "x" + std::to_string(s.total_m) + "x" +
           std::to_string(s.k) + "x" + std::to_string(s.n);
}

void print_help() {
    benchmark::PrintDefaultHelp();
    std::fprintf(stdout,
                 "bench_grouped_matmul options:\n"
                 "  [--variant=NAME]          time this variant of op grouped_matmul\n"
                 "                            (tile_grouped_matmul_variant) instead of the\n"
                 "                            dispatcher's pick; env FUSEDOPS_BENCH_VARIANT\n"
                 "  [--shapes=GxMxKxN,...]    these shapes (groups x total rows x K x N), bf16,\n"
                 "                            B [g,k,n] and [g,n,k], instead of the built-in\n"
                 "                            list; env FUSEDOPS_BENCH_SHAPES\n"
                 "Exit: 0 ok, 1 a call failed or gave wrong results, 2 usage, 77 no GPU.\n");
}

}  // namespace

int main(int argc, char **argv) {
    benchmark::Initialize(&argc, argv, print_help);
    const char *variant, *shapes_text;
    if (!bench_take_options(&argc, argv, &variant, &shapes_text)) return 2;

    std::vector<GmmShape> shapes(std::begin(kShapes), std::end(kShapes));
    if (shapes_text && *shapes_text && !parse_shapes(shapes_text, &shapes)) {
        std::fprintf(stderr,
                     "bench_grouped_matmul: --shapes is GxMxKxN[,...] (groups in [1, 65536], "
                     "total rows in [1, 2^31 - 1], K, N >= 1), got '%s'\n",
                     shapes_text);
        return 2;
    }

    tile_variant_info forced;
    const int exit_code = bench_start("bench_grouped_matmul", "grouped_matmul", variant, &g.gpu,
                                      &g.copy_gbps, &g.forced, &forced, &g.forced_name);
    if (exit_code >= 0) return exit_code;
    benchmark::AddCustomContext("grouped_matmul_flops", "2*total_m*N*K");
    benchmark::AddCustomContext("grouped_matmul_routing",
                                "group sizes from a Dirichlet(1.0) draw, seed 7, rounded to rows");

    const tile_dtype dtype = TILE_DTYPE_BF16;
    if (g.forced >= 0 && forced.dtype != dtype) {
        std::fprintf(stderr, "bench_grouped_matmul: %s is %s; the suite runs bf16\n",
                     g.forced_name.c_str(), tile_dtype_string(forced.dtype));
        return 2;
    }
    for (const GmmShape &s : shapes)
        for (bool nk : {false, true}) {
            const std::string name = std::string("grouped_matmul/") + tile_dtype_string(dtype) +
                                     "/" + shape_name(s) + (nk ? "/nk" : "/kn");
            benchmark::RegisterBenchmark(name.c_str(), bm_grouped_matmul, dtype, s, nk)
                ->UseManualTime()
                ->Unit(benchmark::kMillisecond);
        }

    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    release_buffers();
    bench_gpu_close();
    return g.failed ? 1 : 0;
}
