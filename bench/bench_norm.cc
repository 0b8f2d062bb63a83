// bench_norm: the norm ops (tile_layernorm, tile_rmsnorm, tile_residual_dropout,
// tile_residual_dropout_norm) under Google Benchmark, timed with CUDA events (manual time),
// reported as GB/s and as a fraction of the device's measured copy bandwidth. See
// bench/README.md. Timing, buffer rotation and counters are bench_softmax's (bench_gpu.h).
//
//   bench_norm [--variant=NAME] [--shapes=RxC,...] [--benchmark_* flags]
//   FUSEDOPS_BENCH_VARIANT=NAME, FUSEDOPS_BENCH_SHAPES=RxC,...  (the same, from the environment)
//
// Exit codes: 0 all benchmarks ran and gave correct results, 1 a call failed or gave wrong
// results, 2 usage, 77 no GPU (ctest SKIP_RETURN_CODE).
//
// The ops, as a transformer block uses them:
//   layernorm              y = LayerNorm(x) * weight + bias
//   rmsnorm                y = RMSNorm(x) * weight
//   residual_dropout       y = residual + dropout(x + bias, p = 0.1), no mask written
//   residual_dropout_norm  s = residual + dropout(x + bias, p = 0.1), y = LayerNorm(s) * weight
//                          + norm_bias: both written, no mask, no row statistics
// eps = 1e-5. Bytes counted: the minimum, every rows x cols input read once, every output written
// once, each [cols] vector read once (so GB/s compares with the copy bandwidth).
//
// Each benchmark rotates over copies of its own buffer set (the rows x cols tensors it reads and
// writes) that hold at least max(256 MiB, 3 x L2) in all, at most 8. Inputs are uniform random
// (x and residual in [-8, 8), weight in [0.5, 1.5), biases in [-1, 1)), never zeros. Before
// timing, outputs are poisoned (NaN), every set is run once, and rows 0 and rows-1 of set 0 are
// checked against support_add_norm_reference: s bit for bit (so dropout's mask too), y within
// support_norm_tolerance.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cinttypes>
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

// Keep in step with NORM_SHAPES in bench/vs_torch.py.
const Shape kShapes[] = {
    {4096, 1024},  {8192, 2048},  {4096, 4096},  {8192, 8192},
    {32768, 4096}, {1024, 16384}, {1024, 65536},
};

constexpr float kEps = 1e-5f;
constexpr float kP = 0.1f;
constexpr uint64_t kSeed = 0x5eed0dd5u, kOffset = 0;

enum Op { LAYERNORM, RMSNORM, RESIDUAL_DROPOUT, RESIDUAL_DROPOUT_NORM, OP_COUNT };

struct OpInfo {
    const char *name;
    tile_norm_kind norm;  // what tile_add_norm_variant gets for it
    bool residual;        // reads residual (and x + bias, dropout)
    bool s;               // writes s (besides y)
    bool weight, norm_bias;
};
const OpInfo kOps[OP_COUNT] = {
    {"layernorm", TILE_NORM_LAYER, false, false, true, true},
    {"rmsnorm", TILE_NORM_RMS, false, false, true, false},
    {"residual_dropout", TILE_NORM_NONE, true, false, false, false},
    {"residual_dropout_norm", TILE_NORM_LAYER, true, true, true, true},
};

constexpr int kMaxCopies = kBenchMaxCopies;

BenchSuite g;

// The buffers of the last (dtype, shape) benchmarked, allocated as the ops need them;
// benchmarks are registered so that those of one dtype and shape run one after another.
struct Buffers {
    tile_dtype dtype = TILE_DTYPE_F32;
    int64_t rows = 0, cols = 0;
    size_t bytes = 0;  // one rows x cols tensor
    // Per copy: inputs x, residual; outputs y, s. n_* of each allocated so far.
    uint64_t x[kMaxCopies] = {}, res[kMaxCopies] = {}, y[kMaxCopies] = {}, s[kMaxCopies] = {};
    int n_x = 0, n_res = 0, n_y = 0, n_s = 0;
    uint64_t bias = 0, weight = 0, norm_bias = 0;  // [cols] each
    // What the GPU sees, as floats: rows 0 and rows-1 of x and residual, and the vectors.
    std::vector<float> x_rows[2], res_rows[2], bias_h, weight_h, norm_bias_h;
};
Buffers g_buf;

