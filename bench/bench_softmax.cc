// bench_softmax: tile_softmax and tile_log_softmax under Google Benchmark, timed with CUDA
// events (manual time), reported as GB/s and as a fraction of the device's measured copy
// bandwidth. See bench/README.md.
//
//   bench_softmax [--variant=NAME] [--shapes=RxC,...] [--benchmark_* flags]
//   FUSEDOPS_BENCH_VARIANT=NAME, FUSEDOPS_BENCH_SHAPES=RxC,...  (the same, from the environment)
//
// Exit codes: 0 all benchmarks ran and gave correct results, 1 a call failed or gave wrong
// results, 2 usage, 77 no GPU (ctest SKIP_RETURN_CODE).
//
// How it is timed: an event pair around a batch of `batch` back-to-back launches on one stream,
// each on the next of `copies` input/output buffer pairs; the batch counts as `batch`
// iterations, so Time is the batch's time divided by `batch`. One event pair per launch would
// add the event and launch gap (a few microseconds) to kernels that themselves take 5-10 us on
// the small shapes; a batch leaves only one gap, at its start, and the host enqueues the rest
// while the GPU runs, as it does for a caller that launches back to back. The batch moves about
// 4 GB, so that gap is under 1% of it. Rotating the buffers (at least 256 MiB and 3x L2 in all,
// at most 8 pairs) means each launch reads input that the previous launches have pushed out of
// L2.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench_gpu.h"
#include "fusedops.h"

namespace {

using Shape = bench_shape;

// Keep in step with SHAPES in bench/vs_torch.py.
const Shape kShapes[] = {
    {4096, 1024},  {8192, 2048},   {4096, 4096},   {8192, 8192},
    {32768, 4096}, {2048, 16384},  {1024, 32768},  {1024, 65536},
    {1024, 131072},
    {32, 1 << 20}, {4, 1 << 20},  // vocabulary-sized rows: few programs unless a row is split
    {128, 128256},                // Llama 3 vocabulary: a width that is not a power of two
};
// log_softmax on a few shapes only: its cost differs from softmax by one log per row.
const Shape kLogShapes[] = {{4096, 4096}, {1024, 32768}, {32, 1 << 20}};

constexpr int kMaxCopies = kBenchMaxCopies;

BenchSuite g;

// The buffers of the last (dtype, shape) benchmarked; benchmarks are registered so that those
// of one dtype and shape run one after another and share them.
struct Buffers {
    tile_dtype dtype = TILE_DTYPE_F32;
    int64_t rows = 0, cols = 0;
    size_t bytes = 0;  // one x (or y): rows * cols elements
    int copies = 0;
    uint64_t x[kMaxCopies] = {}, y[kMaxCopies] = {};
    std::vector<float> x_first, x_last;  // rows 0 and rows-1 of x, as the GPU sees them
};
Buffers g_buf;

void release_buffers() {
    for (int i = 0; i < g_buf.copies; i++) {
        bench_free(g_buf.x[i]);
        bench_free(g_buf.y[i]);
    }
    g_buf = Buffers();
}

void prepare_buffers(tile_dtype dtype, Shape s) {
    if (g_buf.copies && g_buf.dtype == dtype && g_buf.rows == s.rows && g_buf.cols == s.cols)
        return;
    release_buffers();
    const size_t n = static_cast<size_t>(s.rows * s.cols), elem = bench_dtype_size(dtype);
    Buffers &b = g_buf;
    b.dtype = dtype;
    b.rows = s.rows;
    b.cols = s.cols;
    b.bytes = n * elem;
    b.copies = bench_rotation_copies(2.0 * static_cast<double>(b.bytes), g.gpu.l2_bytes);

    // Uniform in [-8, 8): no zeros to flatter anything, exp() spans about 7 decades.
    std::vector<unsigned char> packed(b.bytes);
    bench_random(dtype, packed.data(), n, 0x5eed0000u + static_cast<uint64_t>(s.cols), -8.0f, 8.0f);
    b.x_first.resize(static_cast<size_t>(s.cols));
    b.x_last.resize(static_cast<size_t>(s.cols));
    bench_unpack(dtype, b.x_first.data(), packed.data(), b.x_first.size());
    bench_unpack(dtype, b.x_last.data(), packed.data() + (n - static_cast<size_t>(s.cols)) * elem,
                 b.x_last.size());
    for (int i = 0; i < b.copies; i++) {
        b.x[i] = bench_alloc(b.bytes);
        b.y[i] = bench_alloc(b.bytes);
        if (i == 0) bench_upload(b.x[0], packed.data(), b.bytes);
        else bench_copy(b.x[i], b.x[0], b.bytes);
    }
    bench_sync();
}

// Rows 0 and rows-1 of y[0] against the float64 reference. Returns false with the reason.
bool check_rows(int log_softmax, std::string *why) {
    const Buffers &b = g_buf;
    const size_t cols = static_cast<size_t>(b.cols), elem = bench_dtype_size(b.dtype);
    std::vector<unsigned char> raw(cols * elem);
    for (int last = 0; last < 2; last++) {
        const int64_t r = last ? b.rows - 1 : 0;
        bench_download(raw.data(), b.y[0] + static_cast<size_t>(r) * cols * elem, cols * elem);
        char label[96];
        std::snprintf(label, sizeof label, "%s %s %" PRId64 "x%" PRId64 " row %" PRId64,
                      log_softmax ? "log_softmax" : "softmax", tile_dtype_string(b.dtype), b.rows,
                      b.cols, r);
        double err = 0;
        const int64_t bad = bench_check_row(b.dtype, log_softmax,
                                            last ? b.x_last.data() : b.x_first.data(), raw.data(),
                                            b.cols, label, &err);
        if (bad) {
            char msg[160];
            std::snprintf(msg, sizeof msg, "wrong results: %" PRId64 " mismatches in row %" PRId64
                          " (max abs error %.3g)", bad, r, err);
            *why = msg;
            return false;
        }
    }
    return true;
}

void bm_softmax(benchmark::State &state, tile_dtype dtype, Shape shape, int log_softmax) {
    prepare_buffers(dtype, shape);
    Buffers &b = g_buf;
    const double traffic = 2.0 * static_cast<double>(b.bytes);  // reads x once, writes y once
    const int batch = bench_batch_size(traffic);

    std::string label;
    if (g.forced >= 0) {
        label = g.forced_name;
    } else {
        tile_decision d{};
        d.struct_size = sizeof d;
        tile_status s = tile_softmax_explain(dtype, b.rows, b.cols, b.cols, b.cols, 256, 0, &d);
        if (s != TILE_STATUS_SUCCESS) {
            g.failed = true;
            state.SkipWithError(("tile_softmax_explain: " + bench_status_message(s)).c_str());
            return;
        }
        label = bench_variant_name(d.variant);
    }

    auto launch = [&](int k) {
        void *y = bench_ptr(b.y[k]);
        const void *x = bench_ptr(b.x[k]);
        if (g.forced >= 0)
            return tile_softmax_variant(g.forced, log_softmax, dtype, y, x, b.rows, b.cols, b.cols,
                                        b.cols, nullptr);
        return (log_softmax ? tile_log_softmax : tile_softmax)(dtype, y, x, b.rows, b.cols, b.cols,
                                                               b.cols, nullptr);
    };

    // Warm-up (the first call also loads the kernels) over every pair, outputs poisoned first
    // (0xff bytes are NaN in every dtype), then a check that the output is softmax at all.
    for (int i = 0; i < b.copies; i++) bench_memset(b.y[i], 0xff, b.bytes);
    if (!bench_launch_each(state, b.copies, launch)) {
        g.failed = true;
        return;
    }
    std::string why;
    if (!check_rows(log_softmax, &why)) {
        g.failed = true;
        state.SkipWithError((label + ": " + why).c_str());
        return;
    }

    if (!bench_timed_loop(state, batch, b.copies, traffic, 0, g.copy_gbps, label, launch))
        g.failed = true;
}

void print_help() {
    benchmark::PrintDefaultHelp();
    std::fprintf(stdout,
                 "bench_softmax options:\n"
                 "  [--variant=NAME]     time this variant (tile_softmax_variant) instead of the\n"
                 "                       dispatcher's pick; env FUSEDOPS_BENCH_VARIANT\n"
                 "  [--shapes=RxC,...]   these shapes, softmax and log_softmax, instead of the\n"
                 "                       built-in list; env FUSEDOPS_BENCH_SHAPES\n"
                 "Exit: 0 ok, 1 a call failed or gave wrong results, 2 usage, 77 no GPU.\n");
}

}  // namespace

