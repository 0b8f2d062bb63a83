#!/usr/bin/env bash
# scratch: session 12 call 4 (deleted before finishing)
set -uo pipefail
D=$PWD/.device
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
export LD_LIBRARY_PATH=$D/lib:/usr/local/cuda/lib64
for job in "norm f16" "norm f32"; do
  set -- $job; t0=$(date +%s)
  timeout 115 $D/bin/fusedops tune --op $1 --dtype $2 --out $OUT/${1}_$2.tsv 2>>$OUT/tune.log
  echo "tune $1 $2 rc=$? $(grep -vc '^arch' $OUT/${1}_$2.tsv) lines $(( $(date +%s)-t0 ))s"
done
cat $D/tuned/*.tsv $OUT/norm_f16.tsv $OUT/norm_f32.tsv | grep -v '^arch' > $OUT/rest.tsv
export FUSEDOPS_TUNING_FILE=$OUT/rest.tsv
echo "rest.tsv $(wc -l < $OUT/rest.tsv) lines"
t0=$(date +%s)
PYTHONUNBUFFERED=1 timeout 300 python3 bench/vs_torch.py --lib $D/lib/libfusedops.so --dtypes bf16,f32 \
  --shapes 4096x1024,8192x2048,4096x4096,8192x8192,32768x4096,2048x16384,1024x16384,1024x32768,1024x65536,1024x131072 --json $OUT/vs.json --out $OUT/plots > $OUT/vs.log 2>&1
echo "vs_torch rc=$? $(( $(date +%s)-t0 ))s"
t0=$(date +%s)
PYTHONUNBUFFERED=1 timeout 100 python3 bench/vs_torch.py --lib $D/lib/libfusedops.so --dtypes bf16,f32 --ops softmax,layernorm,rmsnorm --peer-outputs recycle \
  --shapes 4096x1024,8192x2048,8192x8192 --json $OUT/vs_recycle.json --out $OUT/plots2 > $OUT/vs_recycle.log 2>&1
echo "vs_torch recycle rc=$? $(( $(date +%s)-t0 ))s"
grep -A200 "^op " $OUT/vs.log | head -120
grep -A40 "^op " $OUT/vs_recycle.log
