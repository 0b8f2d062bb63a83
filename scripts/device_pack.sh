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
for b in bench_softmax bench_norm bench_attention bench_grouped_matmul; do [ -f "$build/bench/$b" ] && cp "$build/bench/$b" .device/bin/; done
[ -f "$build/example_transformer_block" ] && cp "$build/example_transformer_block" .device/bin/
for t in "$build"/tests/test_*gpu*; do [ -x "$t" ] && cp "$t" .device/tests/; done
# Whatever the carried binaries link that the device image lacks (cmocka, Google Benchmark,
# under the names this machine's packages give them).
for b in .device/bin/* .device/tests/*; do
  ldd "$b" 2>/dev/null | awk '/libcmocka|libbenchmark/ {print $3}'
done | sort -u | while read -r p; do cp -L "$p" .device/lib/; done
du -sh .device
