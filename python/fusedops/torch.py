"""torch.ops.fusedops.*: libfusedops kernels as torch.library operators (define/impl, not
custom_op, for the per-call cost: see "registration" below and python/README.md).

Each op runs on torch.cuda.current_stream() of its input's device, writes into a tensor from
the PyTorch allocator, and has a fake (meta) implementation so torch.compile(fullgraph=True)
traces it without a graph break. Inputs are used in place when their layout allows (rows of
unit stride, one stride between rows); otherwise they are copied first (contiguous()).
Backward kernels do not exist yet: differentiating through these ops raises.

Ops:
  softmax(x, dim=-1), log_softmax(x, dim=-1)
  layer_norm(x, weight=None, bias=None, eps=1e-5) -> y            over the last dim
  rms_norm(x, weight=None, eps=1e-6) -> y                         over the last dim
  residual_dropout(x, residual, bias, p, seed, offset) -> y       y = residual + dropout(x + bias)
  residual_dropout_norm(x, residual, bias, weight, norm_bias, p, eps, seed, offset, rms=False)
      -> (y, s)                                 s = residual + dropout(x + bias), y = norm(s)
  flash_attention(q, k, v, causal=False, scale=None) -> o
  flash_attention_lse(q, k, v, causal=False, scale=None) -> (o, lse)
  grouped_mm(a, b, offs, bias=None) -> c                        C_g = A_g B_g (+ bias_g)
The norm family normalizes (and adds along) the last dim: weight, bias and norm_bias are [cols]
vectors (or None), residual has x's shape, and every tensor has x's dtype and device. Dropout
keeps an element with probability 1 - p and scales it by 1 / (1 - p); p = 0 is the identity and
p applies whatever the module's training flag (pass p = 0 in eval). Its mask is a pure function
of (seed, offset, row, col) (docs/api.md, "Dropout random numbers"): advance offset (or change
seed) from call to call for fresh masks. seed and offset are int64 here, taken as their 64 bits.
The attention ops take q [batch, seqlen_q, heads_q, head_dim] and k, v [batch, seqlen_k,
heads_kv, head_dim] (BSHD; F.scaled_dot_product_attention's [b, h, s, d] is .transpose(1, 2) of
it), fp16 or bf16; see flash_attention's docstring. grouped_mm is the mixture-of-experts grouped
product with torch._grouped_mm's 2-D x 3-D convention: a [total_m, K], b [groups, K, N], offs
int32 cumulative row ends; see its docstring.
"""
import ctypes
import math
from typing import Optional, Tuple

import torch
from torch import _C

from ._lib import (FLASH_ATTENTION_WORKSPACE_BYTES, FLASH_ATTENTION_WORKSPACE_ZEROED_BYTES,
                   GROUPED_MATMUL_WORKSPACE_BYTES, NORM_LAYER,
                   NORM_RMS, AddNormArgs, FlashAttentionArgs, GroupedMatmulArgs, check,
                   fast_functions, library, set_strides)

_DTYPES = {torch.float32: 0, torch.float16: 1, torch.bfloat16: 2}
_dtype_code = _DTYPES.get
_empty_like = torch.empty_like
_contiguous = torch.contiguous_format


# ----------------------------------------------------------------------------- registration
# The ops are defined with torch.library.Library define/impl, not torch.library.custom_op: the
# custom-op layers (a Python autograd kernel that redispatches, an aliasing check after every
# call) cost about 8 us a call on the H200 host, on top of the dispatcher's own Python kernel.
# Each op here has the same schema custom_op inferred (and its pt2_compliant tag), and:
#   CompositeExplicitAutograd  the implementation, for any device (a CPU tensor gets the same
#                              clear "must be a CUDA tensor" error as before);
#   Meta / fake                register_fake (torch.compile, FakeTensorMode, device='meta');
#   Autograd                   one Python kernel that, for plain CUDA tensors and no gradient
#                              to record (the common call), runs the implementation itself:
#                              one Python kernel a call in all. Anything else (a tensor
#                              subclass or a fake tensor, a TorchDispatchMode, functionalization,
#                              conj/neg views, a CPU tensor) is redispatched below autograd as a
#                              custom op's autograd kernel does; inputs that require grad under
#                              grad mode go through an autograd.Function whose backward raises.
_LIB = torch.library.Library("fusedops", "DEF")
_AFTER_AUTOGRAD = _C._after_autograd_keyset
# The dispatch key set an op's Autograd kernel receives for CUDA tensors alone (no other key
# in play): the fast path's condition. Keys whose kernels are fallthroughs for these ops
# (ADInplaceOrView, Autocast) are already masked out of it by the dispatcher.
_PLAIN_CUDA = (_C.DispatchKeySet(_C.DispatchKey.CUDA)
               | _C.DispatchKeySet(_C.DispatchKey.AutogradCUDA)).raw_repr()
_grad_enabled = _C.is_grad_enabled
_any_requires_grad = getattr(_C, "_any_requires_grad", None)
if _any_requires_grad is None:  # older PyTorch
    def _any_requires_grad(*args):
        return any(isinstance(a, torch.Tensor) and a.requires_grad for a in args)


def _no_backward_message(name, instead=None):
    instead = instead or f"torch.{name}"
    return (f"fusedops.{name} has no backward kernel yet; use {instead} where gradients are "
            "needed")


def _register(name, schema, impl, fake, instead=None, fast_kernel=None, lib=_LIB,
              plain=_PLAIN_CUDA):
    """Defines lib's op `name` with `schema`, `impl` as its implementation, `fake` as its fake
    implementation and an Autograd kernel as described above; returns the OpOverload.
    fast_kernel(impl, slow, plain), where given, makes the op's own Autograd kernel (softmax:
    one tensor argument, no *args); slow(keyset, *args) is the path for everything but the
    plain call, whose key set is `plain` (a raw DispatchKeySet). The tests register a CPU
    analog in a namespace of their own through lib and plain."""
    lib.define(name + schema, tags=(torch.Tag.pt2_compliant_tag,))
    lib.impl(name, impl, "CompositeExplicitAutograd")
    torch.library.register_fake(f"{lib.ns}::{name}", fake, lib=lib)
    op = getattr(getattr(torch.ops, lib.ns), name).default
    message = _no_backward_message(name, instead)

    def forward(ctx, keyset, *args):
        with _C._AutoDispatchBelowAutograd():
            return op.redispatch(keyset & _AFTER_AUTOGRAD, *args)

    def backward(ctx, *grads):
        raise NotImplementedError(message)

    no_backward = type(f"NoBackward_{lib.ns}_{name}", (torch.autograd.Function,),
                       {"forward": staticmethod(forward), "backward": staticmethod(backward)})
    apply = no_backward.apply

    def slow(keyset, *args):
        if _grad_enabled() and _any_requires_grad(*args):
            return apply(keyset, *args)
        with _C._AutoDispatchBelowAutograd():
            return op.redispatch(keyset & _AFTER_AUTOGRAD, *args)

    if fast_kernel is not None:
        kernel = fast_kernel(impl, slow, plain)
    else:
        def kernel(keyset, *args):
            if keyset.raw_repr() == plain and not (_grad_enabled() and _any_requires_grad(*args)):
                return impl(*args)
            return slow(keyset, *args)
    lib.impl(name, kernel, "Autograd", with_keyset=True)
    return op


