#!/usr/bin/env bash
# scratch: session 12 call 3 (deleted before finishing)
set -uo pipefail
D=$PWD/.device
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
export LD_LIBRARY_PATH=$D/lib:/usr/local/cuda/lib64
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for t in softmax norm; do
  t0=$(date +%s); timeout 100 $D/tests/test_${t}_gpu > $OUT/$t.log 2>&1
  echo "$t gpu rc=$? $(tail -1 $OUT/$t.log) $(( $(date +%s)-t0 ))s"; grep -m3 FAIL $OUT/$t.log
done
for job in "softmax bf16" "softmax f16" "softmax f32" "norm bf16"; do
  set -- $job; t0=$(date +%s)
  timeout 115 $D/bin/fusedops tune --op $1 --dtype $2 --out $OUT/${1}_$2.tsv 2>>$OUT/tune.log
  echo "tune $1 $2 rc=$? $(grep -vc '^arch' $OUT/${1}_$2.tsv) lines $(( $(date +%s)-t0 ))s"
done
for s in 4096x1024 8192x8192; do grep -P "\t$s\t" $OUT/softmax_bf16.tsv $OUT/softmax_f32.tsv $OUT/norm_bf16.tsv | head -6; done
