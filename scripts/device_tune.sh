#!/usr/bin/env bash
# Re-tunes the row ops on the lent GPU (over a carried .device/, scripts/device_pack.sh):
# `fusedops tune` for softmax and norm per dtype, then the held-out check of the compiled
# table as it stands (the baseline; tune does not load what it writes), each bounded so that a slow dtype still
# leaves the others' lines. Writes $OUT/{verify_*_before.txt,softmax_*.tsv,norm_*.tsv,tune.log}
# and prints a short table last. Usage: bash scripts/device_tune.sh [baseline] [tune]
set -uo pipefail
cd "$(dirname "$0")/.."
export LD_LIBRARY_PATH=$PWD/.device/lib
F=.device/bin/fusedops
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
S=$OUT/summary.txt
steps=" ${*:-baseline tune} "
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee "$S"
stamp() { echo "$(date +%T) $*" | tee -a "$S"; }
if [[ $steps == *" tune "* ]]; then
  for dt in bf16 f16 f32; do
    timeout ${TUNE_TIMEOUT:-120} $F tune --op softmax --dtype $dt --out "$OUT/softmax_$dt.tsv" 2>>"$OUT/tune.log"
    stamp "tune softmax $dt rc=$? $(grep -vc '^arch' "$OUT/softmax_$dt.tsv") lines"
  done
  for dt in bf16 f16 f32; do
    timeout ${TUNE_TIMEOUT:-120} $F tune --op norm --min-cols 256 --dtype $dt --out "$OUT/norm_$dt.tsv" 2>>"$OUT/tune.log"
    stamp "tune norm $dt rc=$? $(grep -vc '^arch' "$OUT/norm_$dt.tsv") lines"
  done
fi
if [[ $steps == *" baseline "* ]]; then
  for op in softmax norm; do
    timeout ${VERIFY_TIMEOUT:-150} $F tune --verify --op $op --out "$OUT/verify_${op}_before.txt" 2>>"$OUT/tune.log"
    stamp "verify $op (before) rc=$? $(tail -2 "$OUT/verify_${op}_before.txt" | tr '\n' ' ')"
  done
fi
echo "---- summary"
cat "$S"
