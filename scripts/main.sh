#!/usr/bin/env bash
# The main job: build, then on a GPU check every variant and run the C demo with GB/s;
# without one, list the variants and say plainly that no GPU is here.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
build="${BUILD_DIR:-build}"
"$build/fusedops" version
set +e
"$build/fusedops" check --quick
rc=$?
set -e
if [ $rc -eq 3 ]; then
  echo
  echo "No GPU here: the library is built; these are its variants (fusedops list):"
  "$build/fusedops" list
  echo
  "$build/fusedops" explain softmax --dtype bf16 --shape 4096x4096 --arch sm_90
  exit 0
fi
[ $rc -eq 0 ] || exit $rc
"$build/example_softmax"
for dt in bf16 f32; do
  "$build/fusedops" bench softmax --dtype $dt --shape 8192x8192
done
