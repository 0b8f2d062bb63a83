#!/usr/bin/env bash
# Installs the Debian packages the build and tests need, where missing. The CUDA toolkit is
# expected at /usr/local/cuda (nvcc compiles the kernels; no driver is needed to build).
#
#   bash scripts/deps.sh           the build: compilers, cmake, ninja, m4, cmocka, benchmark
#   bash scripts/deps.sh --test    also what scripts/test.sh needs beyond the build: clang with
#                                  its libFuzzer/sanitizer runtimes (scripts/fuzz.sh) and
#                                  abigail-tools (abidw/abidiff: the ABI check)
set -euo pipefail
packages=(cmake ninja-build m4 gcc g++ pkg-config libcmocka-dev libbenchmark-dev)
for arg in "$@"; do
  case "$arg" in
    --test) packages+=(clang libclang-rt-14-dev abigail-tools) ;;
    *) echo "usage: $0 [--test]" >&2; exit 2 ;;
  esac
done
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "installing: ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi
export PATH="/usr/local/cuda/bin:$PATH"
if ! command -v nvcc >/dev/null; then
  echo "error: nvcc not found: install the CUDA toolkit under /usr/local/cuda" >&2
  exit 1
fi
