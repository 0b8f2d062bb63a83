#!/usr/bin/env python3
"""libfusedops softmax beside its peers, on one GPU, in one run.

Providers, per shape and dtype:
  ours     tile_softmax (or tile_log_softmax) from libfusedops.so, through ctypes, on torch's
           current stream
  torch    torch.softmax, eager
  compile  torch.compile(torch.softmax), mode default, dynamic=False, compiled and warmed first
  triton   one program per row, the Triton tutorial's kernel (BLOCK_SIZE = next_power_of_2(cols),
           num_warps by block size) up to 65536 columns; a looped two-pass kernel (4096 columns
           at a time) beyond that, and also tried from 16384 columns up, where the faster of the
           two is reported

Timing is the C++ bench's: CUDA events around a batch of back-to-back launches, divided by the
batch, median of --reps batches; inputs rotate over copies that hold at least 256 MiB and 3x L2
in all (at most 8), so L2 does not flatter the small shapes. Python enqueues slower than the
GPU runs the small shapes, so every batch starts behind a torch.cuda._sleep kernel long enough
for the host to enqueue the whole batch: the events then time GPU work, not Python.
GB/s counts 2 * rows * cols * element size (x read once, y written once); %copy divides it by
the device-to-device copy bandwidth (y.copy_(x) of 1 GiB, bytes read plus written).

Every provider's output is checked against a float64 torch reference first; a wrong result from
ours fails the run (exit 1). Usage:

  python3 bench/vs_torch.py [--lib build/libfusedops.so] [--out DIR] [--json PATH]
                            [--dtypes bf16,f32] [--ops softmax,log_softmax] [--shapes RxC,...]
                            [--variant NAME] [--no-compile] [--no-triton] [--reps N]
"""
import argparse
import ctypes
import json
import math
import os
import statistics
import sys
import time
import traceback
import warnings

import torch

try:
    import triton
    import triton.language as tl
    TRITON_ERROR = None
except Exception as e:  # noqa: BLE001 - any import failure means "no Triton column"
    triton = None
    TRITON_ERROR = f"{type(e).__name__}: {e}"

# Keep in step with kShapes in bench/bench_softmax.cc.
SHAPES = [
    (4096, 1024), (8192, 2048), (4096, 4096), (8192, 8192),
    (32768, 4096), (2048, 16384), (1024, 32768), (1024, 65536),
    (1024, 131072),
    (32, 1 << 20), (4, 1 << 20),  # vocabulary-sized rows
    (128, 128256),                # Llama 3 vocabulary: not a power of two
]
DTYPES = {  # name: (tile_dtype, torch dtype, element bytes)
    "f32": (0, torch.float32, 4),
    "f16": (1, torch.float16, 2),
    "bf16": (2, torch.bfloat16, 2),
}
PROVIDERS = ["ours", "torch", "compile", "triton"]
TRITON_ROW_MAX = 65536      # widest row the one-block kernel holds in registers
TRITON_LOOP_FROM = 16384    # from here on the looped kernel is tried too
TRITON_LOOP_BLOCK = 4096
MAX_COPIES = 8
MAX_BATCH = 256


def log(msg=""):
    print(msg, flush=True)


# ----------------------------------------------------------------------------- libfusedops
class Decision(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("variant", ctypes.c_int32),
                ("rule", ctypes.c_int), ("eligible", ctypes.c_int32), ("arch", ctypes.c_int32),
                ("reason", ctypes.c_char * 256)]


class VariantInfo(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("name", ctypes.c_char_p),
                ("op", ctypes.c_char_p), ("dtype", ctypes.c_int), ("arch_min", ctypes.c_int32),
                ("arch_max", ctypes.c_int32), ("threads", ctypes.c_int32),
                ("cluster", ctypes.c_int32), ("smem_bytes", ctypes.c_int32),
                ("max_cols", ctypes.c_int64), ("align_bytes", ctypes.c_int32),
                ("params", ctypes.c_char_p)]


