#!/usr/bin/env bash
# Builds everything and runs all tests (the CI, .ci/run, runs this). GPU tests report "skipped"
# (exit 77) without a GPU. Stages, each under its own header (docs/reliability.md):
#
#   1. build + ctest      ${BUILD_DIR:-build}: host tests (with the ABI check), GPU tests
#   2. ASan + UBSan       ${ASAN_BUILD_DIR:-$BUILD_DIR-asan}: gcc, FUSEDOPS_SANITIZE=ON, host tests
#   3. fuzzing            ${FUZZ_BUILD_DIR:-$BUILD_DIR-fuzz}: scripts/fuzz.sh $FUZZ_SECONDS (60)
#
# SANITIZE=0 skips stage 2 and FUZZ_SECONDS=0 stage 3 (for a quicker local run; CI runs all).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/cuda/bin:$PATH"
build="${BUILD_DIR:-build}"
asan_build="${ASAN_BUILD_DIR:-$build-asan}"
fuzz_seconds="${FUZZ_SECONDS:-60}"
start=$SECONDS
summary=()

section() { printf '\n======== %s ========\n' "$*"; stage_start=$SECONDS; }
done_section() { summary+=("$(printf '%-34s %4d s' "$1" $((SECONDS - stage_start)))"); }

section "dependencies"
bash scripts/deps.sh --test
done_section "dependencies"

section "build ($build)"
bash scripts/build.sh
done_section "build"

section "tests ($build): host, ABI, GPU (skipped without a GPU)"
ctest --test-dir "$build" --output-on-failure -j 2
done_section "tests"

if [ "${SANITIZE:-1}" != 0 ]; then
  section "ASan + UBSan build ($asan_build)"
  # (host code differs from the first build's, the kernels do not: their fatbinary is reused)
  cmake -S . -B "$asan_build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER=gcc -DCMAKE_CXX_COMPILER=g++ \
    -DFUSEDOPS_SANITIZE=ON -DFUSEDOPS_BUILD_BENCH=OFF \
    -DFUSEDOPS_KERNELS_FROM="$(cd "$build" && pwd)" >/dev/null
  cmake --build "$asan_build" -j "$(nproc)"
  done_section "ASan + UBSan build"

  section "ASan + UBSan host tests ($asan_build)"
  ctest --test-dir "$asan_build" -L host --output-on-failure -j 2
  done_section "ASan + UBSan host tests"
fi

if [ "$fuzz_seconds" != 0 ]; then
  section "fuzzing: scripts/fuzz.sh $fuzz_seconds (libFuzzer, clang)"
  BUILD_DIR="$build" bash scripts/fuzz.sh "$fuzz_seconds"
  done_section "fuzzing"
fi

printf '\n======== all passed in %d s ========\n' $((SECONDS - start))
printf '  %s\n' "${summary[@]}"
