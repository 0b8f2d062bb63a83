#!/usr/bin/env bash
# One device call for the end of a session: GPU tests, norm benches, the side-by-side with
# PyTorch, the regression gate, compute-sanitizer on the norm test, the softmax load-hint
# variants; keeps the files that matter under $OUT (at most 8 come back) and prints a summary.
set -uo pipefail
cd "$(dirname "$0")/.."
export BENCH_OPS="layernorm rmsnorm residual_dropout residual_dropout_norm"
export BENCH_SHAPES="4096x1024 8192x2048 4096x4096 8192x8192 32768x4096 1024x65536"
export TORCH_TIMEOUT=160
export TORCH_ARGS="--ops layernorm,rmsnorm,residual_dropout,residual_dropout_norm --shapes 4096x1024,8192x2048,4096x4096,8192x8192,32768x4096,1024x16384"
export REGRESS_FILTER="softmax/(bf16|f32)/(8192x8192|4096x4096)/"
export REGRESS_NORM_FILTER="(layernorm|rmsnorm)/(bf16|f32)/8192x8192/"
bash scripts/device_run.sh tests bench torch pytest regress >"$OUT/main.log" 2>&1
cp "$OUT/summary.txt" "$OUT/summary_main.txt"
export LD_LIBRARY_PATH=$PWD/.device/lib
for s in 8192x8192 32768x4096; do
  for v in softmax_bf16_r1_n4096_w8_v8 softmax_bf16_r1_n4096_w8_v8_nc softmax_bf16_r1_n8192_w8_v8 softmax_bf16_r1_n8192_w8_v8_nc softmax_bf16_r1_n8192_w16_v8_nc; do
    timeout 20 .device/bin/fusedops bench softmax --dtype bf16 --shape $s --variant $v 2>&1 | tr '\n' ' ' | sed -E 's/on NVIDIA [^:]*: //' >>"$OUT/summary_main.txt"
    echo >>"$OUT/summary_main.txt"
  done
done
(cd "$OUT" && rm -f *.log summary.txt && rm -f *_f32.png residual_dropout_bf16.png rmsnorm_bf16.png)
# Last, as it may run into the call's limit: its files stay out of $OUT.
FUSEDOPS_TEST_VARIANT=bf16_r1_n4096_w8_v8 SAN_TESTS=test_norm_gpu SAN_TIMEOUT=40 OUT=/tmp/san \
  bash scripts/device_run.sh sanitize >/dev/null 2>&1
grep -E "^sanitize" /tmp/san/summary.txt >>"$OUT/summary_main.txt"
ls "$OUT"
sed -E 's/on NVIDIA [^:]*: //' "$OUT/summary_main.txt" | cut -c1-150
