/* bench_gpu: the GPU and host helpers the C++ benches need, behind a C interface. It exists
 * because src/cuda_driver.h, and so support/support.h, compiles only as C (in C++ each member
 * `__typeof__(&cuX) cuX;` of the driver table "changes meaning" of cuX). Device pointers are
 * CUdeviceptr values as uint64_t; work goes to the legacy default stream; a failing driver call
 * exits with file:line and the driver's error name (SUPPORT_CHECK).
 *
 * After the C interface, for C++ only, the parts every Google Benchmark suite shares (shape
 * lists, buffer rotation and batch sizes, the timed loop and its counters, the JSON context),
 * so bench_softmax.cc and bench_norm.cc time and report the same way. */
#ifndef FUSEDOPS_BENCH_GPU_H
#define FUSEDOPS_BENCH_GPU_H

#include <stddef.h>
#include <stdint.h>

#include "fusedops.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct bench_gpu_info {
    char name[128];
    int32_t arch;              /* 10*major+minor */
    int32_t sm_count;
    int32_t driver_version;    /* cuDriverGetVersion: 1000*major+10*minor */
    int64_t l2_bytes;
    double dram_nominal_gbps;  /* from the memory clock and bus width; 0 if not reported */
    int32_t sm_clock_mhz;      /* the device's peak SM and memory clocks (attributes; clocks */
    int32_t mem_clock_mhz;     /* are left as found, not locked); 0 if not reported */
} bench_gpu_info;

/* Opens GPU 0 (primary context, made current) and the timing events. Returns 0, or -1 with
 * the reason in *why. */
int bench_gpu_open(bench_gpu_info *info, const char **why);
void bench_gpu_close(void);

uint64_t bench_alloc(size_t bytes);
void bench_free(uint64_t ptr);
void bench_upload(uint64_t dst, const void *src, size_t bytes);
void bench_download(void *dst, uint64_t src, size_t bytes);
void bench_copy(uint64_t dst, uint64_t src, size_t bytes);
void bench_memset(uint64_t dst, unsigned char value, size_t bytes);
void bench_sync(void);

/* An event pair on the legacy default stream: start, then stop waits for it and returns ms. */
void bench_timer_start(void);
float bench_timer_stop(void);

/* Device-to-device copy bandwidth in GB/s (1e9 bytes), bytes read plus bytes written: median
 * of 20 cuMemcpyDtoD of 1 GiB (halved until both buffers fit). *bytes gets the size used. */
double bench_copy_gbps(size_t *bytes);

/* A problem shape: rows x cols elements. */
typedef struct bench_shape {
    int64_t rows, cols;
} bench_shape;

size_t bench_dtype_size(tile_dtype dtype);
/* n uniform values in [lo, hi) from seed (support_fill_uniform), stored as dtype at dst. */
void bench_random(tile_dtype dtype, void *dst, size_t n, uint64_t seed, float lo, float hi);
void bench_unpack(tile_dtype dtype, float *dst, const void *src, size_t n);
/* Checks one row y (dtype storage) of softmax or log-softmax of x (cols floats, as the GPU saw
 * them) against the float64 reference, within support_tolerance. Prints up to 5 mismatches
 * under `label`; returns their count and the largest error in *max_err. */
int64_t bench_check_row(tile_dtype dtype, int log_softmax, const float *x, const void *y,
                        int64_t cols, const char *label, double *max_err);

/* One row of an add-and-norm launch (tile_layernorm, tile_rmsnorm, tile_residual_dropout,
 * tile_residual_dropout_norm; fields as tile_add_norm_args) to check. Inputs as floats holding
 * the values as stored: that row of x and of residual (NULL: none), the [cols] vectors (NULL:
 * absent). Outputs: that row as the GPU wrote it, in dtype storage; NULL where the op does not
 * write it (y for TILE_NORM_NONE; s for the plain norms). */
typedef struct bench_norm_check {
    tile_dtype dtype;
    tile_norm_kind norm;
    int64_t row, cols;  /* row: the index dropout's random numbers are drawn for */
    const float *x, *residual, *bias, *weight, *norm_bias;
    float eps, p;
    uint64_t seed, offset;
    const void *s, *y;
} bench_norm_check;

/* Checks the row against support_add_norm_reference: s bit for bit (dropout's mask included),
 * y within support_norm_tolerance. Prints up to 5 mismatches per output under `label`; returns
 * their count and the largest error in *max_err. */