# ----------------------------------------------------------------------------- plumbing
def _raw_stream(index: int) -> int:
    """The current stream's handle on device `index` (torch's private fast path where it
    exists: a few microseconds less per call than torch.cuda.current_stream())."""
    return torch.cuda.current_stream(index).cuda_stream


if hasattr(torch._C, "_cuda_getCurrentRawStream"):
    _raw_stream = torch._C._cuda_getCurrentRawStream  # noqa: F811

# The current device's index: torch.cuda.current_device() less its Python-level lazy-init
# check (an input already on a CUDA device means CUDA is initialized).
_current_device = getattr(torch._C, "_cuda_getDevice", None) or torch.cuda.current_device

_FNS = {}


def _fn(name):
    """The library's entry point `name` as fast_functions() declares it (loads the library on
    first use), or None when this library lacks it (the general path then raises)."""
    fn = _FNS.get(name)
    if fn is None:
        fn = fast_functions().get(name)
        if fn is not None:
            _FNS[name] = fn
    return fn


def _call(x: torch.Tensor, fn, op: str, *args):
    """fn(*args, stream) on x's device and current stream; the library's status and message
    become a RuntimeError. Switches the current device only when x is on another one (the
    switch costs more than the rest of a small call)."""
    index = x.get_device()
    if index == _current_device():
        status = fn(*args, _raw_stream(index))
    else:
        with torch.cuda.device(index):  # the library runs on the current context's device
            status = fn(*args, _raw_stream(index))
    if status:
        check(status, op)


def _rows_view(x: torch.Tensor, dim: int):
    """(x2d, rows, cols, ld): x as [rows, cols] rows with unit column stride; a copy only when
    the softmax dim is not last or the leading dims do not collapse into one row stride."""
    if x.is_contiguous() and x.dim() > 0 and (dim == -1 or dim == x.dim() - 1):
        cols = x.shape[-1]  # the common case: no view, no copy
        return x, x.numel() // cols, cols, cols
    if x.dim() == 0:
        x = x.reshape(1)
    dim = dim % x.dim()
    if dim != x.dim() - 1:
        x = x.movedim(dim, -1).contiguous()
    cols = x.shape[-1]
    if x.stride(-1) != 1:
        x = x.contiguous()
    try:
        x2 = x.view(-1, cols) if x.dim() != 2 else x
    except RuntimeError:
        x2 = x.contiguous().view(-1, cols)
    if x2.shape[0] > 1 and x2.stride(0) < cols:  # expanded or overlapping rows (stride 0 ...):
        x2 = x2.contiguous()                      # the library reads a row at each ld
    ld = x2.stride(0) if x2.shape[0] > 1 else cols
    return x2, x2.shape[0], cols, ld


def _check_dim(x: torch.Tensor, dim: int, name: str):
    """IndexError for a dim outside [-nd, nd) (nd 1 for a 0-d tensor), as torch.softmax."""
    nd = max(x.dim(), 1)
    if not -nd <= dim < nd:
        raise IndexError(f"fusedops.{name}: dim {dim} is out of range for a tensor of "
                         f"{x.dim()} dims (expected [{-nd}, {nd - 1}])")


def _check_input(x: torch.Tensor, name: str):
    if not x.is_cuda:
        raise ValueError(f"fusedops.{name}: x must be a CUDA tensor, got device {x.device}")
    if x.dtype not in _DTYPES:
        raise TypeError(f"fusedops.{name}: dtype {x.dtype} is not supported "
                        "(float32, float16, bfloat16)")
    if x.numel() == 0:
        raise ValueError(f"fusedops.{name}: x is empty")


# The workspaces of attention and the grouped matmul (the workspace fields of
# tile_flash_attention_args and tile_grouped_matmul_args), one per (op, device index, stream
# handle): every call leaves its workspace's counters zeroed and calls on one stream never
# overlap, so a stream's calls of an op share one, zeroed once when it is made, and replaced by
# a larger one (zeroed) when a call can use more (attention's key splits).
_WORKSPACES = {}
_capturing = (getattr(torch._C, "_cuda_isCurrentStreamCapturing", None)
              or torch.cuda.is_current_stream_capturing)


