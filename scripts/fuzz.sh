#!/usr/bin/env bash
# Builds the libFuzzer harnesses (tests/fuzz/) with clang and runs each for SECONDS, failing on
# a crash, a hang (one input over 25 s), a leak, running out of memory (2 GiB) or any
# ASan/UBSan report. docs/reliability.md describes the harnesses and their corpora.
#
#   bash scripts/fuzz.sh [SECONDS]     default 60 s per fuzzer
#
# Build directory: $FUZZ_BUILD_DIR, default ${BUILD_DIR:-build}-fuzz (configured with
# CC=clang, -DFUSEDOPS_FUZZ=ON; only the `fuzzers` target is built there). Each fuzzer runs on
# a working copy of its committed seed corpus (tests/fuzz/corpus/NAME -> BUILD/fuzz-corpus/NAME,
# which keeps what earlier runs found); crash inputs land in BUILD/fuzz-artifacts/NAME/.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
if ! [[ "$seconds" =~ ^[0-9]+$ ]] || ((seconds < 1)); then
  echo "usage: $0 [SECONDS]  (seconds per fuzzer, default 60)" >&2
  exit 2
fi
export PATH="/usr/local/cuda/bin:$PATH"
build="${FUZZ_BUILD_DIR:-${BUILD_DIR:-build}-fuzz}"
for tool in clang clang++; do
  command -v "$tool" >/dev/null || { echo "error: $tool not found (bash scripts/deps.sh --test)" >&2; exit 1; }
done

if [ ! -f "$build/CMakeCache.txt" ]; then
  # the main build's fatbinary where it has one of the same kernels (cmake/fatbin.sh)
  kernels_from=""
  [ -d "${BUILD_DIR:-build}" ] && kernels_from=$(cd "${BUILD_DIR:-build}" && pwd)
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DFUSEDOPS_FUZZ=ON -DFUSEDOPS_BUILD_BENCH=OFF -DFUSEDOPS_KERNELS_FROM="$kernels_from" >/dev/null
fi
cmake --build "$build" --target fuzzers -j "$(nproc)"

status=0
for name in grid dispatch; do
  bin="$build/tests/fuzz/fuzz_$name"
  corpus="$build/fuzz-corpus/$name"
  artifacts="$build/fuzz-artifacts/$name/"
  log="$build/fuzz-$name.log"
  mkdir -p "$corpus" "$artifacts"
  cp -n tests/fuzz/corpus/"$name"/* "$corpus"/
  extra=()
  [ -f "tests/fuzz/$name.dict" ] && extra+=("-dict=tests/fuzz/$name.dict")
  echo "fuzz_$name: ${seconds} s on $corpus ($(ls "$corpus" | wc -l) inputs)"
  set +e
  "$bin" -max_total_time="$seconds" -timeout=25 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$artifacts" "${extra[@]}" "$corpus" >"$log" 2>&1
  rc=$?
  set -e
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  if ((rc != 0)); then
    status=1
    echo "FAIL: fuzz_$name exited with $rc after ${runs:-?} runs; the end of $log:"
    tail -n 60 "$log"
    crash=$(ls -t "$artifacts" 2>/dev/null | head -n 1)
    if [ -n "$crash" ]; then
      echo "input: $artifacts$crash"
      echo "reproduce: $bin $artifacts$crash"
    fi
  else
    echo "ok: fuzz_$name, ${runs:-?} runs, $(ls "$corpus" | wc -l) inputs in the corpus," \
         "$(grep -o 'cov: [0-9]*' "$log" | tail -n 1)"
  fi
done
exit "$status"