int64_t bench_check_norm_row(const bench_norm_check *c, const char *label, double *max_err);

/* One query row of attention to check: o = softmax(scale * q K^T) V over the first `keys` keys
 * (those the row sees: all of them, or up to the causal diagonal; 0 keys: o must be 0). q and o
 * are head_dim elements, key/value j is at k + j * ld_k, v + j * ld_v (elements); all in dtype
 * storage, as the GPU saw them (q, k, v) and wrote them (o). Compared with the float64 result
 * within |err| <= atol + rtol * |want|: rtol one rounding of o to dtype, atol the rounding of
 * the probabilities to dtype before the P V product (fp16 2e-3, bf16 1.6e-2). Prints up to 5
 * mismatches under `label`; returns their count and the largest error in *max_err. */
int64_t bench_check_attention_row(tile_dtype dtype, int64_t head_dim, int64_t keys, double scale,
                                  const void *q, const void *k, int64_t ld_k, const void *v,
                                  int64_t ld_v, const void *o, const char *label,
                                  double *max_err);

/* Group ends of a skewed mixture-of-experts routing (support_skewed_group_ends): rows split over
 * groups in Dirichlet(alpha) proportions drawn from seed; ends[groups], cumulative. */
void bench_skewed_group_ends(int32_t groups, int64_t rows, double alpha, uint64_t seed,
                             int32_t *ends);

/* One row of a grouped matmul to check, on `ncols` columns spread evenly over 0 .. n - 1 (the
 * first and last included; every column when ncols >= n): a_row is that row of A (k elements),
 * b_group its group's B, element (kk, nn) at b_k_stride * kk + b_n_stride * nn, bias_row its
 * group's bias (n elements) or NULL, c_row the row as the GPU wrote it (n elements); all in
 * dtype storage. It passes when the largest error against the float64 reference is within
 * support_grouped_matmul_allowed (twice that of an fp32-accumulated reference rounded to dtype,
 * plus slack; NaN never passes). Prints a failure under `label`; returns 1 when it fails, else
 * 0; *max_err and *max_err_lp (either may be NULL) get the two errors. */
int64_t bench_check_grouped_matmul_row(tile_dtype dtype, int64_t k, int64_t n, const void *a_row,
                                       const void *b_group, int64_t b_k_stride,
                                       int64_t b_n_stride, const void *bias_row,
                                       const void *c_row, int64_t ncols, const char *label,
                                       double *max_err, double *max_err_lp);

#ifdef __cplusplus
}

/* ---------------------------------------------------------------- C++: the shared suite parts */
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

constexpr int kBenchMaxCopies = 8;   // buffer sets rotated, at most
constexpr int kBenchMaxBatch = 256;  // launches per timed batch, at most

// What every suite keeps for its run: the GPU, the copy ceiling measured at start, the variant
// forced by --variant (its index for the op's *_variant entry point, or -1: the dispatcher
// picks) and whether any call failed or gave wrong results (the suite then exits 1).
struct BenchSuite {
    bench_gpu_info gpu;
    double copy_gbps = 0;
    int32_t forced = -1;
    std::string forced_name;
    bool failed = false;
};

// A device address (CUdeviceptr) as the pointer the C ABI takes.
inline void *bench_ptr(uint64_t p) { return reinterpret_cast<void *>(static_cast<uintptr_t>(p)); }

// Copies of one rotated buffer set (`set_bytes`: every rows x cols tensor one launch reads or
// writes) so that in all they hold at least max(256 MiB, 3 x L2): each launch then reads input
// that the launches before it have pushed out of L2. 1 to kBenchMaxCopies.
inline int bench_rotation_copies(double set_bytes, int64_t l2_bytes) {
    const double target = std::max(256.0 * (1 << 20), 3.0 * static_cast<double>(l2_bytes));
    const int copies = static_cast<int>(std::ceil(target / set_bytes));
    return std::min(std::max(copies, 1), kBenchMaxCopies);
}

// Launches per timed batch: about 4 GB of traffic, so the one event-and-launch gap at the start
// of a batch is under 1% of it; 2 to kBenchMaxBatch.
inline int bench_batch_size(double traffic) {
    return static_cast<int>(
        std::min<double>(kBenchMaxBatch, std::max(2.0, std::ceil(4e9 / traffic))));
}

inline std::string bench_status_message(tile_status s) {
    return std::string(tile_status_string(s)) + ": " + tile_last_error();
}

