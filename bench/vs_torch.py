#!/usr/bin/env python3
"""libfusedops softmax, norms and flash attention beside their peers, on one GPU, in one run.

Ops (--ops, default all but log_softmax, attention and grouped_matmul):
  softmax, log_softmax    y = softmax(x) over rows
  layernorm               y = LayerNorm(x) * weight + bias                  (eps 1e-5)
  rmsnorm                 y = RMSNorm(x) * weight                           (eps 1e-5)
  residual_dropout        y = residual + dropout(x + bias, p = 0.1)
  residual_dropout_norm   s = residual + dropout(x + bias, p = 0.1), y = LayerNorm(s) * weight
                          + norm_bias; both written
  attention               o = softmax(q k^T / sqrt(d) [causal mask]) v, BSHD, f16/bf16
                          (--ops attention: its own providers, checks and table; see below)
  grouped_matmul          C_g = A_g B_g over mixture-of-experts groups, bf16 (--ops
                          grouped_matmul: its own providers, checks and table; see below)

Providers, per op, shape and dtype:
  ours     tile_softmax, tile_log_softmax, tile_layernorm, tile_rmsnorm, tile_residual_dropout,
           tile_residual_dropout_norm from libfusedops.so, through ctypes, on torch's current
           stream
  torch    eager: torch.softmax; F.layer_norm; F.rms_norm; residual + F.dropout(x + b, p);
           s = residual + F.dropout(x + b, p), F.layer_norm(s)
  compile  torch.compile of the same function, mode default, dynamic=False, compiled and warmed
           first
  triton   softmax: one program per row, the Triton tutorial's kernel (BLOCK_SIZE =
           next_power_of_2(cols), num_warps by block size) up to 65536 columns; a looped
           two-pass kernel (4096 columns at a time) beyond that, and also tried from 16384
           columns up, where the faster of the two is reported. layernorm, rmsnorm: one program
           per row in the same style (the whole row in registers, up to 65536 columns). None
           for the dropout ops.

Timing is the C++ bench's: CUDA events around a batch of back-to-back launches, divided by the
batch, median of --reps batches; inputs rotate over copies that hold at least 256 MiB and 3x L2
in all (at most 8), so L2 does not flatter the small shapes. Python enqueues slower than the
GPU runs the small shapes, so every batch starts behind a torch.cuda._sleep kernel long enough
for the host to enqueue the whole batch: the events then time GPU work, not Python.
GB/s counts the minimum bytes: every rows x cols input read once and every output written
once (softmax: 2 * rows * cols * element size), each [cols] vector once; %copy divides it by
the device-to-device copy bandwidth (y.copy_(x) of 1 GiB, bytes read plus written).

Every provider's output is checked against a float64 torch reference first; a wrong result from
ours fails the run (exit 1). Dropout draws different random numbers in every provider, so the
dropout ops are checked in two ways: at p = 0 against the exact sum (ours and torch eager), and
at the timed p = 0.1 element by element: each element must be either dropped (residual) or
kept ((x + b) / (1 - p) + residual), and the kept fraction within 0.01 of 1 - p; y of
residual_dropout_norm against the norm of the provider's own s.

Attention (--ops attention) compares tile_flash_attention (ctypes, BSHD tensors [b, s, h, d],
their strides in tile_flash_attention_args) with torch.nn.functional.scaled_dot_product_attention
on the same tensors seen as [b, h, s, d] through .transpose(1, 2) (views, no copies; GQA through
enable_gqa=True), under each SDPA backend alone (torch.nn.attention.sdpa_kernel with
FLASH_ATTENTION, CUDNN_ATTENTION, EFFICIENT_ATTENTION; a backend that raises for a case is
skipped and the reason printed). Shapes (b, h, s, d): (16,16,1024,64), (8,16,2048,128),
(4,16,4096,128), (2,16,8192,128), (1,16,16384,128), and GQA (4, 32 q heads, 8 kv heads, 4096,
128), each full and causal, bf16; fp16 on (8,16,2048,128). Inputs: q, k uniform in [-2, 2),
v in [-1, 1). TFLOP/s counts 4*b*h*s_q*s_k*d (halved for causal); vs best = the fastest
backend's time / ours, vs flash = FLASH_ATTENTION's / ours. Checks: every provider's output on
32 query rows (16 of the first and of the last (batch, head)) against float64, and ours against
SDPA's whole output (FLASH_ATTENTION's, else the first backend that ran); ours fails the run
(exit 1) above a max abs error of 2e-2 in bf16, 5e-3 in fp16. After the checks each provider
is timed in 3 rounds over all of them, the order rotated a round, and its median over the
rounds reported (as for grouped matmul, below). A round times a provider at a steady state:
0.5 s of launches back to back untimed, then 20 batches of about 20 ms with no idle gap (the
median batch), as a sustained workload runs at the GPU's power limit. With --clocks,
nvidia-smi samples the SM clock and board power every 50 ms, and each provider's medians over
its timed batches (and TFLOP/s a GHz: its work a cycle, apart from the clock its power buys)
go to the log and the JSON. Usage:

  python3 bench/vs_torch.py [--lib build/libfusedops.so] [--out DIR] [--json PATH]
                            [--dtypes bf16,f32] [--ops softmax,layernorm,...] [--shapes RxC,...]
                            [--attn-shapes BxHxSxD[xKV],...] [--variant NAME] [--no-compile]
                            [--no-triton] [--reps N] [--clocks]
  python3 bench/vs_torch.py --ops attention      # attention only

Grouped matmul (--ops grouped_matmul) compares tile_grouped_matmul (ctypes, GroupedMatmulArgs
from the tensors' strides) with torch._grouped_mm (a [total_m, K], b [G, K, N], offs int32
cumulative ends; no bias, which it does not take), a Python loop of torch.mm over the groups
(into slices of one output), and one dense torch.mm of [total_m, K] x [K, N] (the same FLOPs in
one cuBLAS call: the ceiling a grouped kernel aims at). Shapes (G, total_m, K, N): (8, 16384,
4096, 14336), (64, 16384, 2048, 1408), (128, 32768, 7168, 2048), (8, 512, 4096, 14336), bf16,
each with B [G, K, N] (kn, N contiguous) and [G, N, K] seen through .transpose(1, 2) (nk).
Group sizes: one Dirichlet(1) draw with seed 7, rounded to rows (gmm_routing.skewed_group_ends:
the same numbers as support_skewed_group_ends, so bench_grouped_matmul and `fusedops bench
grouped_matmul` route the same shape the same way), shared by every provider. Inputs: a uniform
in [-1, 1), b uniform in [-1, 1) * sqrt(3 / K) (entries of C of about unit size). TFLOP/s counts
2 * total_m * N * K; vs best = the fastest of torch._grouped_mm and the loop, its ms / ours;
vs dense = the dense mm's ms / ours. Each provider is timed in 3 rounds over all of them (the
order rotated a round), each at a steady state as for attention, and its median over the
rounds reported: the GPU reaches its power limit within a second of these products, so
whoever always ran first from idle would gain the clock. Checks before timing: ours against float64 on 16 rows (the
first and last of the first and last non-empty groups among them), and the providers' whole
outputs against ours, within |diff| <= atol + rtol |ref| (bf16 2e-2 + 1.6e-2, f16 5e-3 + 2e-3);
ours failing fails the run (exit 1). A provider that raises (torch._grouped_mm needs a recent
PyTorch and, for its fast path, sm_90 and bf16) is reported n/a with the reason.
--gmm-shapes GxMxKxN,... replaces the shapes; --gmm-routing replaces the draw: equal sizes,
whole:R (the draw's sizes rounded to multiples of R by largest remainder, so no group but the
largest ends inside a row tile of R), or a list of G sizes (bench/gmm_routing.py).
"""
import argparse
import ctypes
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import threading
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
# Keep in step with kShapes in bench/bench_norm.cc.
NORM_SHAPES = [
    (4096, 1024), (8192, 2048), (4096, 4096), (8192, 8192),
    (32768, 4096), (1024, 16384), (1024, 65536),
]
# (batch, query heads, seqlen, head_dim, key/value heads); keep in step with kShapes and
# kF16Shape in bench/bench_attention.cc.
ATTENTION_SHAPES = [
    (16, 16, 1024, 64, 16), (8, 16, 2048, 128, 16), (4, 16, 4096, 128, 16),
    (2, 16, 8192, 128, 16), (1, 16, 16384, 128, 16),
    (4, 32, 4096, 128, 8),  # GQA: 4 query heads per key/value head
]
ATTENTION_F16_SHAPE = (8, 16, 2048, 128, 16)
ATTENTION_TOL = {"bf16": 2e-2, "f16": 5e-3}  # max abs error of o, against float64 and SDPA
ATTENTION_REPS = 10
SDPA_BACKENDS = ("FLASH_ATTENTION", "CUDNN_ATTENTION", "EFFICIENT_ATTENTION")
SOFTMAX_OPS = ("softmax", "log_softmax")
NORM_OPS = ("layernorm", "rmsnorm", "residual_dropout", "residual_dropout_norm")
ATTENTION_OPS = ("attention",)
GROUPED_MATMUL_OPS = ("grouped_matmul",)
# attention and grouped_matmul only when asked for (--ops attention,grouped_matmul)
DEFAULT_OPS = ("softmax",) + NORM_OPS
ALL_OPS = SOFTMAX_OPS + NORM_OPS + ATTENTION_OPS + GROUPED_MATMUL_OPS
# (groups, total_m, K, N); keep in step with kShapes in bench/bench_grouped_matmul.cc.
GROUPED_MATMUL_SHAPES = [
    (8, 16384, 4096, 14336), (64, 16384, 2048, 1408), (128, 32768, 7168, 2048),
    (8, 512, 4096, 14336),
]
GMM_TOL = {"bf16": (2e-2, 1.6e-2), "f16": (5e-3, 2e-3)}  # (atol, rtol) of C
GMM_REPS = 10
GMM_PEERS = ("grouped_mm", "mm_loop", "dense_mm")
COMPUTE_ROUNDS = 3  # attention and grouped matmul: timing rounds over the providers, each
                    # one's median reported (record_in_rounds)
