#!/usr/bin/env bash
# Call 2: ncu source profile of s4 and s3_o4 on the large shape.
cd "$(dirname "$0")/.."
export LD_LIBRARY_PATH=$PWD/.device/lib:$LD_LIBRARY_PATH
B=.device/bin/fusedops
for v in grouped_matmul_bf16_m128_n256_s4_tma_sm90 grouped_matmul_bf16_m128_n256_s3_o4_tma_sm90; do
 ncu --section WarpStateStats --section SourceCounters --section SpeedOfLight -k regex:$v --launch-skip 5 --launch-count 1 -o $OUT/rep_$v $B bench grouped_matmul --dtype bf16 --shape 8x16384x4096x14336 --variant $v 2>&1 | tail -2
 ncu -i $OUT/rep_$v.ncu-rep --page source --csv --print-source sass 2>/dev/null | gzip > $OUT/src_$v.csv.gz
 ncu -i $OUT/rep_$v.ncu-rep --page details --csv 2>/dev/null > $OUT/det_$v.csv
 rm -f $OUT/rep_$v.ncu-rep
done