inline std::string bench_variant_name(int32_t index) {
    tile_variant_info info{};
    info.struct_size = sizeof info;
    return tile_variant_get(index, &info) == TILE_STATUS_SUCCESS ? info.name : "?";
}

// "RxC[,RxC...]" into *out; false when malformed.
// Takes the suites' own options out of argv (after benchmark::Initialize): --variant=NAME and
// --shapes=RxC,..., whose defaults come from FUSEDOPS_BENCH_VARIANT and FUSEDOPS_BENCH_SHAPES.
// Returns false when an option is left that Google Benchmark does not know either.
inline bool bench_take_options(int *argc, char **argv, const char **variant,
                               const char **shapes_text) {
    *variant = std::getenv("FUSEDOPS_BENCH_VARIANT");
    *shapes_text = std::getenv("FUSEDOPS_BENCH_SHAPES");
    int kept = 1;
    for (int i = 1; i < *argc; i++) {
        if (!std::strncmp(argv[i], "--variant=", 10)) *variant = argv[i] + 10;
        else if (!std::strncmp(argv[i], "--shapes=", 9)) *shapes_text = argv[i] + 9;
        else argv[kept++] = argv[i];
    }
    *argc = kept;
    return !benchmark::ReportUnrecognizedArguments(*argc, argv);
}

inline bool bench_parse_shapes(const char *text, std::vector<bench_shape> *out) {
    out->clear();
    std::string s(text);
    size_t at = 0;
    while (at <= s.size()) {
        const size_t comma = std::min(s.find(',', at), s.size());
        const std::string item = s.substr(at, comma - at);
        long long r = 0, c = 0;
        char tail;
        if (std::sscanf(item.c_str(), "%lldx%lld%c", &r, &c, &tail) != 2 || r < 1 || c < 1)
            return false;
        out->push_back({r, c});
        at = comma + 1;
    }
    return !out->empty();
}

// n random elements in [lo, hi) from seed as dtype storage into *host (kept for the checks),
// and a device copy for each of `copies` buffer sets in dev[].
inline void bench_make_input(tile_dtype dtype, uint64_t *dev, int copies,
                             std::vector<unsigned char> *host, size_t n, uint64_t seed, float lo,
                             float hi) {
    const size_t bytes = n * bench_dtype_size(dtype);
    host->resize(bytes);
    bench_random(dtype, host->data(), n, seed, lo, hi);
    for (int i = 0; i < copies; i++) {
        dev[i] = bench_alloc(bytes);
        if (i == 0) bench_upload(dev[0], host->data(), bytes);
        else bench_copy(dev[i], dev[0], bytes);
    }
}

// An args struct from the op's init (tile_flash_attention_init, ...): zeroed, struct_size set.
// init fails only for a NULL or short struct, a library bug: the suite `suite` exits 1.
template <class Args>
Args bench_init_args(const char *suite, const char *init_name,
                     tile_status (*init)(Args *, size_t)) {
    Args a;
    const tile_status st = init(&a, sizeof a);
    if (st != TILE_STATUS_SUCCESS) {
        std::fprintf(stderr, "%s: %s: %s\n", suite, init_name, bench_status_message(st).c_str());
        std::exit(1);
    }
    return a;
}

// One launch on each of `copies` buffer sets (warm-up: the first call also loads the kernels),
// then a synchronize. launch(k) runs on set k and returns its status. On a failure: the
// benchmark shows the error and this returns false.
template <class Launch>
bool bench_launch_each(benchmark::State &state, int copies, Launch &&launch) {
    for (int k = 0; k < copies; k++) {
        const tile_status s = launch(k);
        if (s != TILE_STATUS_SUCCESS) {
            state.SkipWithError(bench_status_message(s).c_str());
            return false;
        }
    }
    bench_sync();
    return true;
}

