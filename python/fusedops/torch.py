"""torch.ops.fusedops.*: libfusedops kernels as torch.library custom ops.

Each op runs on torch.cuda.current_stream() of its input's device, writes into a tensor from
the PyTorch allocator, and has a fake (meta) implementation so torch.compile(fullgraph=True)
traces it without a graph break. Inputs are used in place when their layout allows (rows of
unit stride, one stride between rows); otherwise they are copied first (contiguous()).
Backward kernels do not exist yet: differentiating through these ops raises.
"""
import torch

from ._lib import check, library

_DTYPES = {torch.float32: 0, torch.float16: 1, torch.bfloat16: 2}


def _rows_view(x: torch.Tensor, dim: int):
    """(x2d, rows, cols, ld): x as [rows, cols] rows with unit column stride; a copy only when
    the softmax dim is not last or the leading dims do not collapse into one row stride."""
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
    with torch.cuda.device(x.device):  # the library runs on the current context's device
        stream = torch.cuda.current_stream(x.device).cuda_stream
        check(fn(_DTYPES[x.dtype], y2.data_ptr(), x2.data_ptr(), rows, cols, cols, ld_x, stream),
              f"fusedops.{name}")
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


def _no_backward(name):
    def backward(ctx, grad):
        raise NotImplementedError(
            f"fusedops.{name} has no backward kernel yet; use torch.{name} where gradients "
            "are needed")
    return backward


softmax.register_autograd(_no_backward("softmax"))
log_softmax.register_autograd(_no_backward("log_softmax"))
