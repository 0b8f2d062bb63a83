"""The ctypes mirrors of the public structs (python/fusedops/_lib.py) against the C compiler's
layout, as printed by tests/host/struct_layout.c: the same fields in the same order, at the same
offsets, of the same sizes, and the same sizeof. Host only (no GPU, no PyTorch).

Run: python3 tests/python/test_ctypes_layout.py build/tests/struct_layout
"""
import ctypes
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from fusedops import _lib  # noqa: E402  (ctypes only: does not load the library)

PROGRAM = None  # the struct_layout binary, from argv
MIRRORS = {
    "tile_variant_info": _lib.VariantInfo,
    "tile_decision": _lib.Decision,
    "tile_add_norm_args": _lib.AddNormArgs,
    "tile_flash_attention_args": _lib.FlashAttentionArgs,
    "tile_grouped_matmul_args": _lib.GroupedMatmulArgs,
}


def c_layout():
    """{struct: ([(field, offset, size)], sizeof)} from the C program."""
    out = subprocess.run([PROGRAM], check=True, capture_output=True, text=True).stdout
    layout = {}
    for line in out.splitlines():
        parts = line.split()
        fields, _ = layout.setdefault(parts[0], ([], None))
        if parts[1] == "sizeof":
            layout[parts[0]] = (fields, int(parts[2]))
        else:
            fields.append((parts[1], int(parts[2]), int(parts[3])))
    return layout


class CtypesLayoutTest(unittest.TestCase):
    def test_every_struct_matches_c(self):
        layout = c_layout()
        self.assertEqual(sorted(layout), sorted(MIRRORS))
        for name, mirror in MIRRORS.items():
            fields, size = layout[name]
            ours = [(f, getattr(mirror, f).offset, getattr(mirror, f).size)
                    for f, *_ in mirror._fields_]
            self.assertEqual(ours, fields, f"{name}: (field, offset, size) differ from C")
            self.assertEqual(ctypes.sizeof(mirror), size, f"{name}: sizeof differs from C")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: test_ctypes_layout.py STRUCT_LAYOUT_BINARY [unittest args]")
    PROGRAM = sys.argv.pop(1)
    unittest.main()