// The timed loop: an event pair around each batch of `batch` back-to-back launches, launch(k)
// on set k = 0, 1, ..., copies - 1, 0, ...; KeepRunningBatch counts each batch as `batch`
// iterations and SetIterationTime gives the batch's time, so Time is per launch while
// --benchmark_min_time stays wall time. Then the counters: bytes_per_second and GB/s over
// `traffic` bytes per launch, frac_copy, batch, copies; TFLOP/s over `flops` per launch where
// flops > 0 (0: a memory-bound op, no such counter); and the label. Returns false (the
// benchmark shows the error) when a launch failed.
template <class Launch>
bool bench_timed_loop(benchmark::State &state, int batch, int copies, double traffic,
                      double flops, double copy_gbps, const std::string &label,
                      Launch &&launch) {
    double seconds = 0;  // GPU time of the launches timed, summed
    uint64_t next = 0;
    while (state.KeepRunningBatch(batch)) {
        bench_timer_start();
        tile_status s = TILE_STATUS_SUCCESS;
        for (int i = 0; i < batch && s == TILE_STATUS_SUCCESS; i++)
            s = launch(static_cast<int>(next++ % static_cast<uint64_t>(copies)));
        const float ms = bench_timer_stop();
        if (s != TILE_STATUS_SUCCESS) {
            state.SkipWithError(bench_status_message(s).c_str());
            return false;
        }
        state.SetIterationTime(1e-3 * static_cast<double>(ms));
        seconds += 1e-3 * static_cast<double>(ms);
    }
    const double iters = static_cast<double>(state.iterations());
    state.SetBytesProcessed(static_cast<int64_t>(traffic) * state.iterations());
    const double gbs = seconds > 0 ? traffic * iters / seconds / 1e9 : 0;
    state.counters["GB/s"] = gbs;
    state.counters["frac_copy"] = copy_gbps > 0 ? gbs / copy_gbps : 0;
    if (flops > 0) state.counters["TFLOP/s"] = seconds > 0 ? flops * iters / seconds / 1e12 : 0;
    state.counters["batch"] = batch;
    state.counters["copies"] = copies;
    state.SetLabel(label);
    return true;
}

// A benchmark's label: the forced variant's name, or the name of the variant the op's explain
// function picks (explain(&decision) returns its status; `what` names it in the error). On a
// failure the benchmark shows the error, the suite is marked failed and this returns false.
template <class Explain>
bool bench_label(benchmark::State &state, BenchSuite &suite, const char *what, Explain &&explain,
                 std::string *label) {
    if (suite.forced >= 0) {
        *label = suite.forced_name;
        return true;
    }
    tile_decision d{};
    d.struct_size = sizeof d;
    const tile_status s = explain(&d);
    if (s != TILE_STATUS_SUCCESS) {
        suite.failed = true;
        state.SkipWithError((std::string(what) + ": " + bench_status_message(s)).c_str());
        return false;
    }
    *label = bench_variant_name(d.variant);
    return true;
}

// What every suite does once it has its launches: poison() the outputs, one launch per buffer
// set (bench_launch_each, the warm-up), check(&why) the results, then the timed loop
// (bench_timed_loop). A failure shows on the benchmark and marks the suite failed; wrong
// results are never timed.
template <class Poison, class Launch, class Check>
void bench_check_then_time(benchmark::State &state, BenchSuite &suite, int batch, int copies,
                           double traffic, double flops, const std::string &label,
                           Poison &&poison, Launch &&launch, Check &&check) {
    poison();
    if (!bench_launch_each(state, copies, launch)) {
        suite.failed = true;
        return;
    }
    std::string why;
    if (!check(&why)) {
        suite.failed = true;
        state.SkipWithError((label + ": " + why).c_str());
        return;
    }
    if (!bench_timed_loop(state, batch, copies, traffic, flops, suite.copy_gbps, label, launch))
        suite.failed = true;
}

// The ops that take an args struct (attention, grouped matmul), from their launches on:
// args[k] is buffer set k; fn, variant and explain are the op's tile_X, tile_X_variant and
// tile_X_explain (its name `fn_name`); the label and the forced variant as bench_label, then
// bench_check_then_time.
template <class Args, class Poison, class Check>
void bench_struct_op(benchmark::State &state, BenchSuite &suite, const std::vector<Args> &args,
                     const char *fn_name, tile_status (*fn)(const Args *, tile_stream),
                     tile_status (*variant)(int32_t, const Args *, tile_stream),
                     tile_status (*explain)(const Args *, int32_t, tile_decision *), int batch,
                     double traffic, double flops, Poison &&poison, Check &&check) {
    std::string label;
    const std::string what = std::string(fn_name) + "_explain";
    if (!bench_label(state, suite, what.c_str(),
                     [&](tile_decision *d) { return explain(&args[0], 0, d); }, &label))
        return;
    const int32_t forced = suite.forced;
    auto run = [&](int k) {
        return forced >= 0 ? variant(forced, &args[k], nullptr) : fn(&args[k], nullptr);
    };
    bench_check_then_time(state, suite, batch, static_cast<int>(args.size()), traffic, flops,
                          label, poison, run, check);
}

