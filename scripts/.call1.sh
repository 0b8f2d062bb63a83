#!/usr/bin/env bash
# Call 1: s3_o4 correctness and A/B against s4; ncu source profile of both on the large shape.
cd "$(dirname "$0")/.."
export LD_LIBRARY_PATH=$PWD/.device/lib:$LD_LIBRARY_PATH
B=.device/bin/fusedops
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader
FUSEDOPS_TEST_VARIANT='*_o4_*' .device/tests/test_grouped_matmul_gpu 2>&1 | tail -3
S4=grouped_matmul_bf16_m128_n256_s4_tma_sm90; O4=grouped_matmul_bf16_m128_n256_s3_o4_tma_sm90
for r in 1 2; do
 for sh in 8x16384x4096x14336 128x32768x7168x2048 64x16384x2048x1408 8x512x4096x14336; do
  for v in $S4 $O4; do
   t=$($B bench grouped_matmul --dtype bf16 --shape $sh --variant $v 2>&1 | grep -i "tflop" | tail -1)
   echo "r$r $sh $v :: $t"
  done
 done
done | tee $OUT/ab.txt
for v in $S4 $O4; do
 ncu --section WarpStateStats --section SourceCounters -k regex:grouped_matmul_ws --launch-skip 5 --launch-count 1 -o $OUT/rep_$v $B bench grouped_matmul --dtype bf16 --shape 8x16384x4096x14336 --variant $v > /dev/null 2>&1
 ncu -i $OUT/rep_$v.ncu-rep --page source --csv --print-source sass 2>/dev/null | gzip > $OUT/src_$v.csv.gz
 ncu -i $OUT/rep_$v.ncu-rep --page details --csv 2>/dev/null | grep -i "Duration\|Warp Cycles\|Issued" | head -8
 rm -f $OUT/rep_$v.ncu-rep
done
echo; cat $OUT/ab.txt | sed 's/grouped_matmul_bf16_//'
