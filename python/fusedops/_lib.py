"""Loads libfusedops.so and declares the C ABI used from Python (ctypes). Imports nothing but
the standard library, so bench/vs_torch.py and the host tests use these declarations too."""
import ctypes
import ctypes.util
import os

_lib = None

STATUS_NAMES = None  # filled from tile_status_string


class VariantInfo(ctypes.Structure):
    """tile_variant_info (include/fusedops.h), field for field."""
    _fields_ = [("struct_size", ctypes.c_size_t), ("name", ctypes.c_char_p),
                ("op", ctypes.c_char_p), ("dtype", ctypes.c_int), ("arch_min", ctypes.c_int32),
                ("arch_max", ctypes.c_int32), ("threads", ctypes.c_int32),
                ("cluster", ctypes.c_int32), ("smem_bytes", ctypes.c_int32),
                ("max_cols", ctypes.c_int64), ("align_bytes", ctypes.c_int32),
                ("params", ctypes.c_char_p)]


class Decision(ctypes.Structure):
    """tile_decision (include/fusedops.h), field for field."""
    _fields_ = [("struct_size", ctypes.c_size_t), ("variant", ctypes.c_int32),
                ("rule", ctypes.c_int), ("eligible", ctypes.c_int32), ("arch", ctypes.c_int32),
                ("reason", ctypes.c_char * 256)]


class AddNormArgs(ctypes.Structure):
    """tile_add_norm_args (include/fusedops.h), field for field."""
    _fields_ = [("struct_size", ctypes.c_size_t), ("dtype", ctypes.c_int), ("norm", ctypes.c_int),
                ("rows", ctypes.c_int64), ("cols", ctypes.c_int64),
                ("y", ctypes.c_void_p), ("ld_y", ctypes.c_int64),
                ("s", ctypes.c_void_p), ("ld_s", ctypes.c_int64),
                ("x", ctypes.c_void_p), ("ld_x", ctypes.c_int64),
                ("residual", ctypes.c_void_p), ("ld_residual", ctypes.c_int64),
                ("bias", ctypes.c_void_p), ("weight", ctypes.c_void_p),
                ("norm_bias", ctypes.c_void_p), ("eps", ctypes.c_float), ("p", ctypes.c_float),
                ("seed", ctypes.c_uint64), ("offset", ctypes.c_uint64),
                ("mask", ctypes.c_void_p), ("mean", ctypes.c_void_p), ("rstd", ctypes.c_void_p)]


NORM_NONE, NORM_LAYER, NORM_RMS = 0, 1, 2  # tile_norm_kind


class FlashAttentionArgs(ctypes.Structure):
    """tile_flash_attention_args (include/fusedops.h), field for field; set struct_size to
    ctypes.sizeof(FlashAttentionArgs). tests/python/test_ctypes_layout.py checks every offset
    against the C compiler's."""
    _fields_ = [("struct_size", ctypes.c_size_t), ("dtype", ctypes.c_int),
                ("batch", ctypes.c_int32), ("heads_q", ctypes.c_int32),
                ("heads_kv", ctypes.c_int32), ("head_dim", ctypes.c_int32),
                ("causal", ctypes.c_int32),
                ("seqlen_q", ctypes.c_int64), ("seqlen_k", ctypes.c_int64),
                ("scale", ctypes.c_float),
                ("o", ctypes.c_void_p), ("q", ctypes.c_void_p), ("k", ctypes.c_void_p),
                ("v", ctypes.c_void_p),
                ("q_batch_stride", ctypes.c_int64), ("q_seq_stride", ctypes.c_int64),
                ("q_head_stride", ctypes.c_int64),
                ("k_batch_stride", ctypes.c_int64), ("k_seq_stride", ctypes.c_int64),
                ("k_head_stride", ctypes.c_int64),
                ("v_batch_stride", ctypes.c_int64), ("v_seq_stride", ctypes.c_int64),
                ("v_head_stride", ctypes.c_int64),
                ("o_batch_stride", ctypes.c_int64), ("o_seq_stride", ctypes.c_int64),
                ("o_head_stride", ctypes.c_int64),
                ("cu_seqlens_q", ctypes.c_void_p), ("cu_seqlens_k", ctypes.c_void_p),
                ("total_q", ctypes.c_int64), ("total_k", ctypes.c_int64),
                ("lse", ctypes.c_void_p),
                ("workspace", ctypes.c_void_p),  # since 0.8.0; NULL keeps the fixed walk
                ("workspace_bytes", ctypes.c_size_t)]  # since 0.9.0; 0 reads as 64


