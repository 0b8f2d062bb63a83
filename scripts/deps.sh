#!/usr/bin/env bash
# Installs the Debian packages the build and tests need, where missing. The CUDA toolkit is
# expected at /usr/local/cuda (nvcc compiles the kernels; no driver is needed to build).
set -euo pipefail
packages=(cmake ninja-build m4 gcc g++ pkg-config libcmocka-dev libbenchmark-dev)
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