# attention and grouped matmul are timed at a steady state (Timer.steady_per_launch_ms): launches
# back to back for STEADY_WARMUP_MS untimed, then STEADY_BATCHES batches of about STEADY_BATCH_MS
# with no idle gap, as the GPU runs a sustained workload at its power limit (perf-notes,
# twenty-fifth session: a batch after an idle gap runs above that limit).
STEADY_WARMUP_MS, STEADY_BATCH_MS, STEADY_BATCHES = 500.0, 20.0, 20


def family(op):
    """The variant family (tile_variant_info.op) behind an op of this script."""
    return ("softmax" if op in SOFTMAX_OPS else "norm" if op in NORM_OPS
            else "attention" if op in ATTENTION_OPS else "grouped_matmul")
# op: (tile_norm_kind, reads residual (and bias, dropout), writes s, weight, norm_bias)
NORM_INFO = {
    "layernorm": (1, False, False, True, True),
    "rmsnorm": (2, False, False, True, False),
    "residual_dropout": (0, True, False, False, False),
    "residual_dropout_norm": (1, True, True, True, True),
}
NORM_EPS = 1e-5
DROPOUT_P = 0.1
DROPOUT_SEED, DROPOUT_OFFSET = 0x5EED0DD5, 0
SOFTMAX_REPS = 15  # default timed batches per measurement (--reps overrides both)
NORM_REPS = 7      # fewer for the norm ops: 56 cases with a compile each; keeps all ops ~4 min
DEVICE = "cuda"
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
# The ctypes mirrors of the public structs live in the Python package (checked against the C
# layout by the host test test_ctypes_layout); _lib imports only the standard library.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from fusedops._lib import (AddNormArgs, Decision, FlashAttentionArgs,  # noqa: E402
                           FLASH_ATTENTION_WORKSPACE_BYTES, GROUPED_MATMUL_WORKSPACE_BYTES,
                           GroupedMatmulArgs, VariantInfo, set_strides)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gmm_routing  # noqa: E402  (no torch)


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
        f32, u64, args_p = ctypes.c_float, ctypes.c_uint64, ctypes.POINTER(AddNormArgs)
        norm_fns = {  # a library without the norm ops still runs softmax
            "tile_layernorm": [ctypes.c_int, vp, vp, vp, vp, vp, vp, i64, i64, i64, i64, f32, vp],
            "tile_rmsnorm": [ctypes.c_int, vp, vp, vp, vp, i64, i64, i64, i64, f32, vp],
            "tile_residual_dropout": [ctypes.c_int, vp, vp, vp, vp, vp, i64, i64, i64, i64, i64,
                                      f32, u64, u64, vp],
            "tile_residual_dropout_norm": [args_p, vp],
            "tile_add_norm_variant": [i32, args_p, vp],
            "tile_norm_explain": [ctypes.c_int, i64, i64, i64, i64, i32, i32,
                                  ctypes.POINTER(Decision)],
            "tile_add_norm_explain": [args_p, i32, ctypes.POINTER(Decision)],
            "tile_flash_attention": [ctypes.POINTER(FlashAttentionArgs), vp],
            "tile_flash_attention_variant": [i32, ctypes.POINTER(FlashAttentionArgs), vp],
            "tile_flash_attention_explain": [ctypes.POINTER(FlashAttentionArgs), i32,
                                             ctypes.POINTER(Decision)],
            "tile_grouped_matmul": [ctypes.POINTER(GroupedMatmulArgs), vp],
            "tile_grouped_matmul_variant": [i32, ctypes.POINTER(GroupedMatmulArgs), vp],
            "tile_grouped_matmul_explain": [ctypes.POINTER(GroupedMatmulArgs), i32,
                                            ctypes.POINTER(Decision)],
        }
        for name, argtypes in norm_fns.items():  # and attention, grouped matmul
            f = getattr(so, name, None)
            if f is not None:
                f.argtypes = argtypes
                f.restype = ctypes.c_int
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
        self.forced_op = None  # "softmax", "norm", "attention", ...: the forced variant's family

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

    def explain(self, tdtype, rows, cols, family="softmax"):
        if self.forced >= 0:
            return self.variant(self.forced).name.decode() + " (forced)"
        d = Decision(struct_size=ctypes.sizeof(Decision))
        name = f"tile_{family}_explain"
        s = getattr(self.so, name)(tdtype, rows, cols, cols, cols, 256, 0, ctypes.byref(d))
        if s != 0:
            raise RuntimeError(f"{name}: " + self.error(s))
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

    def struct_explain(self, fn, args):
        """The variant `fn` (tile_flash_attention, tile_grouped_matmul: a function taking an args
        struct) would run for args."""
        if self.forced >= 0:
            return self.variant(self.forced).name.decode() + " (forced)"
        d = Decision(struct_size=ctypes.sizeof(Decision))
        s = getattr(self.so, fn + "_explain")(ctypes.byref(args), 0, ctypes.byref(d))
        if s != 0:
            raise RuntimeError(f"{fn}_explain: " + self.error(s))
        return self.variant(d.variant).name.decode()

    def struct_launcher(self, fn, structs, stream):
        """A function launch(i) running `fn` (tile_flash_attention, tile_grouped_matmul), or the
        forced variant through fn + "_variant", on structs[i] (args structs, kept alive by the
        caller)."""
        refs = [ctypes.byref(a) for a in structs]
        if self.forced >= 0:
            fn, forced = getattr(self.so, fn + "_variant"), self.forced

            def launch(i):
                s = fn(forced, refs[i], stream)
                if s:
                    raise RuntimeError(self.error(s))
        else:
            fn = getattr(self.so, fn)

            def launch(i):
                s = fn(refs[i], stream)
                if s:
                    raise RuntimeError(self.error(s))
        return launch

    def norm_explain(self, op, tdtype, rows, cols, bufs, p):
        """The variant norm op `op` runs on buffer set 0: tile_add_norm_explain of its own call
        (dropout and the operands move the choice); a library before 0.5.0 has only
        tile_norm_explain, which describes a norm of x alone."""
        if self.forced >= 0 or getattr(self.so, "tile_add_norm_explain", None) is None:
            return self.explain(tdtype, rows, cols, "norm")
        return self.struct_explain("tile_add_norm", norm_args(op, tdtype, rows, cols, bufs, 0, p))

    def norm_launcher(self, op, tdtype, rows, cols, bufs, p, stream):
        """A function launch(i) running norm op `op` on buffer set i. bufs: lists of data
        pointers per set, "x", "r", "y", "s" (those the op uses), and the vector pointers "b",
        "w", "nb"."""
        so = self.so

        def call(fn, *a):
            s = fn(*a)
            if s:
                raise RuntimeError(self.error(s))

        def args(i):
            return norm_args(op, tdtype, rows, cols, bufs, i, p)

        if self.forced >= 0:
            fn, forced = so.tile_add_norm_variant, self.forced
            structs = [args(i) for i in range(len(bufs["x"]))]  # byref keeps each alive too
            refs = [ctypes.byref(a) for a in structs]
            return lambda i: call(fn, forced, refs[i], stream)
        x, y = bufs["x"], bufs["y"]
        if op == "layernorm":
            fn, w, nb = so.tile_layernorm, bufs["w"], bufs["nb"]
            return lambda i: call(fn, tdtype, y[i], x[i], w, nb, None, None, rows, cols, cols,
                                  cols, NORM_EPS, stream)
        if op == "rmsnorm":
            fn, w = so.tile_rmsnorm, bufs["w"]
            return lambda i: call(fn, tdtype, y[i], x[i], w, None, rows, cols, cols, cols,
                                  NORM_EPS, stream)
        if op == "residual_dropout":
            fn, r, b = so.tile_residual_dropout, bufs["r"], bufs["b"]
            return lambda i: call(fn, tdtype, y[i], x[i], r[i], b, None, rows, cols, cols, cols,
                                  cols, p, DROPOUT_SEED, DROPOUT_OFFSET, stream)
        fn = so.tile_residual_dropout_norm
        structs = [args(i) for i in range(len(x))]
        refs = [ctypes.byref(a) for a in structs]
        return lambda i: call(fn, refs[i], stream)


def norm_args(op, tdtype, rows, cols, bufs, i, p):
    """Norm op `op` on buffer set i as tile_add_norm_args, as bench_norm.cc's make_args. bufs:
    lists of data pointers per set, "x", "r", "y", "s" (those the op uses), and the vector
    pointers "b", "w", "nb"."""
    norm, residual, writes_s, weight, norm_bias = NORM_INFO[op]
    a = AddNormArgs(struct_size=ctypes.sizeof(AddNormArgs), dtype=tdtype, norm=norm,
                    rows=rows, cols=cols, x=bufs["x"][i], ld_x=cols, eps=NORM_EPS)
    if norm == 0:  # residual_dropout: its output is s
        a.s, a.ld_s = bufs["y"][i], cols
    else:
        a.y, a.ld_y = bufs["y"][i], cols
        if writes_s:
            a.s, a.ld_s = bufs["s"][i], cols
    if residual:
        a.residual, a.ld_residual, a.bias = bufs["r"][i], cols, bufs["b"]
        a.p, a.seed, a.offset = p, DROPOUT_SEED, DROPOUT_OFFSET
    if weight:
        a.weight = bufs["w"]
    if norm_bias:
        a.norm_bias = bufs["nb"]
    return a


