#!/usr/bin/env bash
# Packs what the GPU machine needs into .device/ (ignored by git; carry it): the library, the
# CLI, test and bench binaries, and the runtime libraries that image lacks (cmocka, benchmark).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
rm -rf .device && mkdir -p .device/bin .device/lib .device/tests
cp -P "$build"/libfusedops.so* .device/lib/
cp "$build/fusedops" .device/bin/
[ -f "$build/example_softmax" ] && cp "$build/example_softmax" .device/bin/
[ -f "$build/bench/bench_softmax" ] && cp "$build/bench/bench_softmax" .device/bin/
for t in "$build"/tests/test_*gpu*; do [ -x "$t" ] && cp "$t" .device/tests/; done
for l in libcmocka.so.0 libbenchmark.so.1 libbenchmark_main.so.1; do
  p=$(ldconfig -p | awk -v l="$l" '$1 == l {print $NF; exit}')
  [ -n "$p" ] && cp -L "$p" .device/lib/
done
du -sh .device
