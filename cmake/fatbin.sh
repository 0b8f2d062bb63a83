#!/usr/bin/env bash
# The build's nvcc step (CMakeLists.txt, "fatbinary"): compiles the generated kernels into OUT,
# or copies the fatbinary of another build directory (REUSE, FUSEDOPS_KERNELS_FROM) where that
# one was compiled from the same inputs: the same generated sources, templates, nvcc command
# and nvcc. The CI's sanitizer and fuzzing builds differ from the main build in host code
# alone, and the variants' compile is most of a build (docs/tuning.md, "Build cost").
#
#   fatbin.sh OUT GEN_DIR TEMPLATES_DIR REUSE -- NVCC ARG...     (REUSE: a build dir, or -)
#
# Beside OUT it writes OUT.inputs: what it was compiled from (the nvcc command without the
# paths that differ between build directories, and digests of the sources it reads). Where it
# compiles, nvcc's messages also go to OUT.log, and a kernel whose wgmma products ptxas
# serialized (C7511) fails the step (docs/reliability.md).
set -euo pipefail
out=$1 gen=$2 templates=$3 reuse=$4
[ "$reuse" = - ] && reuse=""
shift 4
[ "${1:-}" = -- ] && shift
nvcc=$1
shift
inputs() {
  printf 'nvcc: %s\n' "$("$nvcc" --version | tail -n 1)"
  printf 'args: %s\n' "$*"
  (cd "$gen" && sha256sum -- *.cu)
  (cd "$templates" && sha256sum -- *)
}
# the command's arguments but the generated source (its path is the build directory's)
args=()
for a in "$@"; do [ "$a" = "$gen/kernels.cu" ] || args+=("$a"); done
inputs "${args[@]}" >"$out.inputs.new"
if [ -n "$reuse" ] && [ -f "$reuse/kernels.fatbin" ] && [ -f "$reuse/kernels.fatbin.inputs" ] &&
  cmp -s "$reuse/kernels.fatbin.inputs" "$out.inputs.new"; then
  cp "$reuse/kernels.fatbin" "$out"
  echo "fatbin.sh: the kernels of $reuse (same inputs)"
else
  [ -n "$reuse" ] && echo "fatbin.sh: $reuse has no fatbinary of the same inputs: compiling"
  log="$out.log"
  status=0
  # (under pipefail the pipeline's status is nvcc's where nvcc fails)
  "$nvcc" "$@" -o "$out" 2>&1 | tee "$log" >&2 || status=$?
  [ "$status" = 0 ] || exit "$status"
  # ptxas serializes a kernel's wgmma products where it runs short of registers for their
  # pipeline (info C7511, not an error): a kernel that then runs 10% slower (perf-notes G31)
  if grep -q 'C7511' "$log"; then
    echo "fatbin.sh: ptxas serialized the wgmma products of a kernel (C7511 above): fix its" \
      "registers before shipping it" >&2
    rm -f "$out"
    exit 1
  fi
fi
mv "$out.inputs.new" "$out.inputs"