// The JSON context every suite writes: gpu, gpu_compute_capability, cuda_driver_version,
// gpu_sm_count, gpu_l2_bytes, dram_nominal_gbps, copy_gbps, copy_bytes, libfusedops_version,
// libfusedops_variants and forced_variant ("none" when empty).
inline void bench_add_context(const bench_gpu_info &gpu, double copy_gbps, size_t copy_bytes,
                              const std::string &forced_variant) {
    char buf[64];
    benchmark::AddCustomContext("gpu", gpu.name);
    std::snprintf(buf, sizeof buf, "%d.%d", gpu.arch / 10, gpu.arch % 10);
    benchmark::AddCustomContext("gpu_compute_capability", buf);
    std::snprintf(buf, sizeof buf, "%d.%d", gpu.driver_version / 1000,
                  gpu.driver_version % 1000 / 10);
    benchmark::AddCustomContext("cuda_driver_version", buf);
    benchmark::AddCustomContext("gpu_sm_count", std::to_string(gpu.sm_count));
    benchmark::AddCustomContext("gpu_l2_bytes", std::to_string(gpu.l2_bytes));
    benchmark::AddCustomContext("gpu_sm_clock_mhz", std::to_string(gpu.sm_clock_mhz));
    benchmark::AddCustomContext("gpu_memory_clock_mhz", std::to_string(gpu.mem_clock_mhz));
    std::snprintf(buf, sizeof buf, "%.1f", gpu.dram_nominal_gbps);
    benchmark::AddCustomContext("dram_nominal_gbps", buf);
    std::snprintf(buf, sizeof buf, "%.1f", copy_gbps);
    benchmark::AddCustomContext("copy_gbps", buf);
    benchmark::AddCustomContext("copy_bytes", std::to_string(copy_bytes));
    const int32_t v = tile_version();
    std::snprintf(buf, sizeof buf, "%d.%d.%d", v / 10000, v / 100 % 100, v % 100);
    benchmark::AddCustomContext("libfusedops_version", buf);
    benchmark::AddCustomContext("libfusedops_variants", std::to_string(tile_variant_count()));
    benchmark::AddCustomContext("forced_variant",
                                forced_variant.empty() ? "none" : forced_variant);
}

// What every suite's main does after parsing its own options, before registering benchmarks:
// looks up the forced variant `variant` (NULL or "": none; else a variant of op `op`) into
// *forced (its index, -1 for none), *info and *forced_name; opens the GPU into *gpu; checks the
// forced variant's arch range; measures the copy ceiling into *copy_gbps; writes the JSON
// context (bench_add_context). Returns -1 to go on, or the exit code for main to return: 2 no
// such variant of `op`, 77 no GPU (after printing "SKIP: no GPU: why"), 1 a forced variant
// that does not run on this GPU's architecture. `suite` prefixes the messages.
inline int bench_start(const char *suite, const char *op, const char *variant,
                       bench_gpu_info *gpu, double *copy_gbps, int32_t *forced,
                       tile_variant_info *info, std::string *forced_name) {
    *info = tile_variant_info{};
    info->struct_size = sizeof *info;
    *forced = -1;
    if (variant && *variant) {
        *forced = tile_variant_find(variant);
        if (*forced < 0 || tile_variant_get(*forced, info) != TILE_STATUS_SUCCESS ||
            std::strcmp(info->op, op)) {
            std::fprintf(stderr, "%s: no %s variant '%s' (see `fusedops list`)\n", suite, op,
                         variant);
            return 2;
        }
        *forced_name = info->name;
    }
    const char *why = "";
    if (bench_gpu_open(gpu, &why) != 0) {
        std::printf("SKIP: no GPU: %s\n", why);
        return 77;  // ctest SKIP_RETURN_CODE
    }
    if (*forced >= 0 &&
        (gpu->arch < info->arch_min || (info->arch_max && gpu->arch > info->arch_max))) {
        std::fprintf(stderr, "%s: %s runs on sm_%d..%s; this GPU is sm_%d\n", suite, info->name,
                     info->arch_min, info->arch_max ? std::to_string(info->arch_max).c_str() : "",
                     gpu->arch);
        return 1;
    }
    size_t copy_bytes = 0;
    *copy_gbps = bench_copy_gbps(&copy_bytes);
    bench_add_context(*gpu, *copy_gbps, copy_bytes, *forced_name);
    return -1;
}

#endif  // __cplusplus

#endif
