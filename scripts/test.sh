#!/usr/bin/env bash
# Builds everything and runs all tests. GPU tests report "skipped" (exit 77) without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
build="${BUILD_DIR:-build}"
ctest --test-dir "$build" --output-on-failure -j 2