class FusedOps:
    def __init__(self, path):
        so = ctypes.CDLL(path)
        i64, vp, i32 = ctypes.c_int64, ctypes.c_void_p, ctypes.c_int32
        for name in ("tile_softmax", "tile_log_softmax"):
            f = getattr(so, name)
            f.argtypes = [ctypes.c_int, vp, vp, i64, i64, i64, i64, vp]
            f.restype = ctypes.c_int
        so.tile_softmax_variant.argtypes = [i32, i32, ctypes.c_int, vp, vp, i64, i64, i64, i64, vp]
        so.tile_softmax_variant.restype = ctypes.c_int
        so.tile_softmax_explain.argtypes = [ctypes.c_int, i64, i64, i64, i64, i32, i32,
                                            ctypes.POINTER(Decision)]
        so.tile_softmax_explain.restype = ctypes.c_int
        so.tile_variant_get.argtypes = [i32, ctypes.POINTER(VariantInfo)]
        so.tile_variant_get.restype = ctypes.c_int
        so.tile_variant_find.argtypes = [ctypes.c_char_p]
        so.tile_variant_find.restype = i32
        so.tile_device_arch.argtypes = [ctypes.POINTER(i32)]
        so.tile_device_arch.restype = ctypes.c_int
        so.tile_last_error.restype = ctypes.c_char_p
        so.tile_status_string.argtypes = [ctypes.c_int]
        so.tile_status_string.restype = ctypes.c_char_p
        so.tile_version.restype = i32
        self.so = so
        self.forced = -1

    def error(self, status):
        return (f"{self.so.tile_status_string(status).decode()}: "
                f"{self.so.tile_last_error().decode()}")

    def version(self):
        v = self.so.tile_version()
        return f"{v // 10000}.{v // 100 % 100}.{v % 100}"

    def variant(self, index):
        info = VariantInfo(struct_size=ctypes.sizeof(VariantInfo))
        if self.so.tile_variant_get(index, ctypes.byref(info)) != 0:
            return None
        return info

    def explain(self, tdtype, rows, cols):
        if self.forced >= 0:
            return self.variant(self.forced).name.decode() + " (forced)"
        d = Decision(struct_size=ctypes.sizeof(Decision))
        s = self.so.tile_softmax_explain(tdtype, rows, cols, cols, cols, 256, 0, ctypes.byref(d))
        if s != 0:
            raise RuntimeError("tile_softmax_explain: " + self.error(s))
        return self.variant(d.variant).name.decode()

    def launcher(self, is_log, tdtype, rows, cols):
        """A function (y_ptr, x_ptr, stream) -> None that launches one softmax."""
        so = self.so
        if self.forced >= 0:
            fn, forced, flag = so.tile_softmax_variant, self.forced, int(is_log)

            def launch(y, x, stream):
                s = fn(forced, flag, tdtype, y, x, rows, cols, cols, cols, stream)
                if s:
                    raise RuntimeError(self.error(s))
        else:
            fn = so.tile_log_softmax if is_log else so.tile_softmax

            def launch(y, x, stream):
                s = fn(tdtype, y, x, rows, cols, cols, cols, stream)
                if s:
                    raise RuntimeError(self.error(s))
        return launch


def make_context_current(lib):
    """libfusedops runs on the calling thread's current CUDA context. PyTorch's runtime makes
    the primary context current; where it has not (yet), make it current through the driver."""
    torch.zeros(1, device="cuda")
    torch.cuda.synchronize()
    arch = ctypes.c_int32(0)
    s = lib.so.tile_device_arch(ctypes.byref(arch))
    if s == 7:  # TILE_STATUS_NO_CONTEXT
        cuda = ctypes.CDLL("libcuda.so.1")
        dev, ctx = ctypes.c_int(0), ctypes.c_void_p()
        cuda.cuInit(0)
        cuda.cuDeviceGet(ctypes.byref(dev), torch.cuda.current_device())
        cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev)
        cuda.cuCtxSetCurrent(ctx)
        s = lib.so.tile_device_arch(ctypes.byref(arch))
    if s != 0:
        raise RuntimeError("tile_device_arch: " + lib.error(s))
    return arch.value


