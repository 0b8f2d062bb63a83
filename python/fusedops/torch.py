"""torch.ops.fusedops.*: libfusedops kernels as torch.library custom ops.

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
The norm family normalizes (and adds along) the last dim: weight, bias and norm_bias are [cols]
vectors (or None), residual has x's shape, and every tensor has x's dtype and device. Dropout
keeps an element with probability 1 - p and scales it by 1 / (1 - p); p = 0 is the identity and
p applies whatever the module's training flag (pass p = 0 in eval). Its mask is a pure function
of (seed, offset, row, col) (docs/api.md, "Dropout random numbers"): advance offset (or change
seed) from call to call for fresh masks. seed and offset are int64 here, taken as their 64 bits.
"""
import ctypes
from typing import Optional, Tuple

import torch

from ._lib import NORM_LAYER, NORM_RMS, AddNormArgs, check, library

_DTYPES = {torch.float32: 0, torch.float16: 1, torch.bfloat16: 2}


def _raw_stream(index: int) -> int:
    """The current stream's handle on device `index` (torch's private fast path where it
    exists: a few microseconds less per call than torch.cuda.current_stream())."""
    return torch.cuda.current_stream(index).cuda_stream


if hasattr(torch._C, "_cuda_getCurrentRawStream"):
    _raw_stream = torch._C._cuda_getCurrentRawStream  # noqa: F811


def _call(x: torch.Tensor, fn, op: str, *args):
    """fn(*args, stream) on x's device and current stream; the library's status and message
    become a RuntimeError. Switches the current device only when x is on another one (the
    switch costs more than the rest of a small call)."""
    index = x.get_device()
    if index == torch.cuda.current_device():
        check(fn(*args, _raw_stream(index)), op)
        return
    with torch.cuda.device(index):  # the library runs on the current context's device
        check(fn(*args, _raw_stream(index)), op)


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
    ld = x2.stride(0) if x2.shape[0] > 1 else cols
    return x2, x2.shape[0], cols, max(ld, cols)


def _check_input(x: torch.Tensor, name: str):
    if not x.is_cuda:
        raise ValueError(f"fusedops.{name}: x must be a CUDA tensor, got device {x.device}")
    if x.dtype not in _DTYPES:
        raise TypeError(f"fusedops.{name}: dtype {x.dtype} is not supported "
                        "(float32, float16, bfloat16)")
    if x.numel() == 0:
        raise ValueError(f"fusedops.{name}: x is empty")


def _softmax_impl(x: torch.Tensor, dim: int, log: bool) -> torch.Tensor:
    name = "log_softmax" if log else "softmax"
    _check_input(x, name)
    x2, rows, cols, ld_x = _rows_view(x, dim)
    y2 = torch.empty((rows, cols), dtype=x.dtype, device=x.device)
    lib = library()
    fn = lib.tile_log_softmax if log else lib.tile_softmax
    _call(x, fn, f"fusedops.{name}", _DTYPES[x.dtype], y2.data_ptr(), x2.data_ptr(), rows, cols,
          cols, ld_x)
    d = dim % max(x.dim(), 1)
    if x.dim() == 0:
        return y2.reshape(())
    if d != x.dim() - 1:
        shape = list(x.movedim(d, -1).shape)
        return y2.view(shape).movedim(-1, d)
    return y2.view(x.shape)