int main(int argc, char **argv) {
    benchmark::Initialize(&argc, argv, print_help);
    const char *variant, *shapes_text;
    if (!bench_take_options(&argc, argv, &variant, &shapes_text)) return 2;

    std::vector<Shape> shapes(std::begin(kShapes), std::end(kShapes));
    std::vector<Shape> log_shapes(std::begin(kLogShapes), std::end(kLogShapes));
    if (shapes_text && *shapes_text) {
        if (!bench_parse_shapes(shapes_text, &shapes)) {
            std::fprintf(stderr, "bench_softmax: --shapes is ROWSxCOLS[,ROWSxCOLS...], got '%s'\n",
                         shapes_text);
            return 2;
        }
        log_shapes = shapes;
    }
    tile_variant_info forced;
    const int exit_code = bench_start("bench_softmax", "softmax", variant, &g.gpu, &g.copy_gbps,
                                      &g.forced, &forced, &g.forced_name);
    if (exit_code >= 0) return exit_code;

    // dtype, then shape, then op: benchmarks of one dtype and shape share their buffers.
    for (int dt = 0; dt < TILE_DTYPE_COUNT_; dt++) {
        const tile_dtype dtype = static_cast<tile_dtype>(dt);
        if (g.forced >= 0 && dtype != forced.dtype) continue;
        for (const Shape &s : shapes) {
            if (g.forced >= 0 && forced.max_cols && s.cols > forced.max_cols) continue;
            for (int log = 0; log < 2; log++) {
                if (log && std::none_of(log_shapes.begin(), log_shapes.end(), [&](const Shape &l) {
                        return l.rows == s.rows && l.cols == s.cols;
                    }))
                    continue;
                const std::string name = std::string(log ? "log_softmax/" : "softmax/") +
                                         tile_dtype_string(dtype) + "/" + std::to_string(s.rows) +
                                         "x" + std::to_string(s.cols);
                benchmark::RegisterBenchmark(name.c_str(), bm_softmax, dtype, s, log)
                    ->UseManualTime()
                    ->Unit(benchmark::kMicrosecond);
            }
        }
    }

    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    release_buffers();
    bench_gpu_close();
    return g.failed ? 1 : 0;
}