class GroupedMatmulArgs(ctypes.Structure):
    """tile_grouped_matmul_args (include/fusedops.h), field for field; set struct_size to
    ctypes.sizeof(GroupedMatmulArgs). tests/python/test_ctypes_layout.py checks every offset
    against the C compiler's."""
    _fields_ = [("struct_size", ctypes.c_size_t), ("dtype", ctypes.c_int),
                ("groups", ctypes.c_int32), ("total_m", ctypes.c_int64),
                ("n", ctypes.c_int64), ("k", ctypes.c_int64),
                ("c", ctypes.c_void_p), ("a", ctypes.c_void_p), ("b", ctypes.c_void_p),
                ("ldc", ctypes.c_int64), ("lda", ctypes.c_int64),
                ("b_group_stride", ctypes.c_int64), ("b_k_stride", ctypes.c_int64),
                ("b_n_stride", ctypes.c_int64),
                ("bias", ctypes.c_void_p), ("bias_group_stride", ctypes.c_int64),
                ("offsets", ctypes.c_void_p),
                ("workspace", ctypes.c_void_p)]  # since 0.7.0; NULL keeps the fixed schedule


# TILE_GROUPED_MATMUL_WORKSPACE_BYTES (include/fusedops.h, since 0.7.0): the bytes of
# GroupedMatmulArgs.workspace.
GROUPED_MATMUL_WORKSPACE_BYTES = 64

# TILE_FLASH_ATTENTION_WORKSPACE_BYTES (include/fusedops.h, since 0.8.0): the bytes of a
# FlashAttentionArgs.workspace that holds the block counter alone; a call may use more
# (tile_flash_attention_workspace_size, since 0.9.0), of which the first
# FLASH_ATTENTION_WORKSPACE_ZEROED_BYTES stay zeroed.
FLASH_ATTENTION_WORKSPACE_BYTES = 64
FLASH_ATTENTION_WORKSPACE_ZEROED_BYTES = 4160


def set_strides(args, name, t):
    """args.<name>_{batch,seq,head}_stride from a [batch, seq, heads, head_dim] torch tensor
    (or anything with .stride(), or the four strides as a tuple), in elements."""
    b, s, h, _ = t if isinstance(t, tuple) else t.stride()
    setattr(args, f"{name}_batch_stride", b)
    setattr(args, f"{name}_seq_stride", s)
    setattr(args, f"{name}_head_stride", h)


def _candidates():
    env = os.environ.get("FUSEDOPS_LIBRARY")
    if env:
        yield env
    found = ctypes.util.find_library("fusedops")
    if found:
        yield found
    yield "libfusedops.so.0"
    here = os.path.dirname(os.path.abspath(__file__))
    yield os.path.join(here, "..", "..", "build", "libfusedops.so")