@torch.library.custom_op("fusedops::softmax", mutates_args=())
def softmax(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """Softmax over `dim` (fp32 math; fp32, fp16 or bf16 storage)."""
    return _softmax_impl(x, dim, log=False)


@torch.library.custom_op("fusedops::log_softmax", mutates_args=())
def log_softmax(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """Log-softmax over `dim`."""
    return _softmax_impl(x, dim, log=True)


@softmax.register_fake
def _(x, dim=-1):
    return torch.empty_like(x, memory_format=torch.contiguous_format)


@log_softmax.register_fake
def _(x, dim=-1):
    return torch.empty_like(x, memory_format=torch.contiguous_format)


def _no_backward(name, instead=None):
    instead = instead or f"torch.{name}"

    def backward(ctx, *grads):
        raise NotImplementedError(
            f"fusedops.{name} has no backward kernel yet; use {instead} where gradients "
            "are needed")
    return backward


softmax.register_autograd(_no_backward("softmax"))
log_softmax.register_autograd(_no_backward("log_softmax"))


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


def _norm_impl(x, weight, bias, eps, rms):
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


@torch.library.custom_op("fusedops::layer_norm", mutates_args=())
def layer_norm(x: torch.Tensor, weight: Optional[torch.Tensor] = None,
               bias: Optional[torch.Tensor] = None, eps: float = 1e-5) -> torch.Tensor:
    """LayerNorm over the last dim: (x - mean) / sqrt(var + eps) * weight + bias (biased
    variance, fp32 math); F.layer_norm(x, (x.shape[-1],), weight, bias, eps)."""
    return _norm_impl(x, weight, bias, eps, rms=False)


@torch.library.custom_op("fusedops::rms_norm", mutates_args=())
def rms_norm(x: torch.Tensor, weight: Optional[torch.Tensor] = None,
             eps: float = 1e-6) -> torch.Tensor:
    """RMSNorm over the last dim: x / sqrt(mean(x^2) + eps) * weight (fp32 math);
    F.rms_norm(x, (x.shape[-1],), weight, eps). F.rms_norm's default eps is
    torch.finfo(x.dtype).eps: pass eps to match it."""
    return _norm_impl(x, weight, None, eps, rms=True)


@torch.library.custom_op("fusedops::residual_dropout", mutates_args=())
def residual_dropout(x: torch.Tensor, residual: torch.Tensor, bias: Optional[torch.Tensor],
                     p: float, seed: int, offset: int) -> torch.Tensor:
    """residual + dropout(x + bias, p) in one pass (bias may be None)."""
    op = "residual_dropout"
    _check_input(x, op)
    x2, rows, cols, ld_x = _rows_view(x, -1)
    r2, ld_r = _like_x(residual, x, "residual", op)
    b = _vector(bias, x, cols, "bias", op)
    y2 = torch.empty((rows, cols), dtype=x.dtype, device=x.device)
    _launch(x, op, "tile_residual_dropout", _DTYPES[x.dtype], y2.data_ptr(), x2.data_ptr(),
            r2.data_ptr(), _ptr(b), None, rows, cols, cols, ld_x, ld_r, p, seed & _U64,
            offset & _U64)
    return y2.view(x.shape)


@torch.library.custom_op("fusedops::residual_dropout_norm", mutates_args=())
def residual_dropout_norm(x: torch.Tensor, residual: torch.Tensor, bias: Optional[torch.Tensor],
                          weight: Optional[torch.Tensor], norm_bias: Optional[torch.Tensor],
                          p: float, eps: float, seed: int, offset: int,
                          rms: bool = False) -> Tuple[torch.Tensor, torch.Tensor]:
    """The add-and-norm of a transformer block in one pass: s = residual + dropout(x + bias, p)
    (the new residual stream) and y = LayerNorm(s) * weight + norm_bias, or RMSNorm(s) * weight
    with rms=True (norm_bias must then be None). y is the norm of s as stored. Returns (y, s)."""
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


def _empty_out(x):
    return torch.empty_like(x, memory_format=torch.contiguous_format)


@layer_norm.register_fake
def _(x, weight=None, bias=None, eps=1e-5):
    return _empty_out(x)


@rms_norm.register_fake
def _(x, weight=None, eps=1e-6):
    return _empty_out(x)


@residual_dropout.register_fake
def _(x, residual, bias, p, seed, offset):
    return _empty_out(x)


@residual_dropout_norm.register_fake
def _(x, residual, bias, weight, norm_bias, p, eps, seed, offset, rms=False):
    return _empty_out(x), _empty_out(x)


layer_norm.register_autograd(_no_backward("layer_norm", "torch.nn.functional.layer_norm"))
rms_norm.register_autograd(_no_backward("rms_norm", "torch.nn.functional.rms_norm"))
residual_dropout.register_autograd(
    _no_backward("residual_dropout", "residual + torch.nn.functional.dropout(x + bias, p)"))
residual_dropout_norm.register_autograd(
    _no_backward("residual_dropout_norm", "torch.nn.functional.dropout and layer_norm/rms_norm"))
