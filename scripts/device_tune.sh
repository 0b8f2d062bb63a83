#!/usr/bin/env bash
# Re-tunes the row ops on the lent GPU (over a carried .device/, scripts/device_pack.sh), in
# parts that fit a device call. Steps, in this order:
#   tune      `fusedops tune` runs (TUNE_JOBS, below; default softmax, and norm with cols >=
#             256), per dtype, each bounded by TUNE_TIMEOUT seconds so that a slow dtype still
#             leaves the others' lines: OP_DTYPE_RUN.tsv
#   verify    the held-out check (`fusedops tune --verify`) of softmax and norm with the
#             compiled table plus, through FUSEDOPS_TUNING_FILE, what this call's tune wrote
#             (rest.tsv): verify_{softmax,norm}.txt
#   baseline  the same check of the compiled table alone: verify_{softmax,norm}_before.txt
#   tests     the GPU tests (.device/tests) and `fusedops check --quick`, each bounded by
#             TEST_TIMEOUT: tests.log
#   racecheck compute-sanitizer racecheck over RACECHECK_GROUPS ("TEST:FILTER ...", each a
#             FUSEDOPS_TEST_VARIANT filter), side by side, each bounded by SAN_TIMEOUT, at
#             FUSEDOPS_TEST_MAX_ROWS=301: san_TEST_N.log
#   torch     the torch.library ops' tests (per-call overhead included): pytest.log
# What the steps write is packed into $OUT/tune.tgz after each one (few files come back from
# a call, and a call cut short keeps what was done); a short table is printed last.
# Usage: bash scripts/device_tune.sh [tune] [verify] [baseline] [tests] [racecheck] [torch]
set -uo pipefail
cd "$(dirname "$0")/.."
export LD_LIBRARY_PATH=$PWD/.device/lib
F=$PWD/.device/bin/fusedops
OUT=${OUT:-/tmp/out}
W=$(mktemp -d)
S=$OUT/summary.txt
steps=" ${*:-tune verify} "
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee "$S"
stamp() { echo "$(date +%T) $*" | tee -a "$S"; (cd "$W" && tar czf "$OUT/tune.tgz" .); }
if [[ $steps == *" tune "* ]]; then
  # TUNE_JOBS: runs separated by ';', each "OP: options" (tune's --min-rows, --max-rows,
  # --min-cols, --max-cols), each run for every dtype
  IFS=';' read -ra jobs <<<"${TUNE_JOBS:-softmax:;norm: --min-cols 256}"
  for j in "${!jobs[@]}"; do
    op=${jobs[$j]%%:*} args=${jobs[$j]#*:}
    op=${op// /}
    for dt in bf16 f16 f32; do
      timeout ${TUNE_TIMEOUT:-120} $F tune --op $op --dtype $dt $args --out "$W/${op}_${dt}_$j.tsv" 2>>"$W/tune.log"
      stamp "tune $op $dt$args rc=$? $(grep -vc '^arch' "$W/${op}_${dt}_$j.tsv") lines"
    done
  done
  cat "$W"/*_*_*.tsv | grep -v '^arch' >"$W/rest.tsv"
fi
verify() { # suffix, then the environment for fusedops
  for op in softmax norm; do
    env "${@:2}" timeout ${VERIFY_TIMEOUT:-170} $F tune --verify --op $op --out "$W/verify_$op$1.txt" 2>>"$W/tune.log"
    stamp "verify $op$1 rc=$? $(tail -2 "$W/verify_$op$1.txt" | tr '\n' ' ')"
  done
}
[[ $steps == *" verify "* ]] && verify "" FUSEDOPS_TUNING_FILE=$([[ -s $W/rest.tsv ]] && echo "$W/rest.tsv")
[[ $steps == *" baseline "* ]] && verify _before FUSEDOPS_TUNING_FILE=
if [[ $steps == *" tests "* ]]; then
  for t in .device/tests/test_*; do
    timeout ${TEST_TIMEOUT:-150} "$t" >"$W/test.tmp" 2>&1
    stamp "$(basename "$t") rc=$? $(tail -1 "$W/test.tmp")"
    cat "$W/test.tmp" >>"$W/tests.log"
  done
  timeout ${TEST_TIMEOUT:-150} $F check --quick >"$W/check.log" 2>&1
  stamp "check --quick rc=$? $(tail -1 "$W/check.log")"
fi
if [[ $steps == *" racecheck "* ]]; then
  cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  n=0
  for g in ${RACECHECK_GROUPS:-}; do
    n=$((n + 1))
    (FUSEDOPS_TEST_MAX_ROWS=301 FUSEDOPS_TEST_VARIANT="${g#*:}" timeout ${SAN_TIMEOUT:-150} "$cs" \
      --tool racecheck --error-exitcode 99 --report-api-errors no .device/tests/${g%%:*} \
      >"$W/san_${g%%:*}_$n.log" 2>&1
     echo "racecheck $g rc=$? $(grep -E 'passed,|RACECHECK SUMMARY' "$W/san_${g%%:*}_$n.log" | tr '\n' ' ')" >"$W/san_$n.sum") &
  done
  wait
  for f in "$W"/san_*.sum; do [[ -e $f ]] && stamp "$(cat "$f")"; done
fi
if [[ $steps == *" torch "* ]]; then
  FUSEDOPS_LIBRARY=$PWD/.device/lib/libfusedops.so PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 \
    timeout ${TEST_TIMEOUT:-150} python3 tests/python/run_gpu.py tests/python/test_torch_ops.py >"$W/pytest.log" 2>&1
  stamp "torch ops rc=$? $(grep -E '^(Ran|OK|FAILED)' "$W/pytest.log" | tr '\n' ' ') $(grep -E 'per call' "$W/pytest.log" | head -3 | tr '\n' ' ')"
fi
echo "---- summary"
cat "$S"