def _new_workspace(t: torch.Tensor, nbytes: int) -> torch.Tensor:
    """A workspace of nbytes on t's device, its counters zeroed on its current stream (before the
    kernel): the first FLASH_ATTENTION_WORKSPACE_ZEROED_BYTES (the grouped matmul's 64 bytes
    whole); past them attention keeps only scratch, which a graph need not zero every replay."""
    ws = torch.empty(nbytes // 8, dtype=torch.int64, device=t.device)
    ws[:FLASH_ATTENTION_WORKSPACE_ZEROED_BYTES // 8].zero_()
    return ws


def _workspace(t: torch.Tensor, op: str, nbytes: int) -> torch.Tensor:
    """The workspace of an op's call (op: the C function) on t's device and current stream."""
    if _capturing():
        # Not the stream's cached one: a graph's replays could then run beside the stream's
        # eager calls on one counter. A fresh one is private to the call, and its zeroing is
        # captured with it, so every replay starts from zero. It is freed when the op returns,
        # which is safe: the allocator is stream-ordered, and the kernel comes before the free.
        return _new_workspace(t, nbytes)
    index = t.get_device()
    key = (op, index, _raw_stream(index))
    ws = _WORKSPACES.get(key)
    if ws is None or ws.numel() * 8 < nbytes:
        ws = _WORKSPACES[key] = _new_workspace(t, nbytes)
    return ws


def _attention_workspace(q, a):
    """The workspace of attention call `a` (FlashAttentionArgs, workspace not set yet), as
    large as the call can use (tile_flash_attention_workspace_size); sets a.workspace and
    a.workspace_bytes and returns the tensor, to be held until after the launch."""
    nbytes = ctypes.c_size_t(FLASH_ATTENTION_WORKSPACE_BYTES)
    size = getattr(library(), "tile_flash_attention_workspace_size", None)
    if size is not None and size(ctypes.byref(a), ctypes.byref(nbytes)) != 0:
        nbytes.value = FLASH_ATTENTION_WORKSPACE_BYTES  # the launch reports what is wrong
    ws = _workspace(q, "tile_flash_attention", (nbytes.value + 7) // 8 * 8)
    a.workspace = ws.data_ptr()
    a.workspace_bytes = ws.numel() * 8 if size is not None else 0
    return ws


# ----------------------------------------------------------------------------- softmax
def _softmax_impl(x: torch.Tensor, dim: int, log: bool) -> torch.Tensor:
    """The general path: any dim, strides and device (with its checks and errors)."""
    name = "log_softmax" if log else "softmax"
    _check_input(x, name)
    _check_dim(x, dim, name)
    x2, rows, cols, ld_x = _rows_view(x, dim)
    y2 = torch.empty((rows, cols), dtype=x.dtype, device=x.device)
    fn = getattr(library(), "tile_log_softmax" if log else "tile_softmax")
    _call(x, fn, f"fusedops.{name}", _DTYPES[x.dtype], y2.data_ptr(), x2.data_ptr(), rows, cols,
          cols, ld_x)
    d = dim % max(x.dim(), 1)
    if x.dim() == 0:
        return y2.reshape(())
    if d != x.dim() - 1:
        shape = list(x.movedim(d, -1).shape)
        return y2.view(shape).movedim(-1, d)
    return y2.view(x.shape)


def _softmax_fast(log: bool):
    """softmax's (log_softmax's) implementation: the common call (a contiguous CUDA tensor of a
    supported dtype on the current device, over its last dim) inline, with nothing per call
    but what it must ask torch (dtype, layout, device, an output, the stream) and one ctypes
    call; everything else through _softmax_impl."""
    entry = "tile_log_softmax" if log else "tile_softmax"
    what = "fusedops.log_softmax" if log else "fusedops.softmax"

    def impl(x, dim=-1):
        code = _dtype_code(x.dtype)
        nd = x.dim()
        if (code is not None and nd and (dim == -1 or dim == nd - 1) and x.is_cuda
                and x.is_contiguous()):
            n = x.numel()
            index = x.get_device()
            fn = _FNS.get(entry) or _fn(entry)
            if n and index == _current_device() and fn is not None:
                cols = x.shape[-1]
                y = _empty_like(x, memory_format=_contiguous)
                status = fn(code, y.data_ptr(), x.data_ptr(), n // cols, cols, cols, cols,
                            _raw_stream(index))
                if status:
                    check(status, what)
                return y
        return _softmax_impl(x, dim, log)
    impl.__name__ = impl.__qualname__ = "_" + entry[5:] + "_impl_fast"
    return impl


def _softmax_kernel(impl, slow, plain):
    """The Autograd kernel of softmax and log_softmax (one tensor argument)."""
    def kernel(keyset, x, dim=-1):
        if keyset.raw_repr() == plain and not (x.requires_grad and _grad_enabled()):
            return impl(x, dim)
        return slow(keyset, x, dim)
    return kernel


def _empty_out(x, *args, **kwargs):
    """The fake output of the ops whose output is shaped like x: a contiguous tensor."""
    return torch.empty_like(x, memory_format=torch.contiguous_format)


def _softmax_out(x, dim=-1):
    """The fake output of softmax and log_softmax: contiguous over the last dim, else the real
    output's layout (computed with dim last, then moved back: _softmax_impl)."""
    _check_dim(x, dim, "softmax")
    d = dim % max(x.dim(), 1)
    if x.dim() == 0 or d == x.dim() - 1:
        return _empty_out(x)
    return x.new_empty(list(x.movedim(d, -1).shape)).movedim(-1, d)


_softmax_op_impl = _softmax_fast(False)  # what the op runs (test_overhead times it alone)
_log_softmax_op_impl = _softmax_fast(True)
_softmax_op = _register("softmax", "(Tensor x, SymInt dim=-1) -> Tensor", _softmax_op_impl,
                        _softmax_out, fast_kernel=_softmax_kernel)
_log_softmax_op = _register("log_softmax", "(Tensor x, SymInt dim=-1) -> Tensor",
                            _log_softmax_op_impl, _softmax_out, fast_kernel=_softmax_kernel)


def softmax(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """Softmax over `dim` (fp32 math; fp32, fp16 or bf16 storage)."""
    return _softmax_op(x, dim)


def log_softmax(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """Log-softmax over `dim`."""
    return _log_softmax_op(x, dim)


# ----------------------------------------------------------------------------- the norm family
_U64 = (1 << 64) - 1


def _launch(x: torch.Tensor, op: str, fn_name: str, *args):
    """Calls the library's fn_name(*args, stream) on x's device and current stream; raises
    RuntimeError with the library's status and message on failure."""
    _call(x, getattr(library(), fn_name), f"fusedops.{op}", *args)


def _like_x(t: torch.Tensor, x: torch.Tensor, name: str, op: str):
    """(t2, ld) of a second rows x cols input (residual): x's shape, dtype and device."""
    if t.device != x.device:
        raise ValueError(f"fusedops.{op}: {name} is on {t.device}, x on {x.device}")
    if t.dtype != x.dtype:
        raise TypeError(f"fusedops.{op}: {name} has dtype {t.dtype}, x {x.dtype} "
                        "(every tensor takes x's dtype)")
    if t.shape != x.shape:
        raise ValueError(f"fusedops.{op}: {name} has shape {tuple(t.shape)}, x "
                         f"{tuple(x.shape)}")
    t2, _, _, ld = _rows_view(t, -1)
    return t2, ld


def _vector(v: Optional[torch.Tensor], x: torch.Tensor, cols: int, name: str, op: str):
    """A [cols] vector argument, contiguous, or None."""
    if v is None:
        return None
    if v.device != x.device:
        raise ValueError(f"fusedops.{op}: {name} is on {v.device}, x on {x.device}")
    if v.dtype != x.dtype:
        raise TypeError(f"fusedops.{op}: {name} has dtype {v.dtype}, x {x.dtype} "
                        "(every tensor takes x's dtype)")
    if v.dim() != 1 or v.shape[0] != cols:
        raise ValueError(f"fusedops.{op}: {name} must have shape ({cols},) (x's last dim), got "
                         f"{tuple(v.shape)}")
    return v.contiguous()


def _ptr(t: Optional[torch.Tensor]):
    return t.data_ptr() if t is not None else None


def _vector_ok(v, dtype, index, cols):
    """Whether v (a [cols] vector argument, or None) goes to the library as it is: x's dtype,
    x's CUDA device, 1-D of x's last dim, contiguous. When not, the general path checks it
    (with its errors) or copies it."""
    return v is None or (v.dtype is dtype and v.is_cuda and v.get_device() == index
                         and v.dim() == 1 and v.shape[0] == cols and v.is_contiguous())


def _norm_impl(x, weight, bias, eps, rms):
    """The general path of layer_norm and rms_norm: any strides and device (with its checks
    and errors)."""
    op = "rms_norm" if rms else "layer_norm"
    _check_input(x, op)
    x2, rows, cols, ld_x = _rows_view(x, -1)
    w = _vector(weight, x, cols, "weight", op)
    b = _vector(bias, x, cols, "bias", op)
    y2 = torch.empty((rows, cols), dtype=x.dtype, device=x.device)
    if rms:
        _launch(x, op, "tile_rmsnorm", _DTYPES[x.dtype], y2.data_ptr(), x2.data_ptr(), _ptr(w),
                None, rows, cols, cols, ld_x, eps)
    else:
        _launch(x, op, "tile_layernorm", _DTYPES[x.dtype], y2.data_ptr(), x2.data_ptr(), _ptr(w),
                _ptr(b), None, None, rows, cols, cols, ld_x, eps)
    return y2.view(x.shape)


# The implementations below take the common call (contiguous CUDA tensors of one supported
# dtype on the current device, vectors that need no copy) inline, as softmax's does, and
# everything else through the general path above.
def _layer_norm_impl(x, weight=None, bias=None, eps=1e-5):
    code = _dtype_code(x.dtype)
    if code is not None and x.dim() and x.is_cuda and x.is_contiguous():
        n = x.numel()
        index = x.get_device()
        cols = x.shape[-1]
        dtype = x.dtype
        fn = _FNS.get("tile_layernorm") or _fn("tile_layernorm")
        if (n and index == _current_device() and fn is not None
                and _vector_ok(weight, dtype, index, cols)
                and _vector_ok(bias, dtype, index, cols)):
            y = _empty_like(x, memory_format=_contiguous)
            status = fn(code, y.data_ptr(), x.data_ptr(), _ptr(weight), _ptr(bias), None, None,
                        n // cols, cols, cols, cols, eps, _raw_stream(index))
            if status:
                check(status, "fusedops.layer_norm")
            return y
    return _norm_impl(x, weight, bias, eps, rms=False)


def _rms_norm_impl(x, weight=None, eps=1e-6):
    code = _dtype_code(x.dtype)
    if code is not None and x.dim() and x.is_cuda and x.is_contiguous():
        n = x.numel()
        index = x.get_device()
        cols = x.shape[-1]
        fn = _FNS.get("tile_rmsnorm") or _fn("tile_rmsnorm")
        if (n and index == _current_device() and fn is not None
                and _vector_ok(weight, x.dtype, index, cols)):
            y = _empty_like(x, memory_format=_contiguous)
            status = fn(code, y.data_ptr(), x.data_ptr(), _ptr(weight), None, n // cols, cols,
                        cols, cols, eps, _raw_stream(index))
            if status:
                check(status, "fusedops.rms_norm")
            return y
    return _norm_impl(x, weight, None, eps, rms=True)


def _residual_dropout_impl(x, residual, bias, p, seed, offset):
    op = "residual_dropout"
    code = _dtype_code(x.dtype)
    if code is not None and x.dim() and x.is_cuda and x.is_contiguous():
        n = x.numel()
        index = x.get_device()
        shape = x.shape
        cols = shape[-1]
        dtype = x.dtype
        fn = _FNS.get("tile_residual_dropout") or _fn("tile_residual_dropout")
        if (n and index == _current_device() and fn is not None and residual.dtype is dtype
                and residual.is_cuda and residual.get_device() == index
                and residual.is_contiguous() and residual.shape == shape
                and _vector_ok(bias, dtype, index, cols)):
            y = _empty_like(x, memory_format=_contiguous)
            status = fn(code, y.data_ptr(), x.data_ptr(), residual.data_ptr(), _ptr(bias), None,
                        n // cols, cols, cols, cols, cols, p, seed & _U64, offset & _U64,
                        _raw_stream(index))
            if status:
                check(status, f"fusedops.{op}")
            return y
    # the general path
    _check_input(x, op)
    x2, rows, cols, ld_x = _rows_view(x, -1)
    r2, ld_r = _like_x(residual, x, "residual", op)
    b = _vector(bias, x, cols, "bias", op)
    y2 = torch.empty((rows, cols), dtype=x.dtype, device=x.device)
    _launch(x, op, "tile_residual_dropout", _DTYPES[x.dtype], y2.data_ptr(), x2.data_ptr(),
            r2.data_ptr(), _ptr(b), None, rows, cols, cols, ld_x, ld_r, p, seed & _U64,
            offset & _U64)
    return y2.view(x.shape)


def _residual_dropout_norm_impl(x, residual, bias, weight, norm_bias, p, eps, seed, offset,
                                rms=False):
    op = "residual_dropout_norm"
    _check_input(x, op)
    if rms and norm_bias is not None:
        raise ValueError(f"fusedops.{op}: RMSNorm (rms=True) takes no norm_bias")
    x2, rows, cols, ld_x = _rows_view(x, -1)
    r2, ld_r = _like_x(residual, x, "residual", op)
    b = _vector(bias, x, cols, "bias", op)
    w = _vector(weight, x, cols, "weight", op)
    nb = _vector(norm_bias, x, cols, "norm_bias", op)
    y2 = torch.empty((rows, cols), dtype=x.dtype, device=x.device)
    s2 = torch.empty((rows, cols), dtype=x.dtype, device=x.device)
    args = AddNormArgs(
        struct_size=ctypes.sizeof(AddNormArgs), dtype=_DTYPES[x.dtype],
        norm=NORM_RMS if rms else NORM_LAYER, rows=rows, cols=cols,
        y=y2.data_ptr(), ld_y=cols, s=s2.data_ptr(), ld_s=cols, x=x2.data_ptr(), ld_x=ld_x,
        residual=r2.data_ptr(), ld_residual=ld_r, bias=_ptr(b), weight=_ptr(w),
        norm_bias=_ptr(nb), eps=eps, p=p, seed=seed & _U64, offset=offset & _U64)
    _launch(x, op, "tile_residual_dropout_norm", ctypes.byref(args))
    return y2.view(x.shape), s2.view(x.shape)


def _empty_out2(x, *args, **kwargs):
    return _empty_out(x), _empty_out(x)


_layer_norm_op = _register(
    "layer_norm", "(Tensor x, Tensor? weight=None, Tensor? bias=None, float eps=1e-05) -> Tensor",
    _layer_norm_impl, _empty_out, "torch.nn.functional.layer_norm")
_rms_norm_op = _register(
    "rms_norm", "(Tensor x, Tensor? weight=None, float eps=1e-06) -> Tensor", _rms_norm_impl,
    _empty_out, "torch.nn.functional.rms_norm")
_residual_dropout_op = _register(
    "residual_dropout", "(Tensor x, Tensor residual, Tensor? bias, float p, SymInt seed, "
    "SymInt offset) -> Tensor", _residual_dropout_impl, _empty_out,
    "residual + torch.nn.functional.dropout(x + bias, p)")
_residual_dropout_norm_op = _register(
    "residual_dropout_norm", "(Tensor x, Tensor residual, Tensor? bias, Tensor? weight, "
    "Tensor? norm_bias, float p, float eps, SymInt seed, SymInt offset, bool rms=False) -> "
    "(Tensor, Tensor)", _residual_dropout_norm_impl, _empty_out2,
    "torch.nn.functional.dropout and layer_norm/rms_norm")


def layer_norm(x: torch.Tensor, weight: Optional[torch.Tensor] = None,
               bias: Optional[torch.Tensor] = None, eps: float = 1e-5) -> torch.Tensor:
    """LayerNorm over the last dim: (x - mean) / sqrt(var + eps) * weight + bias (biased
    variance, fp32 math); F.layer_norm(x, (x.shape[-1],), weight, bias, eps)."""
    return _layer_norm_op(x, weight, bias, eps)


def rms_norm(x: torch.Tensor, weight: Optional[torch.Tensor] = None,
             eps: float = 1e-6) -> torch.Tensor:
    """RMSNorm over the last dim: x / sqrt(mean(x^2) + eps) * weight (fp32 math);
    F.rms_norm(x, (x.shape[-1],), weight, eps). F.rms_norm's default eps is
    torch.finfo(x.dtype).eps: pass eps to match it."""
    return _rms_norm_op(x, weight, eps)


def residual_dropout(x: torch.Tensor, residual: torch.Tensor, bias: Optional[torch.Tensor],
                     p: float, seed: int, offset: int) -> torch.Tensor:
    """residual + dropout(x + bias, p) in one pass (bias may be None)."""
    return _residual_dropout_op(x, residual, bias, p, seed, offset)


def residual_dropout_norm(x: torch.Tensor, residual: torch.Tensor, bias: Optional[torch.Tensor],
                          weight: Optional[torch.Tensor], norm_bias: Optional[torch.Tensor],
                          p: float, eps: float, seed: int, offset: int,
                          rms: bool = False) -> Tuple[torch.Tensor, torch.Tensor]:
    """The add-and-norm of a transformer block in one pass: s = residual + dropout(x + bias, p)
    (the new residual stream) and y = LayerNorm(s) * weight + norm_bias, or RMSNorm(s) * weight
    with rms=True (norm_bias must then be None). y is the norm of s as stored. Returns (y, s)."""
    return _residual_dropout_norm_op(x, residual, bias, weight, norm_bias, p, eps, seed, offset,
                                     rms)


# ----------------------------------------------------------------------------- flash attention
_ATTN_DTYPES = (torch.float16, torch.bfloat16)


def _attn_layout_ok(t: torch.Tensor) -> bool:
    """Whether the library takes t ([..., head_dim]) as it is: head_dim contiguous, the pointer
    16-byte aligned, and every stride of a dim longer than 1 a multiple of 16 bytes (the strides
    of size-1 dims are never used)."""
    if t.stride(-1) != 1 and t.shape[-1] > 1:
        return False
    if t.data_ptr() % 16:
        return False
    per16 = 16 // t.element_size()
    return all(t.stride(i) % per16 == 0 for i in range(t.dim() - 1) if t.shape[i] > 1)


def _attn_input(t: torch.Tensor) -> torch.Tensor:
    """t as the library takes it: itself where its layout allows, else a contiguous copy in a
    fresh (aligned) allocation; clone, not contiguous(), which returns a misaligned but
    contiguous tensor as it is."""
    return t if _attn_layout_ok(t) else t.clone(memory_format=torch.contiguous_format)


def _attn_tensors_check(q, k, v, rank, layout, op):
    """Raises on what the library would reject in q, k and v alike (dense and varlen calls):
    devices, dtypes, rank (`layout` names the dims for the message), k and v of one shape."""
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not t.is_cuda:
            raise ValueError(f"fusedops.{op}: {name} must be a CUDA tensor, got device {t.device}")
        if t.dtype not in _ATTN_DTYPES:
            raise TypeError(f"fusedops.{op}: {name} has dtype {t.dtype}, which is not supported "
                            "(float16, bfloat16)")
        if t.dim() != rank:
            raise ValueError(f"fusedops.{op}: {name} must be {rank}-D [{layout}], got shape "
                             f"{tuple(t.shape)}")
    for name, t in (("k", k), ("v", v)):
        if t.device != q.device:
            raise ValueError(f"fusedops.{op}: {name} is on {t.device}, q on {q.device}")
        if t.dtype != q.dtype:
            raise TypeError(f"fusedops.{op}: {name} has dtype {t.dtype}, q {q.dtype} "
                            "(q, k and v take one dtype)")
    if k.shape != v.shape:
        raise ValueError(f"fusedops.{op}: k and v must have one shape, got {tuple(k.shape)} and "
                         f"{tuple(v.shape)}")


def _int32_check(op, **sizes):
    """ValueError for a size the library takes as int32 (ctypes would wrap it silently)."""
    for name, n in sizes.items():
        if n >= 2 ** 31:
            raise ValueError(f"fusedops.{op}: {name} is {n}; the library takes fewer than 2^31")


def _attn_heads_check(h_q, h_kv, d, d_k, shapes, op):
    """head_dim alike in q and k, heads_q a multiple of heads_kv (GQA), each below 2^31."""
    _int32_check(op, heads_q=h_q, heads_kv=h_kv, head_dim=d)
    if d_k != d:
        raise ValueError(f"fusedops.{op}: k and v have head_dim {d_k}, q {d} (shapes {shapes})")
    if h_kv < 1 or h_q % h_kv:
        raise ValueError(f"fusedops.{op}: q's heads ({h_q}) must be a multiple of k's and v's "
                         f"({h_kv}) (GQA)")


def _attn_scale_check(scale, op):
    if scale is not None and (scale == 0.0 or not math.isfinite(scale)):
        raise ValueError(f"fusedops.{op}: scale is {scale}; pass a finite nonzero scale, or None "
                         "for 1 / sqrt(head_dim)")


def _attn_check(q, k, v, scale, op):
    """Raises on what the library would reject or misread: devices, dtypes, ranks, shapes."""
    _attn_tensors_check(q, k, v, 4, "batch, seqlen, heads, head_dim", op)
    b, s_q, h_q, d = q.shape
    b_k, s_k, h_kv, d_k = k.shape
    if b_k != b:
        raise ValueError(f"fusedops.{op}: k has batch {b_k}, q {b} (shapes {tuple(k.shape)}, "
                         f"{tuple(q.shape)})")
    _attn_heads_check(h_q, h_kv, d, d_k, f"{tuple(k.shape)}, {tuple(q.shape)}", op)
    if min(b, s_q, s_k, h_q, d) < 1:
        raise ValueError(f"fusedops.{op}: empty input (q {tuple(q.shape)}, k {tuple(k.shape)})")
    _int32_check(op, batch=b)
    _attn_scale_check(scale, op)


def _attn_impl(q, k, v, causal, scale, want_lse, op):
    _attn_check(q, k, v, scale, op)
    q2, k2, v2 = _attn_input(q), _attn_input(k), _attn_input(v)
    b, s_q, h_q, d = q.shape
    s_k, h_kv = k.shape[1], k.shape[2]
    o = torch.empty((b, s_q, h_q, d), dtype=q.dtype, device=q.device)
    lse = (torch.empty((b, h_q, s_q), dtype=torch.float32, device=q.device) if want_lse
           else None)
    a = FlashAttentionArgs(
        struct_size=ctypes.sizeof(FlashAttentionArgs), dtype=_DTYPES[q.dtype], batch=b,
        heads_q=h_q, heads_kv=h_kv, head_dim=d, causal=int(bool(causal)), seqlen_q=s_q,
        seqlen_k=s_k, scale=0.0 if scale is None else scale, o=o.data_ptr(), q=q2.data_ptr(),
        k=k2.data_ptr(), v=v2.data_ptr(), lse=lse.data_ptr() if want_lse else None)
    for name, t in (("q", q2), ("k", k2), ("v", v2), ("o", o)):
        set_strides(a, name, t)
    ws = _attention_workspace(q, a)  # held until after the launch
    _launch(q, op, "tile_flash_attention", ctypes.byref(a))
    return o, lse


def _flash_attention_impl(q, k, v, causal=False, scale=None):
    return _attn_impl(q, k, v, causal, scale, False, "flash_attention")[0]


def _flash_attention_lse_impl(q, k, v, causal=False, scale=None):
    return _attn_impl(q, k, v, causal, scale, True, "flash_attention_lse")


def _attn_fake(q, k, v, causal=False, scale=None):
    return q.new_empty(q.shape)


def _attn_lse_fake(q, k, v, causal=False, scale=None):
    b, s_q, h_q, _ = q.shape
    return q.new_empty(q.shape), q.new_empty((b, h_q, s_q), dtype=torch.float32)


_ATTN_SCHEMA = "(Tensor q, Tensor k, Tensor v, bool causal=False, float? scale=None)"
_flash_attention_op = _register(
    "flash_attention", _ATTN_SCHEMA + " -> Tensor", _flash_attention_impl, _attn_fake,
    "torch.nn.functional.scaled_dot_product_attention")
_flash_attention_lse_op = _register(
    "flash_attention_lse", _ATTN_SCHEMA + " -> (Tensor, Tensor)", _flash_attention_lse_impl,
    _attn_lse_fake, "torch.nn.functional.scaled_dot_product_attention")


def flash_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False,
                    scale: Optional[float] = None) -> torch.Tensor:
    """Flash attention forward: o = softmax(scale * q k^T + mask) v per (batch, head), fp32
    softmax and accumulation, fp16 or bf16 storage (q, k, v alike; o takes their dtype).

    q is [batch, seqlen_q, heads_q, head_dim], k and v [batch, seqlen_k, heads_kv, head_dim]
    (BSHD), head_dim a multiple of 8 up to 256. heads_q a multiple of heads_kv: GQA/MQA, query
    head h reads key/value head h // (heads_q // heads_kv), nothing copied. causal: query i
    sees key j iff j <= i + seqlen_k - seqlen_q (bottom-right aligned, as FlashAttention 2.1+;
    the same as F.scaled_dot_product_attention(is_causal=True) when seqlen_q == seqlen_k); a
    query that sees no key gets output 0. scale None means 1 / sqrt(head_dim) (0 is refused,
    not taken as that default).

    Inputs are read in place, whatever their strides, when head_dim is contiguous (stride 1),
    the data pointer is 16-byte aligned and every other stride is a multiple of 8 elements
    (16 bytes): BSHD tensors, BHSD tensors seen through .transpose(1, 2), slices of a packed
    qkv tensor. Otherwise that input is first copied into a fresh contiguous tensor, which
    costs a copy of it. Returns o as a contiguous [batch, seqlen_q, heads_q, head_dim] tensor.
    On Hopper the programs of the warp-specialized head-dim-64 kernels of 128-row blocks take
    query blocks as they finish them, from a counter in a workspace, and decode-shaped calls
    split their keys over programs with their shares there: one workspace per stream, as large
    as tile_flash_attention_workspace_size asks, its counters left zeroed by every call (a
    fresh one per call during CUDA graph capture); no host sync. No backward kernel yet: differentiating through it raises.
    """
    return _flash_attention_op(q, k, v, causal, scale)


def flash_attention_lse(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False,
                        scale: Optional[float] = None) -> Tuple[torch.Tensor, torch.Tensor]:
    """flash_attention, also returning the log-sum-exp of each query's scaled scores: (o, lse),
    lse float32 [batch, heads_q, seqlen_q] (natural log; -inf for a query that sees no key),
    what a backward pass or a split-KV merge needs."""
    return _flash_attention_lse_op(q, k, v, causal, scale)


def _attn_varlen_check(q, k, v, cu_q, cu_k, max_q, max_k, scale, op):
    """Raises on what the library would reject or misread in a varlen call."""
    _attn_tensors_check(q, k, v, 3, "tokens, heads, head_dim", op)
    _attn_heads_check(q.shape[1], k.shape[1], q.shape[2], k.shape[2],
                      f"{tuple(k.shape)}, {tuple(q.shape)}", op)
    for name, t in (("cu_seqlens_q", cu_q), ("cu_seqlens_k", cu_k)):
        if t.device != q.device or t.dtype != torch.int32 or t.dim() != 1 or t.numel() < 2:
            raise ValueError(f"fusedops.{op}: {name} must be an int32 tensor of batch + 1 "
                             f"offsets on {q.device}, got {t.dtype} {tuple(t.shape)} on "
                             f"{t.device}")
    _int32_check(op, batch=cu_q.numel() - 1)
    if cu_q.numel() != cu_k.numel():
        raise ValueError(f"fusedops.{op}: cu_seqlens_q has {cu_q.numel()} offsets, cu_seqlens_k "
                         f"{cu_k.numel()} (one batch)")
    for name, n in (("max_seqlen_q", max_q), ("max_seqlen_k", max_k)):
        if not 0 <= n < 2 ** 31:
            raise ValueError(f"fusedops.{op}: {name} is {n}; it must be in [0, 2^31)")
    _attn_scale_check(scale, op)


def _flash_attention_varlen_impl(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
                                 causal=False, scale=None):
    op = "flash_attention_varlen"
    _attn_varlen_check(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, scale, op)
    q2, k2, v2 = _attn_input(q), _attn_input(k), _attn_input(v)
    cu_q, cu_k = cu_seqlens_q.contiguous(), cu_seqlens_k.contiguous()
    total_q, h_q, d = q.shape
    total_k, h_kv = k.shape[0], k.shape[1]
    o = torch.empty((total_q, h_q, d), dtype=q.dtype, device=q.device)
    if total_q == 0:  # no query: nothing to compute (the library takes no NULL q)
        return o
    if total_k == 0:  # no key in any sequence: every row's output is 0 (docs/api.md)
        return o.zero_()
    a = FlashAttentionArgs(
        struct_size=ctypes.sizeof(FlashAttentionArgs), dtype=_DTYPES[q.dtype],
        batch=cu_q.numel() - 1, heads_q=h_q, heads_kv=h_kv, head_dim=d, causal=int(bool(causal)),
        seqlen_q=max_seqlen_q, seqlen_k=max_seqlen_k, scale=0.0 if scale is None else scale,
        o=o.data_ptr(), q=q2.data_ptr(), k=k2.data_ptr(), v=v2.data_ptr(),
        cu_seqlens_q=cu_q.data_ptr(), cu_seqlens_k=cu_k.data_ptr(), total_q=total_q,
        total_k=total_k)
    for name, t in (("q", q2), ("k", k2), ("v", v2), ("o", o)):
        set_strides(a, name, (0,) + tuple(t.stride()))  # [tokens, heads, head_dim]: no batch axis
    ws = _attention_workspace(q, a)  # held until after the launch
    _launch(q, op, "tile_flash_attention", ctypes.byref(a))
    return o


def _attn_varlen_fake(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
                      causal=False, scale=None):
    return q.new_empty(q.shape)


_flash_attention_varlen_op = _register(
    "flash_attention_varlen",
    "(Tensor q, Tensor k, Tensor v, Tensor cu_seqlens_q, Tensor cu_seqlens_k, SymInt max_seqlen_q,"
    " SymInt max_seqlen_k, bool causal=False, float? scale=None) -> Tensor",
    _flash_attention_varlen_impl, _attn_varlen_fake,
    "torch.nn.functional.scaled_dot_product_attention on each sequence")


def flash_attention_varlen(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                           cu_seqlens_q: torch.Tensor, cu_seqlens_k: torch.Tensor,
                           max_seqlen_q: int, max_seqlen_k: int, causal: bool = False,
                           scale: Optional[float] = None) -> torch.Tensor:
    """flash_attention over a batch of packed sequences of their own lengths (FlashAttention's
    flash_attn_varlen_func layout): q is [total_q, heads_q, head_dim], k and v [total_k,
    heads_kv, head_dim]; sequence b is tokens cu_seqlens_q[b] to cu_seqlens_q[b + 1] - 1 of q
    (and of the output), cu_seqlens_k[b] to cu_seqlens_k[b + 1] - 1 of k and v (int32 CUDA
    tensors of batch + 1 offsets from 0, never read on the host: no sync, capturable in a CUDA
    graph). max_seqlen_q and max_seqlen_k: the longest sequences, which size the launch (a
    longer one is not computed in full). causal, scale, GQA and the in-place reading of inputs
    as flash_attention's. Returns o, contiguous, shaped like q; its rows past
    cu_seqlens_q[-1] are not written. Nothing a tensor holds past a sequence's end (the next
    sequence's tokens) reaches that sequence's output."""
    return _flash_attention_varlen_op(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
                                      max_seqlen_k, causal, scale)


# ----------------------------------------------------------------------------- grouped matmul
def _round8(n):
    """n rounded up to a multiple of 8 elements: the 16 bytes every row stride needs."""
    return (n + 7) // 8 * 8


def _gmm_layout_ok(t: torch.Tensor) -> bool:
    """Whether the library takes t ([..., rows, cols]) as it is: cols contiguous, the pointer
    16-byte aligned, and every other stride (of a dim longer than 1) a multiple of 8 elements
    that steps past everything the dims inside it span (no overlaps, as expand() makes)."""
    if t.data_ptr() % 16 or (t.shape[-1] > 1 and t.stride(-1) != 1):
        return False
    span = t.shape[-1]
    for i in range(t.dim() - 2, -1, -1):
        if t.shape[i] > 1:
            if t.stride(i) % 8 or t.stride(i) < span:
                return False
            span += t.stride(i) * (t.shape[i] - 1)
    return True


def _gmm_operand(t: torch.Tensor) -> torch.Tensor:
    """t as the library takes it: itself where _gmm_layout_ok, else a copy whose rows are padded
    to a multiple of 8 elements, in a fresh (aligned) allocation."""
    if _gmm_layout_ok(t):
        return t
    cols = t.shape[-1]
    padded = t.new_empty(tuple(t.shape[:-1]) + (_round8(cols),))[..., :cols]
    padded.copy_(t)
    return padded


def _gmm_out(a: torch.Tensor, n: int) -> torch.Tensor:
    """C [total_m, n] with rows _round8(n) elements apart (as torch._grouped_mm allocates its
    output): a contiguous tensor when n is a multiple of 8, else a view of the first n columns."""
    return torch.empty_strided((a.shape[0], n), (_round8(n), 1), dtype=a.dtype, device=a.device)


def _gmm_check(a, b, offs, bias, op):
    """Raises on what the library would reject or misread: devices, dtypes, ranks, shapes."""
    for name, t in (("a", a), ("b", b), ("offs", offs)) + ((("bias", bias),) if bias is not None
                                                            else ()):
        if not t.is_cuda:
            raise ValueError(f"fusedops.{op}: {name} must be a CUDA tensor, got device {t.device}")
        if t.device != a.device:
            raise ValueError(f"fusedops.{op}: {name} is on {t.device}, a on {a.device}")
    if a.dtype not in _ATTN_DTYPES:
        raise TypeError(f"fusedops.{op}: a has dtype {a.dtype}, which is not supported "
                        "(float16, bfloat16)")
    for name, t in (("b", b),) + ((("bias", bias),) if bias is not None else ()):
        if t.dtype != a.dtype:
            raise TypeError(f"fusedops.{op}: {name} has dtype {t.dtype}, a {a.dtype} (a, b and "
                            "bias take one dtype)")
    if offs.dtype != torch.int32:
        raise TypeError(f"fusedops.{op}: offs must be int32 (cumulative row ends, as "
                        f"torch._grouped_mm's offs), got {offs.dtype}")
    if a.dim() != 2:
        raise ValueError(f"fusedops.{op}: a must be 2-D [total_m, K], got shape {tuple(a.shape)}")
    if b.dim() != 3:
        raise ValueError(f"fusedops.{op}: b must be 3-D [groups, K, N], got shape "
                         f"{tuple(b.shape)}")
    groups, k, n = b.shape
    _int32_check(op, groups=groups)
    if a.shape[1] != k:
        raise ValueError(f"fusedops.{op}: a has K = {a.shape[1]}, b {k} (shapes {tuple(a.shape)}, "
                         f"{tuple(b.shape)})")
    if offs.dim() != 1 or offs.shape[0] != groups:
        raise ValueError(f"fusedops.{op}: offs must have shape ({groups},) (one end per group of "
                         f"b), got {tuple(offs.shape)}")
    if bias is not None and tuple(bias.shape) != (groups, n):
        raise ValueError(f"fusedops.{op}: bias must have shape ({groups}, {n}) ([groups, N]), got "
                         f"{tuple(bias.shape)}")
    if groups < 1 or k < 1 or n < 1:
        raise ValueError(f"fusedops.{op}: empty input (b {tuple(b.shape)}): groups, K and N must "
                         "be at least 1")


def _grouped_mm_impl(a, b, offs, bias=None):
    op = "grouped_mm"
    _gmm_check(a, b, offs, bias, op)
    groups, k, n = b.shape
    total_m = a.shape[0]
    c = _gmm_out(a, n)
    if total_m == 0:
        return c
    a2 = _gmm_operand(a)
    if b.shape[2] == 1 or b.stride(2) == 1 or not (b.shape[1] == 1 or b.stride(1) == 1):
        b2, nk = _gmm_operand(b), False  # [groups, K, N], N contiguous
    else:
        b2, nk = _gmm_operand(b.transpose(1, 2)).transpose(1, 2), True  # K contiguous
    bias2 = _gmm_operand(bias) if bias is not None else None
    offs2 = offs.contiguous()
    # held until after the launch
    ws = _workspace(a, "tile_grouped_matmul", GROUPED_MATMUL_WORKSPACE_BYTES)
    # A dim of size 1 is never stepped over: its stride is given as a dense padded layout's.
    b_k = 1 if nk else (b2.stride(1) if k > 1 else _round8(n))
    b_n = 1 if not nk else (b2.stride(2) if n > 1 else _round8(k))
    args = GroupedMatmulArgs(
        struct_size=ctypes.sizeof(GroupedMatmulArgs), dtype=_DTYPES[a.dtype], groups=groups,
        total_m=total_m, n=n, k=k, c=c.data_ptr(), a=a2.data_ptr(), b=b2.data_ptr(),
        ldc=c.stride(0), lda=a2.stride(0) if total_m > 1 else _round8(k),
        b_group_stride=b2.stride(0) if groups > 1 else _round8((k - 1) * b_k + (n - 1) * b_n + 1),
        b_k_stride=b_k, b_n_stride=b_n, bias=_ptr(bias2),
        bias_group_stride=(bias2.stride(0) if groups > 1 else _round8(n)) if bias2 is not None
        else 0,
        offsets=offs2.data_ptr(), workspace=ws.data_ptr())
    _launch(a, op, "tile_grouped_matmul", ctypes.byref(args))
    return c


def _grouped_mm_fake(a, b, offs, bias=None):
    n = b.shape[2]
    return torch.empty_strided((a.shape[0], n), (_round8(n), 1), dtype=a.dtype, device=a.device)


_grouped_mm_op = _register(
    "grouped_mm", "(Tensor a, Tensor b, Tensor offs, Tensor? bias=None) -> Tensor",
    _grouped_mm_impl, _grouped_mm_fake, "torch._grouped_mm or a loop of torch.mm over the groups")


def grouped_mm(a: torch.Tensor, b: torch.Tensor, offs: torch.Tensor,
               bias: Optional[torch.Tensor] = None) -> torch.Tensor:
    """Grouped matrix product of a mixture-of-experts layer: C_g = A_g B_g (+ bias_g), fp32
    accumulation, fp16 or bf16 storage (a, b and bias alike; C takes their dtype).

    a is [total_m, K] with the tokens sorted by group, b [groups, K, N], offs int32 [groups]
    on the device: the cumulative row ends (torch._grouped_mm's offs), group g being rows
    offs[g - 1] .. offs[g] - 1 (offs[-1] taken as 0). Groups may be empty. bias, optional, is
    [groups, N]. Returns C [total_m, N] with rows padded to a multiple of 8 elements (as
    torch._grouped_mm: contiguous when N is a multiple of 8). Rows past offs[groups - 1] are
    not written: they hold whatever the allocator gave. offs is read on the device only (no
    host sync: the op can be captured in a CUDA graph), so it is not validated: ends are clamped
    into [previous end, total_m]. On Hopper the kernel's programs take output tiles as they
    finish them, from a counter in a small workspace: one 64-byte tensor per stream, made once
    and left zeroed by every call (a fresh one per call during CUDA graph capture); still no
    host sync.

    b is read in place in either layout, [groups, K, N] with N contiguous or [groups, N, K]
    with K contiguous seen through .transpose(1, 2) (an nn.Linear-style weight per expert), as
    are a and bias, when the pointer is 16-byte aligned and the other strides are multiples of
    8 elements; otherwise that input is first copied into a fresh tensor with padded rows.
    No backward kernel yet: differentiating through it raises.
    """
    return _grouped_mm_op(a, b, offs, bias)