# ----------------------------------------------------------------------------- Triton
if triton is not None:
    @triton.jit
    def softmax_row_kernel(y_ptr, x_ptr, ld_y, ld_x, n_cols, BLOCK_SIZE: tl.constexpr,
                           LOG: tl.constexpr):
        # One program per row, the whole row in registers: reads x once, writes y once.
        row = tl.program_id(0).to(tl.int64)
        cols = tl.arange(0, BLOCK_SIZE)
        mask = cols < n_cols
        x = tl.load(x_ptr + row * ld_x + cols, mask=mask, other=-float("inf")).to(tl.float32)
        z = x - tl.max(x, axis=0)
        num = tl.exp(z)
        den = tl.sum(num, axis=0)
        if LOG:
            y = z - tl.log(den)
        else:
            y = num / den
        tl.store(y_ptr + row * ld_y + cols, y.to(y_ptr.dtype.element_ty), mask=mask)

    @triton.jit
    def softmax_loop_kernel(y_ptr, x_ptr, ld_y, ld_x, n_cols, BLOCK_SIZE: tl.constexpr,
                            LOG: tl.constexpr):
        # One program per row, BLOCK_SIZE columns at a time. Pass 1 keeps a running max and
        # sum per lane; pass 2 re-reads x (from L2 while the row is still there) and writes y.
        row = tl.program_id(0).to(tl.int64)
        x_row = x_ptr + row * ld_x
        y_row = y_ptr + row * ld_y
        m = tl.full([BLOCK_SIZE], -float("inf"), tl.float32)
        s = tl.zeros([BLOCK_SIZE], tl.float32)
        for start in range(0, n_cols, BLOCK_SIZE):
            cols = start + tl.arange(0, BLOCK_SIZE)
            x = tl.load(x_row + cols, mask=cols < n_cols, other=-float("inf")).to(tl.float32)
            m_new = tl.maximum(m, x)
            m_ref = tl.where(m_new == -float("inf"), 0.0, m_new)  # lanes with no column yet
            s = s * tl.exp(m - m_ref) + tl.exp(x - m_ref)
            m = m_new
        row_max = tl.max(m, axis=0)
        row_sum = tl.sum(s * tl.exp(m - row_max), axis=0)
        log_sum = tl.log(row_sum)
        inv_sum = 1.0 / row_sum
        for start in range(0, n_cols, BLOCK_SIZE):
            cols = start + tl.arange(0, BLOCK_SIZE)
            mask = cols < n_cols
            x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
            if LOG:
                y = x - row_max - log_sum
            else:
                y = tl.exp(x - row_max) * inv_sum
            tl.store(y_row + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


def triton_row_launcher(is_log, rows, cols):
    block = triton.next_power_of_2(cols)
    warps = 16 if block >= 4096 else 8 if block >= 2048 else 4

    def launch(y, x):
        softmax_row_kernel[(rows,)](y, x, cols, cols, cols, BLOCK_SIZE=block, LOG=is_log,
                                    num_warps=warps)
    return launch


def triton_loop_launcher(is_log, rows, cols):
    def launch(y, x):
        softmax_loop_kernel[(rows,)](y, x, cols, cols, cols, BLOCK_SIZE=TRITON_LOOP_BLOCK,
                                     LOG=is_log, num_warps=8)
    return launch


# ----------------------------------------------------------------------------- timing
class Timer:
    def __init__(self, reps):
        self.reps = reps
        self.start = torch.cuda.Event(enable_timing=True)
        self.stop = torch.cuda.Event(enable_timing=True)
        self.sleep = getattr(torch.cuda, "_sleep", None)
        self.cycles_per_ms = 0.0
        if self.sleep is not None:
            self.sleep(1000)
            torch.cuda.synchronize()
            self.start.record()
            self.sleep(20_000_000)
            self.stop.record()
            self.stop.synchronize()
            self.cycles_per_ms = 20_000_000 / max(self.start.elapsed_time(self.stop), 1e-3)

    def per_launch_ms(self, launch, copies, batch):
        """Median over reps of (GPU time of `batch` launches) / batch. launch(i) uses copy i."""
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for i in range(batch):
            launch(i % copies)
        host_ms = (time.perf_counter() - t0) * 1e3
        torch.cuda.synchronize()
        cycles = int(self.cycles_per_ms * (1.5 * host_ms + 0.1))
        times, k = [], 0
        for _ in range(self.reps):
            if self.sleep is not None:
                self.sleep(cycles)  # the GPU waits here while the host enqueues the batch
            self.start.record()
            for _ in range(batch):
                launch(k % copies)
                k += 1
            self.stop.record()
            self.stop.synchronize()
            times.append(self.start.elapsed_time(self.stop) / batch)
        return statistics.median(times)


def copy_gbps(timer):
    """Device-to-device copy of 1 GiB: bytes read plus bytes written, per second."""
    n = 1 << 30
    src = torch.empty(n, dtype=torch.uint8, device="cuda").fill_(0x3c)
    dst = torch.empty_like(src)
    saved = timer.reps
    timer.reps = 20
    ms = timer.per_launch_ms(lambda i: dst.copy_(src), 1, 1)
    timer.reps = saved
    del src, dst
    torch.cuda.empty_cache()
    return 2.0 * n / (ms * 1e-3) / 1e9


def tolerance(dtype_name, is_log):
    # As support_tolerance() in support/support.c: one rounding of the output plus fp32 math.
    eps = {"f32": 2.0 ** -23, "f16": 2.0 ** -10, "bf16": 2.0 ** -7}[dtype_name]
    rtol = 2e-5 if dtype_name == "f32" else eps
    atol = (1e-5 if dtype_name == "f32" else 2 * eps) if is_log else 1e-7
    return atol, rtol


def check(out, ref, atol, rtol):
    """(passes, max abs error) of out against the float64 reference."""
    err = (out.double() - ref).abs_()
    ok = bool((err <= atol + rtol * ref.abs()).all().item()) and not bool(out.isnan().any())
    return ok, float(err.max().item())


# ----------------------------------------------------------------------------- one case
def run_case(args, lib, timer, ceiling, l2_bytes, op, dtype_name, rows, cols):
    is_log = op == "log_softmax"
    tdtype, tdt, elem = DTYPES[dtype_name]
    nbytes = rows * cols * elem
    traffic = 2 * nbytes                     # reads x once, writes y once
    target = max(256 << 20, 3 * l2_bytes)
    copies = min(MAX_COPIES, max(1, math.ceil(target / traffic)))
    batch = min(MAX_BATCH, max(2, math.ceil(4e9 / traffic)))
    torch_fn = torch.log_softmax if is_log else torch.softmax

    gen = torch.Generator(device="cuda").manual_seed(rows * 131 + cols)
    xs = [torch.empty(rows, cols, dtype=tdt, device="cuda").uniform_(-8, 8, generator=gen)
          for _ in range(copies)]
    ys = [torch.empty_like(x) for x in xs]
    ref = torch_fn(xs[0].double(), dim=-1)
    atol, rtol = tolerance(dtype_name, is_log)

    res = {"op": op, "dtype": dtype_name, "rows": rows, "cols": cols, "bytes": traffic,
           "copies": copies, "batch": batch, "providers": {}}

    def record(name, ms, ok, err, **extra):
        res["providers"][name] = {"ms": ms, "gbps": traffic / (ms * 1e-3) / 1e9, "ok": ok,
                                  "max_abs_err": err, **extra}

    def fail(name, e):
        msg = f"{type(e).__name__}: {e}".splitlines()[0][:200]
        res["providers"][name] = {"ms": None, "error": msg}
        log(f"    {name}: n/a ({msg})")

    # ours
    try:
        res["variant"] = lib.explain(tdtype, rows, cols)
        launch = lib.launcher(is_log, tdtype, rows, cols)
        xp = [x.data_ptr() for x in xs]
        yp = [y.data_ptr() for y in ys]
        stream = torch.cuda.current_stream().cuda_stream
        for y in ys:
            y.fill_(float("nan"))
        for i in range(copies):
            launch(yp[i], xp[i], stream)
        torch.cuda.synchronize()
        ok, err = check(ys[0], ref, atol, rtol)
        if not ok:
            log(f"    ours: WRONG RESULTS (max abs error {err:.3g}, atol {atol:g}, rtol {rtol:g})")
        ms = timer.per_launch_ms(lambda i: launch(yp[i], xp[i], stream), copies, batch)
        record("ours", ms, ok, err)
    except Exception as e:  # noqa: BLE001
        fail("ours", e)
        res["providers"]["ours"]["ok"] = False

    # torch eager
    try:
        ok, err = check(torch_fn(xs[0], dim=-1), ref, atol, rtol)
        ms = timer.per_launch_ms(lambda i: torch_fn(xs[i], dim=-1), copies, batch)
        record("torch", ms, ok, err)
    except Exception as e:  # noqa: BLE001
        fail("torch", e)

    # torch.compile
    if args.no_compile:
        res["providers"]["compile"] = {"ms": None, "error": "skipped (--no-compile)"}
    else:
        try:
            torch._dynamo.reset()
            compiled = torch.compile(lambda t: torch_fn(t, dim=-1), dynamic=False)
            t0 = time.perf_counter()
            out = compiled(xs[0])
            torch.cuda.synchronize()
            compile_s = time.perf_counter() - t0
            ok, err = check(out, ref, atol, rtol)
            del out
            ms = timer.per_launch_ms(lambda i: compiled(xs[i]), copies, batch)
            record("compile", ms, ok, err, compile_s=round(compile_s, 2))
        except Exception as e:  # noqa: BLE001
            fail("compile", e)

    # Triton: the one-block kernel where the row fits it, the looped one where the row is wide
    if args.no_triton or triton is None:
        why = "skipped (--no-triton)" if args.no_triton else f"no triton: {TRITON_ERROR}"
        res["providers"]["triton"] = {"ms": None, "error": why}
    else:
        kinds = []
        if triton.next_power_of_2(cols) <= TRITON_ROW_MAX:
            kinds.append(("row", triton_row_launcher(is_log, rows, cols)))
        if cols >= TRITON_LOOP_FROM:
            kinds.append(("loop", triton_loop_launcher(is_log, rows, cols)))
        best = None
        for kind, tlaunch in kinds:
            try:
                for y in ys:
                    y.fill_(float("nan"))
                for i in range(copies):
                    tlaunch(ys[i], xs[i])
                torch.cuda.synchronize()
                ok, err = check(ys[0], ref, atol, rtol)
                ms = timer.per_launch_ms(lambda i: tlaunch(ys[i], xs[i]), copies, batch)
                res[f"triton_{kind}_ms"] = ms
                if best is None or ms < best[1]:
                    best = (kind, ms, ok, err)
            except Exception as e:  # noqa: BLE001
                res[f"triton_{kind}_ms"] = None
                first = str(e).splitlines()[0][:200] if str(e) else ""
                log(f"    triton ({kind}): n/a ({type(e).__name__}: {first})")
        if best is None:
            res["providers"]["triton"] = {"ms": None, "error": "no Triton kernel ran"}
        else:
            record("triton", best[1], best[2], best[3], kernel=best[0])

    for name in PROVIDERS:
        p = res["providers"].get(name, {})
        if p.get("ms") is not None:
            p["frac_copy"] = p["gbps"] / ceiling
        if name != "ours" and p.get("ok") is False:
            log(f"    note: {name} differs from the float64 reference by up to "
                f"{p['max_abs_err']:.3g}")
    peers = [res["providers"][n]["ms"] for n in PROVIDERS[1:]
             if res["providers"].get(n, {}).get("ms") is not None]
    ours = res["providers"]["ours"].get("ms")
    res["speedup_vs_best_peer"] = min(peers) / ours if peers and ours else None
    del xs, ys, ref
    torch.cuda.empty_cache()
    return res


# ----------------------------------------------------------------------------- output
def fmt_ms(p):
    return f"{p['ms']:.4f}" if p and p.get("ms") is not None else "n/a"


def table(results):
    head = (f"{'op':<12}{'shape':>14} {'dtype':<5}{'ours ms':>10}{'GB/s':>8}{'%copy':>7}"
            f"{'torch ms':>10}{'compile ms':>11}{'triton ms':>11}  {'vs best':>8}")
    lines = [head, "-" * len(head)]
    for r in results:
        p = r["providers"]
        o = p.get("ours", {})
        gbps = f"{o['gbps']:.0f}" if o.get("ms") is not None else "n/a"
        frac = f"{100 * o['frac_copy']:.0f}%" if o.get("ms") is not None else "n/a"
        if o.get("ok") is False:
            frac += "!"
        tri = fmt_ms(p.get("triton"))
        if p.get("triton", {}).get("kernel") == "loop":
            tri += "L"
        sp = f"{r['speedup_vs_best_peer']:.2f}x" if r.get("speedup_vs_best_peer") else "n/a"
        lines.append(f"{r['op']:<12}{str(r['rows']) + 'x' + str(r['cols']):>14} {r['dtype']:<5}"
                     f"{fmt_ms(o):>10}{gbps:>8}{frac:>7}{fmt_ms(p.get('torch')):>10}"
                     f"{fmt_ms(p.get('compile')):>11}{tri:>11}  {sp:>8}")
    return "\n".join(lines)


def plot(results, ceiling, device, out_dir):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except Exception as e:  # noqa: BLE001
        log(f"no plots: matplotlib: {e}")
        return []
    written = []
    for op in sorted({r["op"] for r in results}):
        for dt in sorted({r["dtype"] for r in results}):
            rs = [r for r in results if r["op"] == op and r["dtype"] == dt]
            if not rs:
                continue
            labels = [f"{r['rows']}x{r['cols']}" for r in rs]
            fig, ax = plt.subplots(figsize=(11, 5))
            for name in PROVIDERS:
                ys = [r["providers"].get(name, {}).get("gbps") for r in rs]
                ys = [y if y is not None else float("nan") for y in ys]
                ax.plot(range(len(rs)), ys, marker="o", label=name)
            ax.axhline(ceiling, color="gray", linestyle="--", label=f"copy {ceiling:.0f} GB/s")
            ax.set_xticks(range(len(rs)))
            ax.set_xticklabels(labels, rotation=30, ha="right")
            ax.set_ylabel("GB/s (x read + y written)")
            ax.set_ylim(bottom=0)
            ax.set_title(f"{op} {dt} on {device}")
            ax.grid(alpha=0.3)
            ax.legend()
            fig.tight_layout()
            path = os.path.join(out_dir, f"{op}_{dt}.png")
            fig.savefig(path, dpi=110)
            plt.close(fig)
            written.append(path)
    return written


def parse_shapes(text):
    shapes = []
    for item in text.split(","):
        r, c = item.lower().split("x")
        shapes.append((int(r), int(c)))
    return shapes


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lib", default="build/libfusedops.so")
    ap.add_argument("--out", default="vs_torch_out", help="folder for the plots (and the JSON)")
    ap.add_argument("--json", default=None, help="results file (default OUT/vs_torch.json)")
    ap.add_argument("--dtypes", default="bf16,f32")
    ap.add_argument("--ops", default="softmax", help="softmax,log_softmax")
    ap.add_argument("--shapes", default=None, help="RxC,RxC,... instead of the built-in list")
    ap.add_argument("--variant", default=os.environ.get("FUSEDOPS_BENCH_VARIANT"),
                    help="time this variant (tile_softmax_variant) as ours")
    ap.add_argument("--reps", type=int, default=15, help="timed batches per measurement")
    ap.add_argument("--no-compile", action="store_true")
    ap.add_argument("--no-triton", action="store_true")
    args = ap.parse_args()
    t_start = time.perf_counter()
    # Inductor explains, once per compile, that it split a long reduction; the table says enough.
    warnings.filterwarnings("ignore", message=".*Online softmax is disabled.*")

    dtypes = [d.strip() for d in args.dtypes.split(",") if d.strip()]
    ops = [o.strip() for o in args.ops.split(",") if o.strip()]
    if any(d not in DTYPES for d in dtypes) or any(o not in ("softmax", "log_softmax")
                                                   for o in ops):
        ap.error("--dtypes takes f32,f16,bf16; --ops takes softmax,log_softmax")
    shapes = parse_shapes(args.shapes) if args.shapes else SHAPES
    if not torch.cuda.is_available():
        log("SKIP: no GPU: torch.cuda.is_available() is False")
        return 77
    os.makedirs(args.out, exist_ok=True)
    json_path = args.json or os.path.join(args.out, "vs_torch.json")

    lib = FusedOps(os.path.abspath(args.lib))
    arch = make_context_current(lib)
    if args.variant:
        lib.forced = lib.so.tile_variant_find(args.variant.encode())
        if lib.forced < 0:
            log(f"unknown variant {args.variant}")
            return 2
        forced = lib.variant(lib.forced)
        dtypes = [d for d in dtypes if DTYPES[d][0] == forced.dtype]
        shapes = [s for s in shapes if not forced.max_cols or s[1] <= forced.max_cols]
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    l2_bytes = int(getattr(props, "L2_cache_size", 50 << 20))
    timer = Timer(args.reps)
    ceiling = copy_gbps(timer)
    device = props.name
    info = {
        "device": device, "compute_capability": f"{props.major}.{props.minor}",
        "sm_count": props.multi_processor_count, "l2_bytes": l2_bytes,
        "cuda": torch.version.cuda, "torch": torch.__version__,
        "triton": getattr(triton, "__version__", None), "libfusedops": lib.version(),
        "lib_path": os.path.abspath(args.lib), "arch": arch, "copy_gbps": ceiling,
        "forced_variant": args.variant, "reps": args.reps,
        "timing": "median over reps of (CUDA-event time of a batch of launches) / batch, "
                  "after a sleep kernel that lets the host enqueue the batch; inputs rotated "
                  "over copies >= max(256 MiB, 3 x L2)",
    }
    log(f"{device} (sm_{props.major}{props.minor}, {props.multi_processor_count} SMs, "
        f"L2 {l2_bytes >> 20} MiB), torch {torch.__version__}, triton {info['triton']}, "
        f"libfusedops {lib.version()}")
    log(f"device-to-device copy: {ceiling:.0f} GB/s (read + written)")

    results, bad = [], 0
    for op in ops:
        for dt in dtypes:
            for rows, cols in shapes:
                log(f"{op} {dt} {rows}x{cols}")
                try:
                    r = run_case(args, lib, timer, ceiling, l2_bytes, op, dt, rows, cols)
                except Exception:  # noqa: BLE001 - keep going; the traceback says what broke
                    traceback.print_exc()
                    bad += 1
                    continue
                results.append(r)
                p = r["providers"]
                o = p.get("ours", {})
                if o.get("ok") is False:
                    bad += 1
                parts = [f"{n} {fmt_ms(p.get(n))}" for n in PROVIDERS]
                extra = (f" = {o['gbps']:.0f} GB/s, {100 * o['frac_copy']:.0f}% of copy"
                         if o.get("ms") is not None else "")
                log(f"    {', '.join(parts)} ms{extra}  [{r.get('variant', '?')}]")

    info["results"] = results
    info["elapsed_s"] = round(time.perf_counter() - t_start, 1)
    with open(json_path, "w") as f:
        json.dump(info, f, indent=1)
    plots = plot(results, ceiling, device, args.out)
    log(f"\nwrote {json_path}" + (f" and {len(plots)} plots in {args.out}" if plots else ""))
    log(f"elapsed {info['elapsed_s']} s; copy ceiling {ceiling:.0f} GB/s; "
        "vs best = best peer ms / ours ms; L: Triton's looped kernel; !: ours gave wrong results")
    log("")
    log(table(results))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
