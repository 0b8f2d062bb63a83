#!/usr/bin/env bash
# Configures and builds into ${BUILD_DIR:-build} (library, CLI, tests, bench).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
export PATH="/usr/local/cuda/bin:$PATH"
build="${BUILD_DIR:-build}"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build "$build" -j "$(nproc)"
