#!/usr/bin/env bash
# scratch: session 12 call 5 (deleted before finishing)
set -uo pipefail
D=$PWD/.device
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
export LD_LIBRARY_PATH=$D/lib:/usr/local/cuda/lib64
t0=$(date +%s); timeout 100 $D/tests/test_norm_gpu > $OUT/norm.log 2>&1
echo "norm gpu rc=$? $(tail -1 $OUT/norm.log) $(( $(date +%s)-t0 ))s"; grep -m3 FAIL $OUT/norm.log
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
(FUSEDOPS_TEST_MAX_ROWS=301 FUSEDOPS_TEST_VARIANT=_staged_ timeout 150 $cs --tool racecheck --error-exitcode 99 --report-api-errors no $D/tests/test_norm_gpu > $OUT/race.log 2>&1; echo "racecheck staged rc=$? $(grep -E 'passed,|RACECHECK SUMMARY' $OUT/race.log | tr '\n' ' ')" > $OUT/race.sum) &
for dt in bf16 f16 f32; do t0=$(date +%s)
  timeout 80 $D/bin/fusedops tune --op norm --dtype $dt --min-cols 12288 --out $OUT/norm_wide_$dt.tsv 2>>$OUT/tune.log
  echo "tune norm $dt wide rc=$? $(grep -vc '^arch' $OUT/norm_wide_$dt.tsv) lines $(( $(date +%s)-t0 ))s"
done
cat $OUT/norm_wide_*.tsv | grep -v '^arch' > $OUT/wide.tsv
export FUSEDOPS_TUNING_FILE=$OUT/wide.tsv
t0=$(date +%s)
PYTHONUNBUFFERED=1 timeout 200 python3 bench/vs_torch.py --lib $D/lib/libfusedops.so --dtypes bf16,f32 --ops layernorm,rmsnorm,residual_dropout_norm \
  --shapes 1024x16384,2048x16384,1024x32768,1024x65536,1024x131072 --json $OUT/vs.json --out $OUT/plots > $OUT/vs.log 2>&1
echo "vs_torch rc=$? $(( $(date +%s)-t0 ))s"
wait; cat $OUT/race.sum
grep -A40 "^op " $OUT/vs.log
grep -P "\t(1024x65536|1024x32768|1024x16384)\t" $OUT/wide.tsv | head -12
