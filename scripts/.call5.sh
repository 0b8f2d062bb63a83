#!/usr/bin/env bash
# Call 5: G20 (C's copies out evict-first; A's copies in evict-last) A/B: G19 / C / C+A libs;
# tests on C+A; f16 tune of the long-group buckets.
cd "$(dirname "$0")/.."
D=$PWD/.device; B=$D/bin/fusedops
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader
LD_LIBRARY_PATH=$D/libCA:$D/lib timeout 200 $D/tests/test_grouped_matmul_gpu 2>&1 | tail -1
run() { LD_LIBRARY_PATH=$D/$1:$D/lib $B bench grouped_matmul --dtype bf16 --shape $2 2>&1 | grep -o "[0-9.]* TFLOP/s" | tail -1; }
for r in 1 2; do for sh in 8x16384x4096x14336 128x32768x7168x2048 64x16384x2048x1408 8x512x4096x14336; do
  echo "r$r $sh | G19 $(run libG19 $sh) | C $(run lib $sh) | CA $(run libCA $sh)"; done; done | tee $OUT/ab.txt
for l in libG19 lib libCA; do
  echo "$l $(LD_LIBRARY_PATH=$D/$l:$D/lib ncu --metrics dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum,gpu__time_duration.sum -k regex:grouped_matmul --launch-skip 3 --launch-count 1 $B bench grouped_matmul --dtype bf16 --shape 8x16384x4096x14336 --iters 5 2>&1 | grep -E "dram__|lts__|gpu__time" | awk '{print $1, $(NF-1), $NF}' | tr '\n' ' ')"
done | tee -a $OUT/ab.txt
LD_LIBRARY_PATH=$D/lib timeout 200 $B tune --op grouped_matmul --dtype f16 --min-rows 1024 --min-cols 8192 --out $OUT/tune_f16.tsv 2>&1 | grep "tune:" | tail -6
grep -v "^#" $OUT/tune_f16.tsv | cut -f3-8
echo; cat $OUT/ab.txt
