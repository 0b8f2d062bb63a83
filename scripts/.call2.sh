#!/usr/bin/env bash
# scratch: session 12 call 2 (deleted before finishing)
set -uo pipefail
D=$PWD/.device
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
export LD_LIBRARY_PATH=$D/lib:/usr/local/cuda/lib64
t0=$(date +%s)
timeout 170 $D/tests/test_norm_gpu > $OUT/norm.log 2>&1; echo "norm gpu rc=$? $(tail -1 $OUT/norm.log) $(( $(date +%s)-t0 ))s"
grep -m5 FAIL $OUT/norm.log
t0=$(date +%s)
PYTHONUNBUFFERED=1 timeout 330 python3 bench/vs_torch.py --lib $D/lib/libfusedops.so --ops softmax,layernorm,rmsnorm --dtypes bf16,f32 \
  --shapes 4096x1024,8192x2048,4096x4096,8192x8192,32768x4096,2048x16384,1024x16384,1024x32768,1024x65536,1024x131072 --json $OUT/vs.json --out $OUT > $OUT/vs.log 2>&1
echo "vs_torch rc=$? $(( $(date +%s)-t0 ))s"
tail -70 $OUT/vs.log