void release_buffers() {
    Buffers &b = g_buf;
    for (int i = 0; i < b.n_x; i++) bench_free(b.x[i]);
    for (int i = 0; i < b.n_res; i++) bench_free(b.res[i]);
    for (int i = 0; i < b.n_y; i++) bench_free(b.y[i]);
    for (int i = 0; i < b.n_s; i++) bench_free(b.s[i]);
    for (uint64_t p : {b.bias, b.weight, b.norm_bias})
        if (p) bench_free(p);
    g_buf = Buffers();
}

// A [cols] vector uniform in [lo, hi): on the GPU at *dev, as floats in *host.
void make_vector(uint64_t *dev, std::vector<float> *host, uint64_t seed, float lo, float hi) {
    const Buffers &b = g_buf;
    const size_t cols = static_cast<size_t>(b.cols), elem = bench_dtype_size(b.dtype);
    std::vector<unsigned char> packed(cols * elem);
    bench_random(b.dtype, packed.data(), cols, seed, lo, hi);
    host->resize(cols);
    bench_unpack(b.dtype, host->data(), packed.data(), cols);
    *dev = bench_alloc(cols * elem);
    bench_upload(*dev, packed.data(), cols * elem);
}

// Grows input array `bufs` (n of them so far) to `copies`: the first one random in [-8, 8)
// from `seed` (rows 0 and rows-1 kept in rows[]), the others copies of it.
void grow_input(uint64_t *bufs, int *n, int copies, uint64_t seed, std::vector<float> rows[2]) {
    Buffers &b = g_buf;
    if (*n == 0) {
        const size_t count = static_cast<size_t>(b.rows * b.cols);
        const size_t cols = static_cast<size_t>(b.cols), elem = bench_dtype_size(b.dtype);
        std::vector<unsigned char> packed(b.bytes);
        bench_random(b.dtype, packed.data(), count, seed, -8.0f, 8.0f);
        rows[0].resize(cols);
        rows[1].resize(cols);
        bench_unpack(b.dtype, rows[0].data(), packed.data(), cols);
        bench_unpack(b.dtype, rows[1].data(), packed.data() + (count - cols) * elem, cols);
        bufs[0] = bench_alloc(b.bytes);
        bench_upload(bufs[0], packed.data(), b.bytes);
        *n = 1;
    }
    for (; *n < copies; (*n)++) {
        bufs[*n] = bench_alloc(b.bytes);
        bench_copy(bufs[*n], bufs[0], b.bytes);
    }
}

void grow_output(uint64_t *bufs, int *n, int copies) {
    for (; *n < copies; (*n)++) bufs[*n] = bench_alloc(g_buf.bytes);
}

void prepare_buffers(tile_dtype dtype, Shape shape, const OpInfo &op, int copies) {
    Buffers &b = g_buf;
    if (!(b.bytes && b.dtype == dtype && b.rows == shape.rows && b.cols == shape.cols)) {
        release_buffers();
        b.dtype = dtype;
        b.rows = shape.rows;
        b.cols = shape.cols;
        b.bytes = static_cast<size_t>(shape.rows * shape.cols) * bench_dtype_size(dtype);
        const uint64_t k = static_cast<uint64_t>(shape.cols);
        make_vector(&b.bias, &b.bias_h, 0x5eed2000u + k, -1.0f, 1.0f);
        make_vector(&b.weight, &b.weight_h, 0x5eed3000u + k, 0.5f, 1.5f);
        make_vector(&b.norm_bias, &b.norm_bias_h, 0x5eed4000u + k, -1.0f, 1.0f);
    }
    const uint64_t k = static_cast<uint64_t>(shape.cols);
    grow_input(b.x, &b.n_x, copies, 0x5eed0000u + k, b.x_rows);
    if (op.residual) grow_input(b.res, &b.n_res, copies, 0x5eed1000u + k, b.res_rows);
    grow_output(b.y, &b.n_y, copies);
    if (op.s) grow_output(b.s, &b.n_s, copies);
    bench_sync();
}

