#!/usr/bin/env bash
# scratch: session 12 call 6 (deleted before finishing)
set -uo pipefail
D=$PWD/.device
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
export LD_LIBRARY_PATH=$D/lib:/usr/local/cuda/lib64
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for t in softmax norm attention grouped_matmul stress; do
  t0=$(date +%s); timeout 150 $D/tests/test_${t}_gpu > $OUT/$t.log 2>&1
  echo "test_${t}_gpu rc=$? $(tail -1 $OUT/$t.log) $(( $(date +%s)-t0 ))s"; grep -m3 FAIL $OUT/$t.log
done
t0=$(date +%s); timeout 150 $D/bin/fusedops check --quick > $OUT/check.log 2>&1
echo "check --quick rc=$? $(tail -1 $OUT/check.log) $(( $(date +%s)-t0 ))s"; grep -m3 FAIL $OUT/check.log
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
t0=$(date +%s)
FUSEDOPS_TEST_VARIANT=_lean timeout 100 $cs --tool memcheck --error-exitcode 99 --report-api-errors no $D/tests/test_norm_gpu > $OUT/memcheck_lean.log 2>&1
echo "memcheck norm _lean rc=$? $(grep -E 'passed,|ERROR SUMMARY' $OUT/memcheck_lean.log | tr '\n' ' ') $(( $(date +%s)-t0 ))s"
t0=$(date +%s)
FUSEDOPS_TEST_VARIANT=_d128_m128_n128_s2_ws_ timeout 120 $cs --tool memcheck --error-exitcode 99 --report-api-errors no $D/tests/test_attention_gpu > $OUT/memcheck_ws.log 2>&1
echo "memcheck attention d128 ws rc=$? $(grep -E 'passed,|ERROR SUMMARY' $OUT/memcheck_ws.log | tr '\n' ' ') $(( $(date +%s)-t0 ))s"