def library():
    """The loaded library (ctypes.CDLL), loaded once."""
    global _lib
    if _lib is not None:
        return _lib
    errors = []
    for path in _candidates():
        try:
            lib = ctypes.CDLL(path)
            break
        except OSError as e:
            errors.append(f"{path}: {e}")
    else:
        raise OSError("libfusedops.so not found; set FUSEDOPS_LIBRARY to its path. Tried:\n  "
                      + "\n  ".join(errors))
    i64, i32, vp = ctypes.c_int64, ctypes.c_int32, ctypes.c_void_p
    for name in ("tile_softmax", "tile_log_softmax"):
        f = getattr(lib, name)
        f.argtypes = [ctypes.c_int, vp, vp, i64, i64, i64, i64, vp]
        f.restype = ctypes.c_int
    f32, u64 = ctypes.c_float, ctypes.c_uint64
    norm_fns = {  # argument types of the norm family, as include/fusedops.h declares them
        "tile_layernorm": [ctypes.c_int, vp, vp, vp, vp, vp, vp, i64, i64, i64, i64, f32, vp],
        "tile_rmsnorm": [ctypes.c_int, vp, vp, vp, vp, i64, i64, i64, i64, f32, vp],
        "tile_residual_dropout": [ctypes.c_int, vp, vp, vp, vp, vp, i64, i64, i64, i64, i64, f32,
                                  u64, u64, vp],
        "tile_residual_dropout_norm": [ctypes.POINTER(AddNormArgs), vp],
        "tile_flash_attention": [ctypes.POINTER(FlashAttentionArgs), vp],
        "tile_grouped_matmul": [ctypes.POINTER(GroupedMatmulArgs), vp],
    }
    for name, argtypes in norm_fns.items():
        f = getattr(lib, name, None)
        if f is None:  # a library older than these ops: only their calls fail
            continue
        f.argtypes = argtypes
        f.restype = ctypes.c_int
    f = getattr(lib, "tile_flash_attention_workspace_size", None)  # since 0.9.0
    if f is not None:
        f.argtypes = [ctypes.POINTER(FlashAttentionArgs), ctypes.POINTER(ctypes.c_size_t)]
        f.restype = ctypes.c_int
    lib.tile_status_string.argtypes = [ctypes.c_int]
    lib.tile_status_string.restype = ctypes.c_char_p
    lib.tile_last_error.argtypes = []
    lib.tile_last_error.restype = ctypes.c_char_p
    lib.tile_version.argtypes = []
    lib.tile_version.restype = i32
    _lib = lib
    return lib


_fast = None


def fast_functions():
    """{name: function} of the entry points the torch ops call per call, declared for the
    cheapest argument conversion ctypes has: every int64_t argument (rows, cols, leading
    dimensions, the dropout seed and offset) is declared c_void_p, not c_int64. Both are one
    64-bit integer register or stack slot on LP64 ABIs (x86-64 System V, AArch64), so the
    call is the same machine call, and ctypes converts a Python int to c_void_p about 80 ns
    faster than to c_int64 (an 8-argument tile_softmax call: 0.78 against 0.57 us on
    CPython 3.11). Only non-negative values go through those arguments here (the seed and
    offset are masked to 64 bits first). Where pointers are not 64 bits the exact types are
    kept. `library()`'s own declarations are unchanged."""
    global _fast
    if _fast is not None:
        return _fast
    lib = library()
    c_int, f32, vp = ctypes.c_int, ctypes.c_float, ctypes.c_void_p
    i64 = vp if ctypes.sizeof(vp) == ctypes.sizeof(ctypes.c_int64) else ctypes.c_int64
    u64 = vp if ctypes.sizeof(vp) == ctypes.sizeof(ctypes.c_uint64) else ctypes.c_uint64
    signatures = {  # include/fusedops.h, with int64_t/uint64_t as i64/u64 above
        "tile_softmax": [c_int, vp, vp, i64, i64, i64, i64, vp],
        "tile_log_softmax": [c_int, vp, vp, i64, i64, i64, i64, vp],
        "tile_layernorm": [c_int, vp, vp, vp, vp, vp, vp, i64, i64, i64, i64, f32, vp],
        "tile_rmsnorm": [c_int, vp, vp, vp, vp, i64, i64, i64, i64, f32, vp],
        "tile_residual_dropout": [c_int, vp, vp, vp, vp, vp, i64, i64, i64, i64, i64, f32, u64,
                                  u64, vp],
    }
    fns = {}
    for name, argtypes in signatures.items():
        if not hasattr(lib, name):  # a library older than this op: only its calls fail
            continue
        fns[name] = ctypes.CFUNCTYPE(ctypes.c_int, *argtypes)((name, lib))
    _fast = fns
    return fns


def version():
    v = library().tile_version()
    return f"{v // 10000}.{v // 100 % 100}.{v % 100}"


def check(status, what):
    """Raises RuntimeError with the library's status and message when status != 0."""
    if status == 0:
        return
    lib = library()
    raise RuntimeError(f"{what}: {lib.tile_status_string(status).decode()}: "
                       f"{lib.tile_last_error().decode()}")
