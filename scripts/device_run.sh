#!/usr/bin/env bash
# Runs on the lent GPU machine over a carried install folder (.device/, made by
# scripts/device_pack.sh here): correctness, tuning, benches. Prints a short table last.
# Usage: bash scripts/device_run.sh [check] [tune] [verify] [bench] [gtest] [torch] [tests]
set -uo pipefail
cd "$(dirname "$0")/.."
D=$PWD/.device
export LD_LIBRARY_PATH=$D/lib:${LD_LIBRARY_PATH:-}
export PATH=$D/bin:$PATH
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
steps=" $* "
summary=$OUT/summary.txt
: >"$summary"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv | tee -a "$summary"
if [[ $steps == *" check "* ]]; then
  fusedops check >"$OUT/check.log" 2>&1
  echo "check rc=$? $(tail -1 "$OUT/check.log")" | tee -a "$summary"
  grep FAIL "$OUT/check.log" | head -20
fi
if [[ $steps == *" tests "* ]]; then
  for t in "$D"/tests/*; do
    timeout 300 "$t" >"$OUT/$(basename "$t").log" 2>&1
    echo "test $(basename "$t") rc=$? $(tail -1 "$OUT/$(basename "$t").log")" | tee -a "$summary"
  done
fi
if [[ $steps == *" tune "* ]]; then
  fusedops tune --out "$OUT/sm_90.tsv" ${TUNE_ARGS:-} 2>"$OUT/tune.log"
  echo "tune rc=$? $(wc -l <"$OUT/sm_90.tsv") lines" | tee -a "$summary"
  export FUSEDOPS_TUNING_FILE=$OUT/sm_90.tsv # the steps after this use the fresh winners
fi
if [[ $steps == *" verify "* ]]; then
  timeout 200 fusedops tune --verify --out "$OUT/verify.txt" 2>>"$OUT/tune.log"
  tail -1 "$OUT/verify.txt" | tee -a "$summary"
fi
if [[ $steps == *" bench "* ]]; then
  for dt in bf16 f32; do
    for shape in 4096x1024 8192x2048 4096x4096 8192x8192 32768x4096 2048x16384 1024x32768 1024x65536 1024x131072 32x1048576; do
      fusedops bench softmax --dtype $dt --shape $shape 2>&1 | tr '\n' ' ' | sed 's/  */ /g' | tee -a "$OUT/bench.txt"
      echo | tee -a "$OUT/bench.txt"
    done
  done
fi
if [[ $steps == *" gtest "* ]]; then
  "$D/bin/bench_softmax" --benchmark_out="$OUT/bench_softmax.json" --benchmark_out_format=json \
    --benchmark_min_time=0.05 >"$OUT/gbench.log" 2>&1
  echo "google bench rc=$?" | tee -a "$summary"
fi
if [[ $steps == *" torch "* ]]; then
  PYTHONUNBUFFERED=1 timeout 330 python3 bench/vs_torch.py --lib "$D/lib/libfusedops.so" --json "$OUT/vs_torch.json" \
    --out "$OUT" >"$OUT/vs_torch.log" 2>&1
  echo "vs_torch rc=$?" | tee -a "$summary"
  tail -45 "$OUT/vs_torch.log"
fi
echo "==== summary"
cat "$summary"
[[ $steps == *" bench "* ]] && sed -E 's/on NVIDIA [^:]*: //' "$OUT/bench.txt" | cut -c1-200
exit 0