// The op on buffer set k as tile_add_norm_args (what tile_add_norm_variant and
// tile_residual_dropout_norm take).
tile_add_norm_args make_args(Op op, int k) {
    const Buffers &b = g_buf;
    const OpInfo &o = kOps[op];
    tile_add_norm_args a{};
    a.struct_size = sizeof a;
    a.dtype = b.dtype;
    a.norm = o.norm;
    a.rows = b.rows;
    a.cols = b.cols;
    a.x = bench_ptr(b.x[k]);
    a.ld_x = b.cols;
    if (o.norm == TILE_NORM_NONE) {  // residual_dropout: its output is s
        a.s = bench_ptr(b.y[k]);
        a.ld_s = b.cols;
    } else {
        a.y = bench_ptr(b.y[k]);
        a.ld_y = b.cols;
        if (o.s) {
            a.s = bench_ptr(b.s[k]);
            a.ld_s = b.cols;
        }
    }
    if (o.residual) {
        a.residual = bench_ptr(b.res[k]);
        a.ld_residual = b.cols;
        a.bias = bench_ptr(b.bias);
        a.p = kP;
        a.seed = kSeed;
        a.offset = kOffset;
    }
    if (o.weight) a.weight = bench_ptr(b.weight);
    if (o.norm_bias) a.norm_bias = bench_ptr(b.norm_bias);
    a.eps = kEps;
    return a;
}

tile_status launch(Op op, int k) {
    const Buffers &b = g_buf;
    if (g.forced >= 0) {
        const tile_add_norm_args a = make_args(op, k);
        return tile_add_norm_variant(g.forced, &a, nullptr);
    }
    const int64_t ld = b.cols;
    switch (op) {
    case LAYERNORM:
        return tile_layernorm(b.dtype, bench_ptr(b.y[k]), bench_ptr(b.x[k]), bench_ptr(b.weight),
                              bench_ptr(b.norm_bias), nullptr, nullptr, b.rows, b.cols, ld, ld, kEps,
                              nullptr);
    case RMSNORM:
        return tile_rmsnorm(b.dtype, bench_ptr(b.y[k]), bench_ptr(b.x[k]), bench_ptr(b.weight), nullptr,
                            b.rows, b.cols, ld, ld, kEps, nullptr);
    case RESIDUAL_DROPOUT:
        return tile_residual_dropout(b.dtype, bench_ptr(b.y[k]), bench_ptr(b.x[k]), bench_ptr(b.res[k]),
                                     bench_ptr(b.bias), nullptr, b.rows, b.cols, ld, ld, ld, kP,
                                     kSeed, kOffset, nullptr);
    case RESIDUAL_DROPOUT_NORM: {
        const tile_add_norm_args a = make_args(op, k);
        return tile_residual_dropout_norm(&a, nullptr);
    }
    default:
        return TILE_STATUS_INTERNAL;
    }
}

// Rows 0 and rows-1 of set 0 against the float64 reference (bench_check_norm_row: s bit for
// bit, dropout's mask included; y within tolerance). Returns false with the reason.
bool check_rows(Op op, std::string *why) {
    const Buffers &b = g_buf;
    const OpInfo &o = kOps[op];
    const size_t cols = static_cast<size_t>(b.cols), elem = bench_dtype_size(b.dtype);
    std::vector<unsigned char> y(cols * elem), s(cols * elem);
    int64_t bad = 0;
    double worst = 0;
    for (int last = 0; last < 2; last++) {
        const int64_t r = last ? b.rows - 1 : 0;
        const size_t at = static_cast<size_t>(r) * cols * elem;
        bench_download(y.data(), b.y[0] + at, cols * elem);
        if (o.s) bench_download(s.data(), b.s[0] + at, cols * elem);
        bench_norm_check c{};
        c.dtype = b.dtype;
        c.norm = o.norm;
        c.row = r;
        c.cols = b.cols;
        c.x = b.x_rows[last].data();
        if (o.residual) {
            c.residual = b.res_rows[last].data();
            c.bias = b.bias_h.data();
            c.p = kP;
            c.seed = kSeed;
            c.offset = kOffset;
        }
        if (o.weight) c.weight = b.weight_h.data();
        if (o.norm_bias) c.norm_bias = b.norm_bias_h.data();
        c.eps = kEps;
        if (o.norm == TILE_NORM_NONE) {
            c.s = y.data();  // residual_dropout: its output is s
        } else {
            c.y = y.data();
            if (o.s) c.s = s.data();
        }
        char label[128];
        std::snprintf(label, sizeof label, "%s %s %" PRId64 "x%" PRId64 " row %" PRId64, o.name,
                      tile_dtype_string(b.dtype), b.rows, b.cols, r);
        double err = 0;
        bad += bench_check_norm_row(&c, label, &err);
        worst = std::max(worst, err);
    }
    if (bad) {
        char msg[200];
        std::snprintf(msg, sizeof msg, "wrong results: %" PRId64 " mismatches in rows 0 and %" PRId64
                      " (max abs error %.3g)", bad, b.rows - 1, worst);
        *why = msg;
        return false;
    }
    return true;
}

