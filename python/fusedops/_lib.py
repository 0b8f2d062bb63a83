"""Loads libfusedops.so and declares the C ABI used from Python (ctypes)."""
import ctypes
import ctypes.util
import os

_lib = None

STATUS_NAMES = None  # filled from tile_status_string


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
    lib.tile_status_string.argtypes = [ctypes.c_int]
    lib.tile_status_string.restype = ctypes.c_char_p
    lib.tile_last_error.argtypes = []
    lib.tile_last_error.restype = ctypes.c_char_p
    lib.tile_version.argtypes = []
    lib.tile_version.restype = i32
    _lib = lib
    return lib


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
