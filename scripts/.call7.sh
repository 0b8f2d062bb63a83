#!/usr/bin/env bash
# scratch: session 12 call 7 (deleted before finishing)
set -uo pipefail
D=$PWD/.device
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
export LD_LIBRARY_PATH=$D/lib:/usr/local/cuda/lib64
t0=$(date +%s)
PYTHONUNBUFFERED=1 timeout 420 python3 bench/vs_torch.py --lib $D/lib/libfusedops.so --dtypes bf16,f32 --json $OUT/vs.json --out $OUT/plots > $OUT/vs.log 2>&1
echo "vs_torch rc=$? $(( $(date +%s)-t0 ))s"
grep -A120 "^op " $OUT/vs.log
