"""The library's version is defined once, in include/fusedops.h (CMake reads it); the places
that quote it must agree: docs/api.md's versioning block, docs/cli.md's `fusedops version`
example, docs/support.md's first paragraph and python/pyproject.toml. (api.md's block said
0.9.4 through 0.9.11 before this test.)"""
import os
import re
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def read(path):
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        return f.read()


def header_version():
    text = read("include/fusedops.h")
    parts = [re.search(rf"#define TILE_VERSION_{p} (\d+)", text)
             for p in ("MAJOR", "MINOR", "PATCH")]
    if not all(parts):
        raise AssertionError("include/fusedops.h lacks a TILE_VERSION_MAJOR/MINOR/PATCH line")
    return tuple(int(m.group(1)) for m in parts)


class DocsVersion(unittest.TestCase):
    def setUp(self):
        self.version = header_version()
        self.dotted = ".".join(str(x) for x in self.version)

    def test_api_block(self):
        text = read("docs/api.md")
        for name, value in zip(("MAJOR", "MINOR", "PATCH"), self.version):
            self.assertIn(f"#define TILE_VERSION_{name} {value}\n", text)

    def test_cli_example(self):
        self.assertRegex(read("docs/cli.md"),
                         rf"libfusedops {re.escape(self.dotted)} \(\d+ variants\)")

    def test_support_md(self):
        first = " ".join(read("docs/support.md").split("\n\n")[1].split())
        self.assertIn(f"libfusedops {self.dotted},", first)

    def test_pyproject(self):
        self.assertRegex(read("python/pyproject.toml"),
                         rf'(?m)^version = "{re.escape(self.dotted)}"$')


if __name__ == "__main__":
    unittest.main()