void bm_norm(benchmark::State &state, tile_dtype dtype, Shape shape, Op op) {
    const OpInfo &o = kOps[op];
    const double bytes = static_cast<double>(shape.rows * shape.cols) *
                         static_cast<double>(bench_dtype_size(dtype));
    const double vec = static_cast<double>(shape.cols) * static_cast<double>(bench_dtype_size(dtype));
    const int big = 2 + (o.residual ? 1 : 0) + (o.s ? 1 : 0);  // x, y, residual, s
    const int vectors = (o.residual ? 1 : 0) + (o.weight ? 1 : 0) + (o.norm_bias ? 1 : 0);
    const double traffic = big * bytes + vectors * vec;
    const int copies = bench_rotation_copies(big * bytes, g.gpu.l2_bytes);
    const int batch = bench_batch_size(traffic);
    prepare_buffers(dtype, shape, o, copies);
    Buffers &b = g_buf;

    std::string label;
    if (g.forced >= 0) {
        label = g.forced_name;
    } else {
        // the op's own call: dropout and the operands move the choice
        tile_decision d{};
        d.struct_size = sizeof d;
        const tile_add_norm_args a = make_args(op, 0);
        tile_status s = tile_add_norm_explain(&a, 0, &d);
        if (s != TILE_STATUS_SUCCESS) {
            g.failed = true;
            state.SkipWithError(("tile_add_norm_explain: " + bench_status_message(s)).c_str());
            return;
        }
        label = bench_variant_name(d.variant);
    }

    auto run = [op](int k) { return launch(op, k); };
    // Outputs poisoned (0xff bytes are NaN in every dtype), one launch per set, then the check.
    for (int i = 0; i < copies; i++) {
        bench_memset(b.y[i], 0xff, b.bytes);
        if (o.s) bench_memset(b.s[i], 0xff, b.bytes);
    }
    if (!bench_launch_each(state, copies, run)) {
        g.failed = true;
        return;
    }
    std::string why;
    if (!check_rows(op, &why)) {
        g.failed = true;
        state.SkipWithError((label + ": " + why).c_str());
        return;
    }
    if (!bench_timed_loop(state, batch, copies, traffic, 0, g.copy_gbps, label, run))
        g.failed = true;
}

void print_help() {
    benchmark::PrintDefaultHelp();
    std::fprintf(stdout,
                 "bench_norm options:\n"
                 "  [--variant=NAME]     time this variant of op norm (tile_add_norm_variant)\n"
                 "                       instead of the dispatcher's pick; env\n"
                 "                       FUSEDOPS_BENCH_VARIANT\n"
                 "  [--shapes=RxC,...]   these shapes instead of the built-in list; env\n"
                 "                       FUSEDOPS_BENCH_SHAPES\n"
                 "Exit: 0 ok, 1 a call failed or gave wrong results, 2 usage, 77 no GPU.\n");
}

}  // namespace

int main(int argc, char **argv) {
    benchmark::Initialize(&argc, argv, print_help);
    const char *variant, *shapes_text;
    if (!bench_take_options(&argc, argv, &variant, &shapes_text)) return 2;

    std::vector<Shape> shapes(std::begin(kShapes), std::end(kShapes));
    if (shapes_text && *shapes_text && !bench_parse_shapes(shapes_text, &shapes)) {
        std::fprintf(stderr, "bench_norm: --shapes is ROWSxCOLS[,ROWSxCOLS...], got '%s'\n",
                     shapes_text);
        return 2;
    }
    tile_variant_info forced;
    const int exit_code = bench_start("bench_norm", "norm", variant, &g.gpu, &g.copy_gbps,
                                      &g.forced, &forced, &g.forced_name);
    if (exit_code >= 0) return exit_code;

    // dtype, then shape, then op: benchmarks of one dtype and shape share their buffers.
    for (int dt = 0; dt < TILE_DTYPE_COUNT_; dt++) {
        const tile_dtype dtype = static_cast<tile_dtype>(dt);
        if (g.forced >= 0 && dtype != forced.dtype) continue;
        for (const Shape &s : shapes) {
            if (g.forced >= 0 && forced.max_cols && s.cols > forced.max_cols) continue;
            for (int op = 0; op < OP_COUNT; op++) {
                const std::string name = std::string(kOps[op].name) + "/" +
                                         tile_dtype_string(dtype) + "/" + std::to_string(s.rows) +
                                         "x" + std::to_string(s.cols);
                benchmark::RegisterBenchmark(name.c_str(), bm_norm, dtype, s, static_cast<Op>(op))
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
