#!/usr/bin/env bash
# Call 3: G19 (lean epilogue, first product writes acc, 32-bit walk) tests; A/B old s4 / new s4 / new s3_o4.
cd "$(dirname "$0")/.."
NEW=$PWD/.device/lib; OLD=$PWD/.device/oldlib
B=.device/bin/fusedops
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader
LD_LIBRARY_PATH=$NEW timeout 300 .device/tests/test_grouped_matmul_gpu 2>&1 | tail -2
S4=grouped_matmul_bf16_m128_n256_s4_tma_sm90; O4=grouped_matmul_bf16_m128_n256_s3_o4_tma_sm90
run() { LD_LIBRARY_PATH=$1 $B bench grouped_matmul --dtype bf16 --shape $2 --variant $3 $4 2>&1 | grep -o "[0-9.]* TFLOP/s" | tail -1; }
for r in 1 2; do
 for sh in "8x16384x4096x14336" "8x16384x4096x14336 --b-layout nk" "128x32768x7168x2048" "64x16384x2048x1408" "8x512x4096x14336"; do
  set -- $sh; shape=$1; extra="${2:-} ${3:-}"
  a=$(run $OLD $shape $S4 "$extra"); b=$(run $NEW $shape $S4 "$extra"); c=$(run $NEW $shape $O4 "$extra")
  echo "r$r $sh | old s4 $a | new s4 $b | new s3_o4 $c"
 done
done | tee $OUT/ab.txt
a=$(run $OLD 8x16384x4096x14336 $S4 --bias); b=$(run $NEW 8x16384x4096x14336 $S4 --bias); c=$(run $NEW 8x16384x4096x14336 $O4 --bias)
echo "bias large | old s4 $a | new s4 $b | new s3_o4 $c" | tee -a $OUT/ab.txt
echo; cat $OUT/ab.txt
