"""Python access to libfusedops. `import fusedops.torch` registers the torch.ops.fusedops ops."""
from ._lib import library, version  # noqa: F401