def warm_ours(lib, fn, structs, outputs):
    """(variant, launch) for `fn` (tile_flash_attention, tile_grouped_matmul) on its args
    structs, after the outputs were poisoned (NaN) and every set ran once."""
    variant = lib.struct_explain(fn, structs[0])
    launch = lib.struct_launcher(fn, structs, torch.cuda.current_stream().cuda_stream)
    for o in outputs:
        o.fill_(float("nan"))
    for i in range(len(structs)):
        launch(i)
    torch.cuda.synchronize()
    return variant, launch


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


    @triton.jit
    def norm_row_kernel(y_ptr, x_ptr, w_ptr, b_ptr, ld_y, ld_x, n_cols, eps,
                        BLOCK_SIZE: tl.constexpr, RMS: tl.constexpr):
        # One program per row, the whole row in registers (the tutorial's layer norm with
        # BLOCK_SIZE = next_power_of_2(cols)): reads x once, writes y once. LayerNorm:
        # (x - mean) * rstd * w + b; RMSNorm (RMS): x * rstd * w, b unused.
        row = tl.program_id(0).to(tl.int64)
        cols = tl.arange(0, BLOCK_SIZE)
        mask = cols < n_cols
        x = tl.load(x_ptr + row * ld_x + cols, mask=mask, other=0.0).to(tl.float32)
        if RMS:
            xc = x
        else:
            mean = tl.sum(x, axis=0) / n_cols
            xc = tl.where(mask, x - mean, 0.0)
        var = tl.sum(xc * xc, axis=0) / n_cols
        rstd = 1 / tl.sqrt(var + eps)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        y = xc * rstd * w
        if not RMS:
            y += tl.load(b_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_ptr + row * ld_y + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


def triton_warps(block):
    return 16 if block >= 4096 else 8 if block >= 2048 else 4


def triton_row_launcher(is_log, rows, cols):
    block = triton.next_power_of_2(cols)
    warps = triton_warps(block)

    def launch(y, x):
        softmax_row_kernel[(rows,)](y, x, cols, cols, cols, BLOCK_SIZE=block, LOG=is_log,
                                    num_warps=warps)
    return launch


def triton_loop_launcher(is_log, rows, cols):
    def launch(y, x):
        softmax_loop_kernel[(rows,)](y, x, cols, cols, cols, BLOCK_SIZE=TRITON_LOOP_BLOCK,
                                     LOG=is_log, num_warps=8)
    return launch


def triton_norm_launcher(rms, rows, cols):
    block = triton.next_power_of_2(cols)
    warps = triton_warps(block)

    def launch(y, x, w, b):
        norm_row_kernel[(rows,)](y, x, w, b, cols, cols, cols, NORM_EPS, BLOCK_SIZE=block,
                                 RMS=rms, num_warps=warps)
    return launch


# ----------------------------------------------------------------------------- timing
class ClockSampler:
    """The GPU's SM clock, board power and active clock-event reasons, sampled by nvidia-smi
    every SAMPLE_MS while the run lasts (--clocks). At the power cap the clock a provider gets
    is part of its speed: TFLOP/s a GHz is its work a cycle, the clock what its power buys
    (perf-notes, twenty-ninth session)."""

    SAMPLE_MS = 50

    def __init__(self, device_index):
        self.samples = []  # (host time, MHz, W, reasons)
        self.proc = subprocess.Popen(
            ["nvidia-smi", f"--id={device_index}",
             "--query-gpu=clocks.sm,power.draw,clocks_event_reasons.active",
             "--format=csv,noheader,nounits", f"-lms={self.SAMPLE_MS}"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        for line in self.proc.stdout:
            parts = [x.strip() for x in line.split(",")]
            try:
                self.samples.append((time.perf_counter(), float(parts[0]), float(parts[1]),
                                     parts[2]))
            except (ValueError, IndexError):  # a field nvidia-smi cannot read here
                continue

    def window(self, start, end):
        """{"sm_mhz", "board_w", "clock_event_reasons"} over host times [start, end] (medians),
        or None where no sample fell in it."""
        got = [x for x in self.samples if start <= x[0] <= end]
        if not got:
            return None
        return {"sm_mhz": statistics.median(x[1] for x in got),
                "board_w": statistics.median(x[2] for x in got),
                "clock_event_reasons": sorted({x[3] for x in got})}

    def close(self):
        self.proc.kill()
        self.proc.wait()


class Timer:
    def __init__(self, reps):
        self.reps = reps
        self.start = torch.cuda.Event(enable_timing=True)
        self.stop = torch.cuda.Event(enable_timing=True)
        self.sleep = getattr(torch.cuda, "_sleep", None)
        self.sampler = None      # a ClockSampler (--clocks)
        self.last_clocks = None  # its window over steady_per_launch_ms's timed batches
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

    def steady_per_launch_ms(self, launch, copies, batch):
        """Time per launch at a steady state: one timed batch of `batch` launches sizes the
        batches; launches then run back to back, STEADY_WARMUP_MS of them untimed and
        STEADY_BATCHES batches of about STEADY_BATCH_MS between events, with no host
        synchronization (so no idle gap) until the last. Median of batch time / launches."""
        torch.cuda.synchronize()
        self.start.record()
        for i in range(batch):
            launch(i % copies)
        self.stop.record()
        self.stop.synchronize()
        per = max(self.start.elapsed_time(self.stop) / batch, 1e-3)
        n = max(1, round(STEADY_BATCH_MS / per))
        k = 0
        for _ in range(max(1, round(STEADY_WARMUP_MS / per))):
            launch(k % copies)
            k += 1
        events = [torch.cuda.Event(enable_timing=True) for _ in range(STEADY_BATCHES + 1)]
        events[0].record()
        for e in events[1:]:
            for _ in range(n):
                launch(k % copies)
                k += 1
            e.record()
        events[-1].synchronize()
        if self.sampler is not None:  # the timed batches ended about when the host returned
            end = time.perf_counter()
            self.last_clocks = self.sampler.window(
                end - events[0].elapsed_time(events[-1]) * 1e-3, end)
        return statistics.median(a.elapsed_time(b) / n for a, b in zip(events, events[1:]))


def rotated_rounds_ms(timer, timed, rounds, batch, copies=1, steady=True):
    """{name: [per-launch ms, one a round]} of timer.steady_per_launch_ms over `rounds` rounds of
    the providers of `timed` (name -> launch(i)), the order rotated a round: a provider always
    timed first from idle would gain the clock (perf-notes G8). For the tools beside this one
    (varlen_vs_sdpa.py, decode_vs_sdpa.py); record_in_rounds adds failures and clocks.
    steady=False times by timer.per_launch_ms instead: the GPU waits while the host enqueues
    each batch, for kernels shorter than a launch from Python (decode), which back to back
    would time the host."""
    names = list(timed)
    times = {name: [] for name in names}
    per_launch = timer.steady_per_launch_ms if steady else timer.per_launch_ms
    for r in range(rounds):
        k = r % len(names) if names else 0
        for name in names[k:] + names[:k]:
            times[name].append(per_launch(timed[name], copies, batch))
    return times


def sdpa_tool_args(doc, shapes, rounds):
    """The command line of a tool that sets our torch ops against SDPA (varlen_vs_sdpa.py,
    decode_vs_sdpa.py): --lib, --shapes, --dtype, --rounds, and whatever the tool adds to the
    parser it returns."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--lib", help="libfusedops.so (else FUSEDOPS_LIBRARY or the usual search)")
    ap.add_argument("--shapes", default=shapes)
    ap.add_argument("--dtype", default="bf16", choices=("bf16", "f16"))
    ap.add_argument("--rounds", type=int, default=rounds)
    return ap


def load_torch_ops(lib):
    """Registers torch.ops.fusedops from `lib` (else FUSEDOPS_LIBRARY or the usual search)."""
    if lib:
        os.environ["FUSEDOPS_LIBRARY"] = lib
    import fusedops.torch  # noqa: F401  registers the ops


def record_in_rounds(res, record, timer, timed, extras, copies, batch, rounds=COMPUTE_ROUNDS):
    """Times the providers of `timed` (name -> launch(i)) once a round, the order rotated a
    round, and records each one's median: record(name, ms, rounds_ms=..., **extras[name]).
    Compute-bound products hold the GPU at its power limit within a second, so a provider
    always timed first from idle would gain the clock (perf-notes G8). A provider that raises
    while timed is recorded with its error and leaves the later rounds."""
    names = list(timed)
    times, failed = {name: [] for name in names}, {}
    clocks = {name: [] for name in names}
    for r in range(rounds):
        k = r % len(names) if names else 0
        for name in names[k:] + names[:k]:
            if name in failed:
                continue
            try:
                timer.last_clocks = None
                times[name].append(timer.steady_per_launch_ms(timed[name], copies, batch))
                if timer.last_clocks:
                    clocks[name].append(timer.last_clocks)
            except Exception as e:  # noqa: BLE001 - reported as that provider's error
                failed[name] = f"{type(e).__name__}: {e}".splitlines()[0][:300]
    for name in names:
        if name in failed:
            res["providers"][name] = {"ms": None, "error": failed[name],
                                      **({"ok": False} if name == "ours" else {})}
            log(f"    {name}: failed while timed ({failed[name]})")
        else:
            record(name, statistics.median(times[name]), rounds_ms=times[name], **extras[name])
            if clocks[name]:  # medians over the rounds, and the work a cycle at that clock
                p = res["providers"][name]
                p["sm_mhz"] = statistics.median(c["sm_mhz"] for c in clocks[name])
                p["board_w"] = statistics.median(c["board_w"] for c in clocks[name])
                p["clock_event_reasons"] = sorted({x for c in clocks[name]
                                                   for x in c["clock_event_reasons"]})
                p["tflops_per_ghz"] = p["tflops"] / (p["sm_mhz"] * 1e-3)


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


def norm_tolerance(dtype_name):
    # (atol, rtol) of a norm output: one rounding of y (rtol), and the fp32 row statistics
    # where y cancels against a bias (atol). As the GPU tests' support_norm_tolerance, looser
    # in atol: the peers round s before the norm or not (torch.compile keeps it in fp32).
    return {"f32": (1e-4, 2e-5), "f16": (2e-3, 2.0 ** -10), "bf16": (1.6e-2, 2.0 ** -7)}[dtype_name]


def check(out, ref, atol, rtol):
    """(passes, max abs error) of out against the float64 reference."""
    err = (out.double() - ref).abs_()
    ok = bool((err <= atol + rtol * ref.abs()).all().item()) and not bool(out.isnan().any())
    return ok, float(err.max().item())


def zeroed_workspace(nbytes):
    """A counter workspace of nbytes on DEVICE for a case's calls (all on one stream, never at
    once): zeroed once, left zeroed by every call (docs/api.md, "Workspace")."""
    return torch.zeros(nbytes // 8, dtype=torch.int64, device=DEVICE)


def row_chunks(rows, cols, elems=1 << 24):
    """Row ranges of about `elems` elements: float64 checks of the big shapes in pieces."""
    step = max(1, elems // cols)
    return [(r, min(rows, r + step)) for r in range(0, rows, step)]


# ----------------------------------------------------------------------------- cases
class SoftmaxCase:
    """softmax or log_softmax of one dtype and shape: inputs, providers, checks."""
    family = "softmax"

    def variant(self, lib):
        return lib.explain(self.tdtype, self.rows, self.cols)

    def __init__(self, op, dtype_name, rows, cols):
        self.op, self.dtype_name, self.rows, self.cols = op, dtype_name, rows, cols
        self.is_log = op == "log_softmax"
        self.tdtype, self.tdt, elem = DTYPES[dtype_name]
        self.set_bytes = 2 * rows * cols * elem   # x and y of one launch
        self.traffic = self.set_bytes              # reads x once, writes y once
        self.p = None                              # no dropout
        self.torch_fn = torch.log_softmax if self.is_log else torch.softmax

    def setup(self, copies):
        gen = torch.Generator(device=DEVICE).manual_seed(self.rows * 131 + self.cols)
        self.xs = [torch.empty(self.rows, self.cols, dtype=self.tdt, device=DEVICE)
                   .uniform_(-8, 8, generator=gen) for _ in range(copies)]
        self.ys = [torch.empty_like(x) for x in self.xs]
        self.ref = self.torch_fn(self.xs[0].double(), dim=-1)
        self.atol, self.rtol = tolerance(self.dtype_name, self.is_log)
        self.tol_text = f"atol {self.atol:g}, rtol {self.rtol:g}"

    def release(self):
        del self.xs, self.ys, self.ref

    def check(self, out, p=None):
        return check(out, self.ref, self.atol, self.rtol)

    def ours(self, lib, p=None):
        """(launch(i), the outputs of set 0)."""
        launch = lib.launcher(self.is_log, self.tdtype, self.rows, self.cols)
        xp = [x.data_ptr() for x in self.xs]
        yp = [y.data_ptr() for y in self.ys]
        stream = torch.cuda.current_stream().cuda_stream
        return (lambda i: launch(yp[i], xp[i], stream)), self.ys[0]

    def poison(self):
        for y in self.ys:
            y.fill_(float("nan"))

    def eager(self, p=None):
        """(the torch function, its arguments per set)."""
        fn = self.torch_fn
        return (lambda t: fn(t, dim=-1)), [(x,) for x in self.xs]

    def triton_kinds(self):
        """[(kind, launch(i), outputs of set 0)]: the Triton kernels to try, best reported."""
        kinds = []
        if triton.next_power_of_2(self.cols) <= TRITON_ROW_MAX:
            kinds.append(("row", triton_row_launcher(self.is_log, self.rows, self.cols)))
        if self.cols >= TRITON_LOOP_FROM:
            kinds.append(("loop", triton_loop_launcher(self.is_log, self.rows, self.cols)))
        xs, ys = self.xs, self.ys
        return [(kind, (lambda i, t=t: t(ys[i], xs[i])), ys[0]) for kind, t in kinds]


class NormCase:
    """layernorm, rmsnorm, residual_dropout or residual_dropout_norm of one dtype and shape."""
    family = "norm"

    def __init__(self, op, dtype_name, rows, cols):
        self.op, self.dtype_name, self.rows, self.cols = op, dtype_name, rows, cols
        self.tdtype, self.tdt, elem = DTYPES[dtype_name]
        norm, self.residual, self.writes_s, self.weight, self.norm_bias = NORM_INFO[op]
        self.rms = norm == 2
        big = 2 + self.residual + self.writes_s               # x, y (, residual) (, s)
        vectors = self.residual + self.weight + self.norm_bias  # bias (, weight) (, norm_bias)
        self.set_bytes = big * rows * cols * elem
        self.traffic = self.set_bytes + vectors * cols * elem
        self.p = DROPOUT_P if self.residual else None

    def setup(self, copies):
        rows, cols, dt = self.rows, self.cols, self.tdt
        gen = torch.Generator(device=DEVICE).manual_seed(rows * 131 + cols)

        def uniform(shape, lo, hi):
            return torch.empty(shape, dtype=dt, device=DEVICE).uniform_(lo, hi, generator=gen)
        self.xs = [uniform((rows, cols), -8, 8) for _ in range(copies)]
        self.rs = [uniform((rows, cols), -8, 8) for _ in range(copies)] if self.residual else []
        self.b = uniform((cols,), -1, 1)
        self.w = uniform((cols,), 0.5, 1.5)
        self.nb = uniform((cols,), -1, 1)
        self.ys = [torch.empty_like(x) for x in self.xs]
        self.ss = [torch.empty_like(x) for x in self.xs] if self.writes_s else []
        self.atol, self.rtol = norm_tolerance(self.dtype_name)
        texts = []
        if self.residual:
            texts.append(f"s: 2 x {tolerance(self.dtype_name, False)[1]:g} of the operands, "
                         "kept fraction 1 - p within 0.01")
        if self.op != "residual_dropout":
            texts.append(f"y: atol {self.atol:g}, rtol {self.rtol:g}")
        self.tol_text = "; ".join(texts)

    def release(self):
        del self.xs, self.rs, self.b, self.w, self.nb, self.ys, self.ss

    # -- checks, on set 0
    def check_norm(self, y, src):
        """y against the float64 norm of src (x, or the provider's own s as stored)."""
        F, cols = torch.nn.functional, self.cols
        ok, worst = True, 0.0
        for a, z in row_chunks(self.rows, cols):
            s64 = src[a:z].double()
            if self.rms:
                ref = F.rms_norm(s64, (cols,), self.w.double(), NORM_EPS)
            else:
                ref = F.layer_norm(s64, (cols,), self.w.double(), self.nb.double(), NORM_EPS)
            k, e = check(y[a:z], ref, self.atol, self.rtol)
            ok, worst = ok and k, max(worst, e)
        return ok, worst

    def check_dropout(self, s, p):
        """s = residual + dropout(x + b, p), whatever the mask: each element either dropped
        (residual) or kept ((x + b) * scale + residual), within two units of the dtype's
        rounding relative to the operands (torch eager rounds x + b, the dropout and the sum
        each; kernels that round once pass with room); kept fraction within 0.01 of 1 - p (all
        kept at p = 0)."""
        rtol = tolerance(self.dtype_name, False)[1]
        scale = float(1.0 / (1.0 - torch.tensor(p, dtype=torch.float32)))  # the fp32 value
        ok, worst, kept_n = True, 0.0, 0
        for a, z in row_chunks(self.rows, self.cols):
            d = self.xs[0][a:z].double() + self.b.double()
            r = self.rs[0][a:z].double()
            keep = r + d * scale
            got = s[a:z].double()
            if p > 0:
                kept = (got - keep).abs() <= (got - r).abs()
            else:
                kept = torch.ones_like(got, dtype=torch.bool)
            err = (got - torch.where(kept, keep, r)).abs_()
            bound = 1e-6 + 2 * rtol * (r.abs() + d.abs() * scale)
            ok = ok and bool((err <= bound).all()) and not bool(got.isnan().any())
            worst = max(worst, float(err.max()))
            kept_n += int(kept.sum())
        frac = kept_n / (self.rows * self.cols)
        ok = ok and (abs(frac - (1.0 - p)) <= 0.01 if p > 0 else frac == 1.0)
        return ok, worst

    def check(self, out, p=None):
        p = self.p if p is None else p
        if self.op in ("layernorm", "rmsnorm"):
            return self.check_norm(out, self.xs[0])
        if self.op == "residual_dropout":
            return self.check_dropout(out, p)
        y, s = out
        ok1, e1 = self.check_dropout(s, p)
        ok2, e2 = self.check_norm(y, s)
        return ok1 and ok2, max(e1, e2)

    # -- providers
    def bufs(self):
        ptrs = lambda ts: [t.data_ptr() for t in ts]  # noqa: E731
        return {"x": ptrs(self.xs), "r": ptrs(self.rs), "y": ptrs(self.ys), "s": ptrs(self.ss),
                "b": self.b.data_ptr(), "w": self.w.data_ptr(), "nb": self.nb.data_ptr()}

    def variant(self, lib):
        return lib.norm_explain(self.op, self.tdtype, self.rows, self.cols, self.bufs(),
                                self.p or 0.0)

    def ours(self, lib, p=None):
        p = self.p if p is None else p
        stream = torch.cuda.current_stream().cuda_stream
        launch = lib.norm_launcher(self.op, self.tdtype, self.rows, self.cols, self.bufs(),
                                   0.0 if p is None else p, stream)
        out = (self.ys[0], self.ss[0]) if self.writes_s else self.ys[0]
        return launch, out

    def poison(self):
        for t in self.ys + self.ss:
            t.fill_(float("nan"))

    def eager(self, p=None):
        p = self.p if p is None else p
        F, cols = torch.nn.functional, self.cols
        if self.op == "layernorm":
            return ((lambda x, w, b: F.layer_norm(x, (cols,), w, b, NORM_EPS)),
                    [(x, self.w, self.nb) for x in self.xs])
        if self.op == "rmsnorm":
            return ((lambda x, w: F.rms_norm(x, (cols,), w, NORM_EPS)),
                    [(x, self.w) for x in self.xs])
        if self.op == "residual_dropout":
            return ((lambda x, r, b: r + F.dropout(x + b, p, training=True)),
                    [(x, r, self.b) for x, r in zip(self.xs, self.rs)])

        def add_norm(x, r, b, w, nb):
            s = r + F.dropout(x + b, p, training=True)
            return F.layer_norm(s, (cols,), w, nb, NORM_EPS), s
        return add_norm, [(x, r, self.b, self.w, self.nb) for x, r in zip(self.xs, self.rs)]

    def triton_kinds(self):
        if self.op not in ("layernorm", "rmsnorm"):
            return None  # no Triton kernel written for the dropout ops
        if triton.next_power_of_2(self.cols) > TRITON_ROW_MAX:
            return []
        t = triton_norm_launcher(self.rms, self.rows, self.cols)
        xs, ys, w, b = self.xs, self.ys, self.w, self.nb
        return [("row", (lambda i: t(ys[i], xs[i], w, b)), ys[0])]


def make_case(op, dtype_name, rows, cols):
    return (SoftmaxCase if op in SOFTMAX_OPS else NormCase)(op, dtype_name, rows, cols)


# ----------------------------------------------------------------------------- one case
def kept_outputs(fn, fargs, copies, recycle):
    """launch(i) for a provider that allocates its output (torch eager, torch.compile). Each
    output stays alive until launch i + copies replaces it, so its outputs rotate over as many
    buffers as ours and Triton's (which write into ys[i]). A dropped output's block is handed
    straight back by the caching allocator and written again while its lines still sit in L2,
    which times a tensor that fits L2 up to 25% faster than one written afresh (perf-notes K7);
    recycle=True keeps that behaviour (--peer-outputs recycle)."""
    if recycle:
        return lambda i: fn(*fargs[i])
    kept = [None] * copies

    def launch(i):
        kept[i] = fn(*fargs[i])
    return launch


def rotation(set_bytes, traffic, l2_bytes):
    """(copies, batch), as bench_gpu.h's bench_rotation_copies and bench_batch_size: buffer sets
    holding at least max(256 MiB, 3 x L2) in all (at most MAX_COPIES), and launches per timed
    batch moving about 4 GB (2 to MAX_BATCH)."""
    target = max(256 << 20, 3 * l2_bytes)
    copies = min(MAX_COPIES, max(1, math.ceil(target / set_bytes)))
    batch = min(MAX_BATCH, max(2, math.ceil(4e9 / traffic)))
    return copies, batch


def run_case(args, lib, timer, ceiling, l2_bytes, case):
    rows, cols, traffic = case.rows, case.cols, case.traffic
    copies, batch = rotation(case.set_bytes, traffic, l2_bytes)
    case.setup(copies)
    sync = torch.cuda.synchronize

    res = {"op": case.op, "dtype": case.dtype_name, "rows": rows, "cols": cols,
           "bytes": traffic, "copies": copies, "batch": batch, "reps": timer.reps,
           "providers": {}}
    if case.p is not None:
        res["p"] = case.p

    def record(name, ms, ok, err, **extra):
        res["providers"][name] = {"ms": ms, "gbps": traffic / (ms * 1e-3) / 1e9, "ok": ok,
                                  "max_abs_err": err, **extra}

    def fail(name, e):
        msg = f"{type(e).__name__}: {e}".splitlines()[0][:200]
        res["providers"][name] = {"ms": None, "error": msg}
        log(f"    {name}: n/a ({msg})")

    def check_p0(name, out):
        """Dropout ops: the result at p = 0 against the exact sum; (ok, extra record fields)."""
        ok, err = case.check(out, p=0.0)
        if not ok:
            log(f"    {name}: WRONG RESULTS at p = 0 (max abs error {err:.3g})")
        return ok, {"ok_p0": ok, "max_abs_err_p0": err}

    # ours
    try:
        res["variant"] = case.variant(lib)
        extra, ok0 = {}, True
        if case.p:
            launch0, out = case.ours(lib, p=0.0)
            case.poison()
            launch0(0)
            sync()
            ok0, extra = check_p0("ours", out)
        launch, out = case.ours(lib)
        case.poison()
        for i in range(copies):
            launch(i)
        sync()
        ok, err = case.check(out)
        if not ok:
            log(f"    ours: WRONG RESULTS (max abs error {err:.3g}, {case.tol_text})")
        ms = timer.per_launch_ms(launch, copies, batch)
        record("ours", ms, ok and ok0, err, **extra)
    except Exception as e:  # noqa: BLE001
        fail("ours", e)
        res["providers"]["ours"]["ok"] = False

    # torch eager
    fn, fargs = case.eager()
    try:
        extra, ok0 = {}, True
        if case.p:
            fn0, _ = case.eager(p=0.0)
            ok0, extra = check_p0("torch", fn0(*fargs[0]))
        ok, err = case.check(fn(*fargs[0]))
        ms = timer.per_launch_ms(kept_outputs(fn, fargs, copies, args.peer_outputs == "recycle"),
                                 copies, batch)
        record("torch", ms, ok and ok0, err, **extra)
    except Exception as e:  # noqa: BLE001
        fail("torch", e)

    # torch.compile, of the timed function only (at p = 0.1 for the dropout ops)
    if args.no_compile:
        res["providers"]["compile"] = {"ms": None, "error": "skipped (--no-compile)"}
    else:
        try:
            torch._dynamo.reset()
            compiled = torch.compile(fn, dynamic=False)
            t0 = time.perf_counter()
            out = compiled(*fargs[0])
            sync()
            compile_s = time.perf_counter() - t0
            ok, err = case.check(out)
            del out
            ms = timer.per_launch_ms(
                kept_outputs(compiled, fargs, copies, args.peer_outputs == "recycle"), copies,
                batch)
            record("compile", ms, ok, err, compile_s=round(compile_s, 2))
        except Exception as e:  # noqa: BLE001
            fail("compile", e)

    # Triton: softmax's one-block kernel where the row fits it, the looped one where the row is
    # wide; the norms' one-block kernel
    kinds = None if args.no_triton or triton is None else case.triton_kinds()
    if kinds is None:
        why = ("skipped (--no-triton)" if args.no_triton else
               f"no triton: {TRITON_ERROR}" if triton is None else "no Triton kernel for this op")
        res["providers"]["triton"] = {"ms": None, "error": why}
    else:
        best = None
        for kind, tlaunch, out in kinds:
            try:
                case.poison()
                for i in range(copies):
                    tlaunch(i)
                sync()
                ok, err = case.check(out)
                ms = timer.per_launch_ms(tlaunch, copies, batch)
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
    fargs.clear()  # the last references to the inputs, before empty_cache
    case.release()
    torch.cuda.empty_cache()
    return res


# ----------------------------------------------------------------------------- attention
class AttentionCase:
    """Flash attention forward of one dtype, shape and mask, BSHD: q and o [b, s, h, d], k and
    v [b, s, kv, d], contiguous; SDPA sees the same tensors as [b, h, s, d] through
    .transpose(1, 2) (views: no copies)."""

    def __init__(self, dtype_name, shape, causal):
        self.dtype_name, self.causal = dtype_name, causal
        self.b, self.h, self.s, self.d, self.kv = shape
        self.tdtype, self.tdt, elem = DTYPES[dtype_name]
        b, h, s, d, kv = shape
        self.flops = 4 * b * h * s * s * d * (0.5 if causal else 1.0)
        self.set_bytes = (2 * b * s * h * d + 2 * b * s * kv * d) * elem  # q, o, k, v
        self.tol = ATTENTION_TOL[dtype_name]

    def name(self):
        return attention_shape_name((self.b, self.h, self.s, self.d, self.kv))

    def describe(self):
        return "causal" if self.causal else "full"

    def setup(self, copies):
        b, h, s, d, kv = self.b, self.h, self.s, self.d, self.kv
        gen = torch.Generator(device=DEVICE).manual_seed(b * 7919 + h * 131 + s + d + kv)

        def uniform(shape, lo, hi):
            return torch.empty(shape, dtype=self.tdt, device=DEVICE).uniform_(lo, hi, generator=gen)
        # As bench_attention.cc: q, k in [-2, 2) (scaled scores of standard deviation about
        # 1.3), v in [-1, 1); never zeros.
        self.qs = [uniform((b, s, h, d), -2, 2) for _ in range(copies)]
        self.ks = [uniform((b, s, kv, d), -2, 2) for _ in range(copies)]
        self.vs = [uniform((b, s, kv, d), -1, 1) for _ in range(copies)]
        self.os = [torch.empty_like(q) for q in self.qs]
        self.workspace = zeroed_workspace(FLASH_ATTENTION_WORKSPACE_BYTES)

    def release(self):
        del self.qs, self.ks, self.vs, self.os, self.workspace

    def args(self, i):
        """FlashAttentionArgs of set i (the tensors' own strides, in elements)."""
        a = FlashAttentionArgs(
            struct_size=ctypes.sizeof(FlashAttentionArgs), dtype=self.tdtype, batch=self.b,
            heads_q=self.h, heads_kv=self.kv, head_dim=self.d, causal=int(self.causal),
            seqlen_q=self.s, seqlen_k=self.s, scale=0.0, o=self.os[i].data_ptr(),
            q=self.qs[i].data_ptr(), k=self.ks[i].data_ptr(), v=self.vs[i].data_ptr(),
            workspace=self.workspace.data_ptr())
        for name, t in (("q", self.qs[i]), ("k", self.ks[i]), ("v", self.vs[i]),
                        ("o", self.os[i])):
            set_strides(a, name, t)
        return a

    def sdpa(self, i):
        """F.scaled_dot_product_attention on set i: [b, h, s, d] out (a new tensor)."""
        extra = {"enable_gqa": True} if self.kv != self.h else {}
        return torch.nn.functional.scaled_dot_product_attention(
            self.qs[i].transpose(1, 2), self.ks[i].transpose(1, 2), self.vs[i].transpose(1, 2),
            is_causal=self.causal, **extra)

    def reference_rows(self):
        """[(batch, head, rows, want)]: float64 outputs of a few query rows of set 0 (the first
        and last (batch, head), 16 rows each spread over the sequence, first and last included),
        from the inputs as stored. seqlen_q == seqlen_k, so causal row i sees keys 0..i."""
        q, k, v, s, d = self.qs[0], self.ks[0], self.vs[0], self.s, self.d
        rows = torch.unique(torch.linspace(0, s - 1, 16, device=DEVICE).round().long())
        out = []
        for bi, hi in ((0, 0), (self.b - 1, self.h - 1)):
            g = hi // (self.h // self.kv)
            scores = (q[bi, rows, hi].double() @ k[bi, :, g].double().T) * d ** -0.5
            if self.causal:
                j = torch.arange(s, device=DEVICE)[None, :]
                scores = scores.masked_fill(j > rows[:, None], float("-inf"))
            want = torch.softmax(scores, -1) @ v[bi, :, g].double()
            out.append((bi, hi, rows, want))
        return out


def attention_shape_name(shape):
    b, h, s, d, kv = shape
    return f"{b}x{h}x{s}x{d}" + (f"_kv{kv}" if kv != h else "")


def parse_attention_shapes(text):
    """"BxHxSxD[xKV],..." (batch, query heads, seqlen, head_dim, key/value heads = H if not
    given), as bench_attention's --shapes."""
    shapes = []
    for item in text.split(","):
        v = [int(x) for x in item.lower().split("x")]
        if len(v) == 4:
            v.append(v[1])
        if len(v) != 5 or min(v) < 1 or v[1] % v[4]:
            raise ValueError(f"attention shape {item!r}: BxHxSxD[xKV], H a multiple of KV")
        shapes.append(tuple(v))
    return shapes


def attention_cases(args, forced):
    """[(dtype name, shape, causal)] in run order: the built-in list (bf16 on every shape, f16
    on one) or --attn-shapes, in --dtypes where given (f16 and bf16 only); each full, then
    causal. A forced variant keeps only its dtype and the heads it takes."""
    if args.attn_shapes:
        shapes = parse_attention_shapes(args.attn_shapes)
    else:
        shapes = ATTENTION_SHAPES
    if args.dtypes:
        dtypes = [d.strip() for d in args.dtypes.split(",") if d.strip() in ATTENTION_TOL]
        pairs = [(dt, sh) for dt in dtypes for sh in shapes]
    elif args.attn_shapes:
        pairs = [("bf16", sh) for sh in shapes]
    else:
        pairs = [("bf16", sh) for sh in shapes] + [("f16", ATTENTION_F16_SHAPE)]
    if forced is not None:
        pairs = [(dt, sh) for dt, sh in pairs if DTYPES[dt][0] == forced.dtype and
                 (not forced.max_cols or sh[3] <= forced.max_cols)]
    return [(dt, sh, causal) for dt, sh in pairs for causal in (False, True)]


def run_attention_case(lib, timer, l2_bytes, case):
    """Times ours and F.scaled_dot_product_attention under each SDPA backend alone, on the same
    rotated inputs; checks every output against float64 rows and ours against SDPA's."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    copies, batch = rotation(case.set_bytes, case.set_bytes, l2_bytes)
    case.setup(copies)
    sync = torch.cuda.synchronize
    res = {"op": "attention", "dtype": case.dtype_name, "batch": case.b, "heads_q": case.h,
           "heads_kv": case.kv, "seqlen_q": case.s, "seqlen_k": case.s, "head_dim": case.d,
           "causal": case.causal, "shape": case.name(), "flops": case.flops,
           "copies": copies, "batch_launches": batch, "reps": timer.reps, "providers": {}}
    refs = case.reference_rows()

    def ref_err(out_bshd):
        """Largest |out - float64| over the reference rows (NaN counts as infinite)."""
        worst = 0.0
        for bi, hi, rows, want in refs:
            got = out_bshd[bi, rows, hi].double()
            if bool(got.isnan().any()):
                return float("inf")
            worst = max(worst, float((got - want).abs().max()))
        return worst

    def record(name, ms, **extra):
        res["providers"][name] = {"ms": ms, "tflops": case.flops / (ms * 1e-3) / 1e12, **extra}

    # Checks first (every output against float64 rows, SDPA's against ours), then the timing
    # in rounds over every provider that ran (record_in_rounds).
    timed, extras = {}, {}
    ours_out = None
    try:
        structs = [case.args(i) for i in range(copies)]
        res["variant"], launch = warm_ours(lib, "tile_flash_attention", structs, case.os)
        ours_out = case.os[0]
        err = ref_err(ours_out)
        timed["ours"], extras["ours"] = launch, {"max_abs_err_ref": err, "ok": err <= case.tol}
    except Exception as e:  # noqa: BLE001
        msg = f"{type(e).__name__}: {e}".splitlines()[0][:300]
        res["providers"]["ours"] = {"ms": None, "error": msg, "ok": False}
        log(f"    ours: FAILED ({msg})")

    # SDPA, one backend at a time; a backend that cannot run this case is skipped with why
    flash_out = None
    for backend in SDPA_BACKENDS:
        key = "sdpa_" + backend.lower().replace("_attention", "")
        try:
            with sdpa_kernel(getattr(SDPBackend, backend)):
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    try:
                        out = case.sdpa(0)
                        sync()
                    except Exception as e:  # noqa: BLE001 - the warnings say why, usually
                        why = [f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"]
                        why += [str(w.message).splitlines()[0][:200] for w in caught[:3]]
                        raise RuntimeError(" | ".join(why)) from None
                out_bshd = out.transpose(1, 2)
                err = ref_err(out_bshd)
                extra = {"max_abs_err_ref": err}
                if ours_out is not None:
                    extra["max_abs_diff_ours"] = float(
                        (ours_out.float() - out_bshd.float()).abs().max())
                if backend == "FLASH_ATTENTION" or flash_out is None:
                    flash_out = (backend, extra.get("max_abs_diff_ours"))
                del out, out_bshd

            def launch_sdpa(i, backend=getattr(SDPBackend, backend)):
                with sdpa_kernel(backend):
                    return case.sdpa(i)
            timed[key], extras[key] = launch_sdpa, extra
        except Exception as e:  # noqa: BLE001
            msg = f"{type(e).__name__}: {e}".splitlines()[0][:400]
            res["providers"][key] = {"ms": None, "error": msg}
            log(f"    {key}: skipped ({msg})")

    record_in_rounds(res, record, timer, timed, extras, copies, batch)

    # ours against float64 and against SDPA (FLASH_ATTENTION's output, else the first backend
    # that ran): wrong results fail the run
    o = res["providers"]["ours"]
    if o.get("ms") is not None:
        if flash_out is not None and flash_out[1] is not None:
            o["vs_sdpa_backend"], o["max_abs_diff_sdpa"] = flash_out
            if not flash_out[1] <= case.tol:
                o["ok"] = False
        log(f"    ours: {'WRONG RESULTS: ' if not o['ok'] else ''}max abs error "
            f"{o['max_abs_err_ref']:.3g} against float64 rows, "
            f"{o.get('max_abs_diff_sdpa', float('nan')):.3g} against SDPA "
            f"{o.get('vs_sdpa_backend')} (tolerance {case.tol:g})")
    for key, p in res["providers"].items():
        if key != "ours" and p.get("max_abs_err_ref", 0) > case.tol:
            log(f"    note: {key} differs from the float64 rows by up to "
                f"{p['max_abs_err_ref']:.3g}")
    sdpa_ms = {k: p["ms"] for k, p in res["providers"].items()
               if k != "ours" and p.get("ms") is not None}
    ours = o.get("ms")
    res["speedup_vs_best_sdpa"] = min(sdpa_ms.values()) / ours if sdpa_ms and ours else None
    res["best_sdpa"] = min(sdpa_ms, key=sdpa_ms.get) if sdpa_ms else None
    flash = sdpa_ms.get("sdpa_flash")
    res["speedup_vs_flash"] = flash / ours if flash and ours else None
    case.release()
    torch.cuda.empty_cache()
    return res


def fmt_tflops(p):
    """A provider's TFLOP/s for the tables, or n/a."""
    return f"{p['tflops']:.0f}" if p and p.get("ms") is not None else "n/a"


def fmt_ratio(v):
    return f"{v:.2f}x" if v else "n/a"


def tflops_table(results, label, peers, width, ratios):
    """The TFLOP/s table of the compute ops: shape, `label` (header, width, result -> text),
    dtype, ours, each peer (result key, header text) in columns of `width`, the `ratios`
    (header, result key) and the variant."""
    head = (f"{'shape':<22}{label[0]:<{label[1]}}{'dtype':<6}{'ours ms':>9}{'TFLOP/s':>9}"
            + "".join(f"{name + ' TF/s':>{width}}" for _, name in peers)
            + "".join(f"{h:>9}" for h, _ in ratios) + "  variant")
    lines = [head, "-" * len(head)]
    for r in results:
        p = r["providers"]
        o = p.get("ours", {})
        ms = f"{o['ms']:.3f}" if o.get("ms") is not None else "n/a"
        mark = "!" if o.get("ok") is False else ""
        lines.append(f"{r['shape']:<22}{label[2](r):<{label[1]}}{r['dtype']:<6}{ms:>9}"
                     f"{fmt_tflops(o) + mark:>9}"
                     + "".join(f"{fmt_tflops(p.get(k)):>{width}}" for k, _ in peers)
                     + "".join(f"{fmt_ratio(r[k]):>9}" for _, k in ratios)
                     + "  " + str(r.get("variant", "?")))
    return "\n".join(lines)


def attention_table(results):
    keys = ["sdpa_" + b.lower().replace("_attention", "") for b in SDPA_BACKENDS]
    return tflops_table(results, ("mask", 7, lambda r: "causal" if r["causal"] else "full"),
                        [(k, k[5:]) for k in keys], 16,
                        [("vs best", "speedup_vs_best_sdpa"), ("vs flash", "speedup_vs_flash")])


# ----------------------------------------------------------------------------- grouped matmul
class GroupedMatmulCase:
    """C_g = A_g B_g of one dtype, shape and B layout: a [total_m, K], b [G, K, N] contiguous
    (kn) or the transpose of a contiguous [G, N, K] (nk), offs int32 from the routing
    (gmm_routing.group_ends: the Dirichlet draw unless --gmm-routing says otherwise)."""

    def __init__(self, dtype_name, shape, nk, routing="dirichlet"):
        self.dtype_name, self.nk, self.routing = dtype_name, nk, routing
        self.g, self.m, self.k, self.n = shape
        self.tdtype, self.tdt, elem = DTYPES[dtype_name]
        self.flops = 2.0 * self.m * self.n * self.k
        self.set_bytes = (self.m * self.k + self.g * self.k * self.n + self.m * self.n) * elem
        self.tol = GMM_TOL[dtype_name]
        self.ends = gmm_routing.group_ends(routing, self.g, self.m)
        self.starts = [0] + self.ends[:-1]

    def name(self):
        return gmm_shape_name((self.g, self.m, self.k, self.n))

    def describe(self):
        sizes = [e - s for s, e in zip(self.starts, self.ends)]
        return (f"B {'nk' if self.nk else 'kn'}: group sizes "
                f"{gmm_routing.describe(self.routing)}: min {min(sizes)}, max {max(sizes)}, "
                f"{sizes.count(0)} empty")

    def setup(self, copies):
        gen = torch.Generator(device=DEVICE).manual_seed(self.g * 7919 + self.m + self.k + self.n)

        def uniform(shape, scale):
            return (torch.empty(shape, device=DEVICE).uniform_(-1, 1, generator=gen)
                    * scale).to(self.tdt)
        b_shape = (self.g, self.n, self.k) if self.nk else (self.g, self.k, self.n)
        self.as_ = [uniform((self.m, self.k), 1.0) for _ in range(copies)]
        # entries of C of about unit size: K products of variance 1/3 * 3/K
        self.bs = [uniform(b_shape, math.sqrt(3.0 / self.k)) for _ in range(copies)]
        if self.nk:
            self.bs = [b.transpose(1, 2) for b in self.bs]
        self.cs = [torch.empty(self.m, self.n, dtype=self.tdt, device=DEVICE)
                   for _ in range(copies)]
        self.offs = torch.tensor(self.ends, dtype=torch.int32, device=DEVICE)
        self.workspace = zeroed_workspace(GROUPED_MATMUL_WORKSPACE_BYTES)

    def release(self):
        del self.as_, self.bs, self.cs, self.offs, self.workspace

    def args(self, i):
        """GroupedMatmulArgs of set i (the tensors' own strides, in elements)."""
        a, b, c = self.as_[i], self.bs[i], self.cs[i]
        return GroupedMatmulArgs(
            struct_size=ctypes.sizeof(GroupedMatmulArgs), dtype=self.tdtype, groups=self.g,
            total_m=self.m, n=self.n, k=self.k, c=c.data_ptr(), a=a.data_ptr(),
            b=b.data_ptr(), ldc=c.stride(0), lda=a.stride(0), b_group_stride=b.stride(0),
            b_k_stride=b.stride(1), b_n_stride=b.stride(2), offsets=self.offs.data_ptr(),
            workspace=self.workspace.data_ptr())

    def grouped_mm(self, i):
        return torch._grouped_mm(self.as_[i], self.bs[i], offs=self.offs)

    def mm_loop(self, i):
        """torch.mm per non-empty group, into row slices of set i's output (bounds from the host
        copy of the ends: what a loop over experts has to know)."""
        a, b, c = self.as_[i], self.bs[i], self.cs[i]
        for g, (s, e) in enumerate(zip(self.starts, self.ends)):
            if e > s:
                torch.mm(a[s:e], b[g], out=c[s:e])
        return c

    def dense_mm(self, i):
        """[total_m, K] x [K, N] in one call: the same FLOPs, one B (group 0's, same layout)."""
        return torch.mm(self.as_[i], self.bs[i][0], out=self.cs[i])

    def reference_rows(self):
        """(rows, want): float64 C of 16 rows of set 0, the first and last row of the first and
        of the last non-empty group among them."""
        used = [(s, e) for s, e in zip(self.starts, self.ends) if e > s]
        picks = {used[0][0], used[0][1] - 1, used[-1][0], used[-1][1] - 1}
        picks |= {round(x * (self.m - 1) / 11) for x in range(12)}
        rows = sorted(picks)
        group = [next(g for g, e in enumerate(self.ends) if r < e) for r in rows]
        a, b = self.as_[0].double(), self.bs[0]
        want = torch.stack([a[r] @ b[g].double() for r, g in zip(rows, group)])
        return torch.tensor(rows, device=DEVICE), want


def gmm_shape_name(shape):
    return "x".join(str(v) for v in shape)


def parse_gmm_shapes(text):
    """"GxMxKxN,..." (groups, total rows, K, N), as bench_grouped_matmul's --shapes."""
    shapes = []
    for item in text.split(","):
        v = [int(x) for x in item.lower().split("x")]
        if len(v) != 4 or min(v) < 1 or v[0] > 65536 or v[1] > 2 ** 31 - 1:
            raise ValueError(f"grouped matmul shape {item!r}: GxMxKxN, G in [1, 65536], "
                             "M in [1, 2^31 - 1]")
        shapes.append(tuple(v))
    return shapes


def gmm_cases(args, forced):
    """[(dtype name, shape, nk)] in run order: bf16 (or the f16/bf16 of --dtypes) on the
    built-in shapes or --gmm-shapes, each with B kn then nk. A forced variant keeps its dtype."""
    shapes = parse_gmm_shapes(args.gmm_shapes) if args.gmm_shapes else GROUPED_MATMUL_SHAPES
    dtypes = ["bf16"]
    if args.dtypes:
        dtypes = [d.strip() for d in args.dtypes.split(",") if d.strip() in GMM_TOL]
    if forced is not None:
        dtypes = [d for d in dtypes if DTYPES[d][0] == forced.dtype]
    return [(dt, sh, nk) for dt in dtypes for sh in shapes for nk in (False, True)]


def gmm_close(out, ref, tol):
    """(passes, max abs diff) of out against ref (float64 or another provider's output)."""
    atol, rtol = tol
    diff = (out.double() - ref.double()).abs()
    ok = bool((diff <= atol + rtol * ref.double().abs()).all()) and not bool(out.isnan().any())
    return ok, float(diff.max()) if diff.numel() else 0.0


def run_gmm_case(lib, timer, l2_bytes, case):
    """Times ours, torch._grouped_mm, a loop of torch.mm and one dense torch.mm on the same
    rotated inputs; checks ours against float64 rows and the peers against ours first."""
    copies, batch = rotation(case.set_bytes, case.set_bytes, l2_bytes)
    case.setup(copies)
    sync = torch.cuda.synchronize
    sizes = sorted(e - s for s, e in zip(case.starts, case.ends))
    res = {"op": "grouped_matmul", "dtype": case.dtype_name, "groups": case.g,
           "total_m": case.m, "k": case.k, "n": case.n, "b_layout": "nk" if case.nk else "kn",
           "shape": case.name(), "flops": case.flops, "copies": copies,
           "batch_launches": batch, "reps": timer.reps,
           "group_sizes": {"routing": case.routing, "min": sizes[0],
                           "median": sizes[len(sizes) // 2], "max": sizes[-1],
                           "empty": sum(1 for x in sizes if x == 0)},
           "providers": {}}
    if gmm_routing.uses_draw(case.routing):
        res["group_sizes"].update(dirichlet_alpha=gmm_routing.GMM_ALPHA,
                                  seed=gmm_routing.GMM_SEED)

    def record(name, ms, **extra):
        res["providers"][name] = {"ms": ms, "tflops": case.flops / (ms * 1e-3) / 1e12, **extra}

    # Checks first (ours against float64, then the peers against ours), then the timing in
    # rounds over every provider that ran (record_in_rounds).
    timed, extras = {}, {}
    ours_out = None
    try:
        structs = [case.args(i) for i in range(copies)]
        res["variant"], launch = warm_ours(lib, "tile_grouped_matmul", structs, case.cs)
        rows, want = case.reference_rows()
        ok, err = gmm_close(case.cs[0][rows], want, case.tol)
        ours_out = case.cs[0].clone()
        timed["ours"] = launch
        extras["ours"] = {"max_abs_err_ref": err, "ok": ok}
        log(f"    ours: {'WRONG RESULTS: ' if not ok else ''}max abs error {err:.3g} against "
            f"float64 on {len(rows)} rows (tolerance {case.tol[0]:g} + {case.tol[1]:g} |ref|)")
    except Exception as e:  # noqa: BLE001
        msg = f"{type(e).__name__}: {e}".splitlines()[0][:300]
        res["providers"]["ours"] = {"ms": None, "error": msg, "ok": False}
        log(f"    ours: FAILED ({msg})")

    for name in GMM_PEERS:
        fn = getattr(case, name)
        try:
            for c in case.cs:
                c.fill_(float("nan"))
            out = fn(0)
            sync()
            extra = {}
            if ours_out is not None and name != "dense_mm":  # dense computes another product
                ok, diff = gmm_close(out, ours_out, case.tol)
                extra = {"max_abs_diff_ours": diff, "agrees_with_ours": ok}
                if not ok:
                    log(f"    {name} and ours differ by up to {diff:.3g}")
            del out
            timed[name], extras[name] = fn, extra
        except Exception as e:  # noqa: BLE001 - a provider that cannot run this case: n/a
            msg = f"{type(e).__name__}: {e}".splitlines()[0][:400]
            res["providers"][name] = {"ms": None, "error": msg}
            log(f"    {name}: skipped ({msg})")
    record_in_rounds(res, record, timer, timed, extras, copies, batch)
    o = res["providers"]["ours"]
    # ours disagreeing with both grouped peers is wrong (they agree with float64 elsewhere)
    votes = [p.get("agrees_with_ours") for k, p in res["providers"].items() if k != "ours"]
    if o.get("ms") is not None and votes and not any(v for v in votes if v is not None) \
            and any(v is not None for v in votes):
        o["ok"] = False
    peers = {k: p["ms"] for k, p in res["providers"].items()
             if k in ("grouped_mm", "mm_loop") and p.get("ms") is not None}
    ours = o.get("ms")
    res["speedup_vs_best"] = min(peers.values()) / ours if peers and ours else None
    res["best_peer"] = min(peers, key=peers.get) if peers else None
    dense = res["providers"].get("dense_mm", {}).get("ms")
    res["speedup_vs_dense"] = dense / ours if dense and ours else None
    del ours_out
    case.release()
    torch.cuda.empty_cache()
    return res


def gmm_table(results):
    return tflops_table(results, ("B", 4, lambda r: r["b_layout"]), [(k, k) for k in GMM_PEERS],
                        17, [("vs best", "speedup_vs_best"), ("vs dense", "speedup_vs_dense")])


# ----------------------------------------------------------------------------- output
def fmt_ms(p):
    return f"{p['ms']:.4f}" if p and p.get("ms") is not None else "n/a"


def table(results):
    head = (f"{'op':<22}{'shape':>14} {'dtype':<5}{'ours ms':>10}{'GB/s':>8}{'%copy':>7}"
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
        lines.append(f"{r['op']:<22}{str(r['rows']) + 'x' + str(r['cols']):>14} {r['dtype']:<5}"
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
            ax.set_ylabel("GB/s (inputs read once + outputs written once)")
            ax.set_ylim(bottom=0)
            title = f"{op} {dt} on {device}"
            if rs[0].get("p") is not None:
                title += f" (p = {rs[0]['p']:g}: every provider draws its own mask)"
            ax.set_title(title)
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
    ap.add_argument("--dtypes", default=None,
                    help="default bf16,f32; attention: bf16 on every shape and f16 on one, or "
                    "the f16/bf16 of this list on every shape")
    ap.add_argument("--ops", default=",".join(DEFAULT_OPS),
                    help="of " + ",".join(ALL_OPS) + " (default all but log_softmax, "
                    "attention and grouped_matmul)")
    ap.add_argument("--shapes", default=None,
                    help="RxC,RxC,... for every softmax and norm op instead of the built-in "
                    "lists")
    ap.add_argument("--attn-shapes", default=None,
                    help="BxHxSxD[xKV],... for attention (batch, query heads, seqlen, head_dim, "
                    "key/value heads) instead of the built-in list")
    ap.add_argument("--gmm-shapes", default=None,
                    help="GxMxKxN,... for grouped_matmul (groups, total rows, K, N) instead of "
                    "the built-in list")
    ap.add_argument("--gmm-routing", default="dirichlet",
                    help="grouped_matmul group sizes: " + gmm_routing.ROUTINGS +
                    " (default dirichlet: the draw every grouped matmul bench shares)")
    ap.add_argument("--variant", default=os.environ.get("FUSEDOPS_BENCH_VARIANT"),
                    help="time this variant as ours (tile_softmax_variant, "
                    "tile_add_norm_variant, tile_flash_attention_variant or "
                    "tile_grouped_matmul_variant); only the ops of its family run")
    ap.add_argument("--reps", type=int, default=None,
                    help=f"timed batches per measurement (default {SOFTMAX_REPS} for softmax, "
                    f"{NORM_REPS} for the norm ops, {ATTENTION_REPS} for attention, "
                    f"{GMM_REPS} for grouped_matmul)")
    ap.add_argument("--peer-outputs", choices=("rotate", "recycle"), default="rotate",
                    help="torch and torch.compile outputs: kept alive over the input copies "
                    "(rotate: fresh buffers, as ours and Triton's) or dropped at once (recycle: "
                    "the caching allocator hands the same block back, L2-hot)")
    ap.add_argument("--clocks", action="store_true",
                    help="attention and grouped matmul: sample the SM clock and board power "
                         "(nvidia-smi) while each provider is timed; TFLOP/s a GHz in the log "
                         "and the JSON")
    ap.add_argument("--no-compile", action="store_true")
    ap.add_argument("--no-triton", action="store_true")
    args = ap.parse_args()
    t_start = time.perf_counter()
    # Inductor explains, once per compile, that it split a long reduction; the table says enough.
    warnings.filterwarnings("ignore", message=".*Online softmax is disabled.*")

    dtypes = [d.strip() for d in (args.dtypes or "bf16,f32").split(",") if d.strip()]
    ops = [o.strip() for o in args.ops.split(",") if o.strip()]
    if any(d not in DTYPES for d in dtypes) or any(o not in ALL_OPS for o in ops):
        ap.error("--dtypes takes f32,f16,bf16; --ops takes " + ",".join(ALL_OPS))
    given_shapes = parse_shapes(args.shapes) if args.shapes else None
    if "attention" in ops:
        try:
            if args.attn_shapes:
                parse_attention_shapes(args.attn_shapes)
        except ValueError as e:
            ap.error(str(e))
        if args.dtypes and not any(d in ATTENTION_TOL for d in dtypes):
            ap.error("attention runs in f16 and bf16: --dtypes names neither")
    if "grouped_matmul" in ops:
        try:
            for g, m, _, _ in (parse_gmm_shapes(args.gmm_shapes) if args.gmm_shapes
                               else GROUPED_MATMUL_SHAPES):
                gmm_routing.group_ends(args.gmm_routing, g, m)
        except ValueError as e:
            ap.error(str(e))
        if args.dtypes and not any(d in GMM_TOL for d in dtypes):
            ap.error("grouped_matmul runs in f16 and bf16: --dtypes names neither")
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
        lib.forced_op = forced.op.decode()
        ops = [o for o in ops if family(o) == lib.forced_op]
        if not ops:
            log(f"{args.variant} is a {lib.forced_op} variant: none of --ops {args.ops} runs it")
            return 2
        dtypes = [d for d in dtypes if DTYPES[d][0] == forced.dtype]
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    l2_bytes = int(getattr(props, "L2_cache_size", 50 << 20))
    timer = Timer(args.reps or SOFTMAX_REPS)
    if args.clocks:
        if shutil.which("nvidia-smi"):
            timer.sampler = ClockSampler(torch.cuda.current_device())
        else:
            log("--clocks: no nvidia-smi on PATH, clocks not sampled")
    ceiling = copy_gbps(timer)
    device = props.name
    info = {
        "device": device, "compute_capability": f"{props.major}.{props.minor}",
        "sm_count": props.multi_processor_count, "l2_bytes": l2_bytes,
        "cuda": torch.version.cuda, "torch": torch.__version__,
        "triton": getattr(triton, "__version__", None), "libfusedops": lib.version(),
        "lib_path": os.path.abspath(args.lib), "arch": arch, "copy_gbps": ceiling,
        "forced_variant": args.variant, "reps": args.reps,  # null: per op (each result's reps)
        "timing": "median over reps of (CUDA-event time of a batch of launches) / batch, "
                  "after a sleep kernel that lets the host enqueue the batch; inputs rotated "
                  "over copies >= max(256 MiB, 3 x L2) (at most 8). attention, grouped_matmul: "
                  f"steady state instead ({STEADY_WARMUP_MS:g} ms untimed, then the median of "
                  f"{STEADY_BATCHES} back-to-back batches of about {STEADY_BATCH_MS:g} ms, no "
                  f"sleep; each result's reps unused), median over {COMPUTE_ROUNDS} rotated "
                  "rounds",
        "peer_outputs": args.peer_outputs,  # rotate: every provider writes fresh outputs
        # ours only: on sm_90 back-to-back launches overlap unless FUSEDOPS_PDL=0 (docs/api.md)
        "fusedops_pdl": os.environ.get("FUSEDOPS_PDL", ""),
        # --clocks: each TFLOP/s provider's sm_mhz, board_w, tflops_per_ghz (ClockSampler)
        "clocks_sampled": timer.sampler is not None,
    }
    log(f"{device} (sm_{props.major}{props.minor}, {props.multi_processor_count} SMs, "
        f"L2 {l2_bytes >> 20} MiB), torch {torch.__version__}, triton {info['triton']}, "
        f"libfusedops {lib.version()}")
    log(f"device-to-device copy: {ceiling:.0f} GB/s (read + written)")
    if os.environ.get("FUSEDOPS_PDL") == "0":
        log("FUSEDOPS_PDL=0: our launches do not overlap the previous one (as the peers')")

    def save():  # after every case, so a run cut short still leaves what it measured
        info["elapsed_s"] = round(time.perf_counter() - t_start, 1)
        with open(json_path, "w") as f:
            json.dump(info, f, indent=1)

    results, bad = [], 0
    info["results"], info["elapsed_by_op_s"] = results, {}
    for op in ops:
        t_op = time.perf_counter()
        if op in ("attention", "grouped_matmul"):  # the TFLOP/s ops, one loop for both
            attn = op == "attention"
            timer.reps = args.reps or (ATTENTION_REPS if attn else GMM_REPS)
            make = AttentionCase if attn else GroupedMatmulCase
            for dt, shape, flag in (attention_cases if attn else gmm_cases)(
                    args, forced if args.variant else None):
                case = make(dt, shape, flag) if attn else make(dt, shape, flag, args.gmm_routing)
                log(f"{op} {dt} {case.name()} {case.describe()}")
                try:
                    r = (run_attention_case if attn else run_gmm_case)(lib, timer, l2_bytes, case)
                except Exception:  # noqa: BLE001 - keep going; the traceback says what broke
                    traceback.print_exc()
                    bad += 1
                    continue
                results.append(r)
                if r["providers"]["ours"].get("ok") is False:
                    bad += 1
                parts = [f"{k} {p['tflops']:.0f}" if p.get("ms") is not None else f"{k} n/a"
                         for k, p in r["providers"].items()]
                log(f"    TFLOP/s: {', '.join(parts)}  [{r.get('variant', '?')}]")
                sampled = [f"{k} {p['sm_mhz']:.0f} MHz {p['board_w']:.0f} W "
                           f"{p['tflops_per_ghz']:.0f}/GHz"
                           for k, p in r["providers"].items() if p.get("sm_mhz")]
                if sampled:
                    log(f"    clocks (TFLOP/s a GHz): {', '.join(sampled)}")
                save()
            info["elapsed_by_op_s"][op] = round(time.perf_counter() - t_op, 1)
            log(f"  {op}: {info['elapsed_by_op_s'][op]} s")
            continue
        timer.reps = args.reps or (SOFTMAX_REPS if op in SOFTMAX_OPS else NORM_REPS)
        shapes = given_shapes or (SHAPES if op in SOFTMAX_OPS else NORM_SHAPES)
        if args.variant:
            shapes = [s for s in shapes if not forced.max_cols or s[1] <= forced.max_cols]
        for dt in dtypes:
            for rows, cols in shapes:
                log(f"{op} {dt} {rows}x{cols}")
                try:
                    r = run_case(args, lib, timer, ceiling, l2_bytes,
                                 make_case(op, dt, rows, cols))
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
                save()
        info["elapsed_by_op_s"][op] = round(time.perf_counter() - t_op, 1)
        log(f"  {op}: {info['elapsed_by_op_s'][op]} s")

    save()
    rows = [r for r in results if r["op"] not in ("attention", "grouped_matmul")]
    attn = [r for r in results if r["op"] == "attention"]
    gmm = [r for r in results if r["op"] == "grouped_matmul"]
    plots = plot(rows, ceiling, device, args.out)
    log(f"\nwrote {json_path}" + (f" and {len(plots)} plots in {args.out}" if plots else ""))
    log(f"elapsed {info['elapsed_s']} s; !: ours gave wrong results")
    if rows:
        log(f"copy ceiling {ceiling:.0f} GB/s; vs best = best peer ms / ours ms; L: Triton's "
            "looped kernel\n")
        log(table(rows))
    if attn:
        log("\nattention: TFLOP/s = 4*b*h*s_q*s_k*d (halved for causal) / time; vs best = the "
            "fastest SDPA backend's ms / ours ms; vs flash = SDPA FLASH_ATTENTION's ms / ours ms\n")
        log(attention_table(attn))
    if gmm:
        log("\ngrouped_matmul: TFLOP/s = 2*total_m*N*K / time, group sizes "
            f"{gmm_routing.describe(args.gmm_routing)} shared by every provider; vs best = "
            "the faster of torch._grouped_mm and the torch.mm loop, its ms / ours ms; vs dense = "
            "one [total_m, K] x [K, N] torch.mm's ms / ours ms\n")
        log(gmm_table(gmm))
    if timer.sampler is not None:
        timer.sampler.close()
    if bad:
        log(f"\nFAILED: {bad} case(s) gave wrong results or broke (see above)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
