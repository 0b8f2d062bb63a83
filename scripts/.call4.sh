#!/usr/bin/env bash
# Call 4: tune bf16 grouped_matmul (rows >= 1024 a group, n >= 8192) with G19's kernels; vs_torch
# grouped_matmul on that table; f16 large s4 / s3_o4.
cd "$(dirname "$0")/.."
export LD_LIBRARY_PATH=$PWD/.device/lib:$LD_LIBRARY_PATH
B=.device/bin/fusedops
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader
timeout 300 $B tune --op grouped_matmul --dtype bf16 --min-rows 1024 --min-cols 8192 --out $OUT/tune_bf16.tsv 2>&1 | grep "tune:" | tail -8
grep -v "^#" $OUT/tune_bf16.tsv | cut -f3-8
for s in 8x16384x4096x14336 8x512x4096x14336 128x32768x7168x2048 64x16384x2048x1408; do
  FUSEDOPS_TUNING_FILE=$OUT/tune_bf16.tsv $B explain grouped_matmul --dtype bf16 --shape $s | grep "variant:"; done
FUSEDOPS_TUNING_FILE=$OUT/tune_bf16.tsv timeout 280 python3 bench/vs_torch.py --lib .device/lib/libfusedops.so --ops grouped_matmul --clocks --no-compile --no-triton --out $OUT --json $OUT/vs.json > $OUT/vs.log 2>&1; echo vs rc=$?
S4=grouped_matmul_f16_m128_n256_s4_tma_sm90; O4=grouped_matmul_f16_m128_n256_s3_o4_tma_sm90
for r in 1 2; do for v in $S4 $O4; do echo "f16 large $v $($B bench grouped_matmul --dtype f16 --shape 8x16384x4096x14336 --variant $v | grep -o '[0-9.]* TFLOP/s')"; done; done
tail -30 $OUT/vs.log
