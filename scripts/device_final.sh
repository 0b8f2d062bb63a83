#!/usr/bin/env bash
# One device call for the end of a session: every GPU test, the attention side-by-side with
# SDPA, and the bf16 row-op variants this session added, by name and as dispatched. Keeps the
# files that matter under $OUT (at most 8 come back) and prints a short table last.
set -uo pipefail
cd "$(dirname "$0")/.."
export LD_LIBRARY_PATH=$PWD/.device/lib
B=.device/bin
S=$OUT/summary.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee "$S"
for t in .device/tests/test_*gpu*; do
  timeout ${TEST_TIMEOUT:-200} "$t" >"$OUT/tests.log.tmp" 2>&1
  echo "test $(basename "$t") rc=$? $(tail -1 "$OUT/tests.log.tmp")" | tee -a "$S"
  grep FAIL "$OUT/tests.log.tmp" | head -5 | tee -a "$S"
  cat "$OUT/tests.log.tmp" >>"$OUT/tests.log"
done
rm -f "$OUT/tests.log.tmp"
bench() { # op dtype shape [variant]
  timeout 30 $B/fusedops bench "$1" --dtype "$2" --shape "$3" ${4:+--variant $4} 2>&1 | tr '\n' ' ' |
    sed -E 's/on NVIDIA [^:]*: //; s/  +/ /g' | tee -a "$OUT/bench.txt"
  echo | tee -a "$OUT/bench.txt"
}
for s in 8192x8192 32768x4096; do
  for v in "" softmax_bf16_pipe_n8192_w16_v8_s2_sm90 softmax_bf16_pipe_n8192_w16_v8_s3_sm90 \
           softmax_bf16_pipe_n4096_w8_v8_s2_sm90 softmax_bf16_pipe_n4096_w8_v8_s3_sm90; do
    bench softmax bf16 $s $v
  done
  for op in layernorm rmsnorm; do
    for v in "" norm_bf16_pipe_n4096_w8_v8_s2_d0_sm90 norm_bf16_pipe_n8192_w16_v8_s2_d0_sm90; do
      bench $op bf16 $s $v
    done
    bench $op f32 $s
  done
done
PYTHONUNBUFFERED=1 timeout 200 python3 bench/vs_torch.py --ops attention --lib .device/lib/libfusedops.so \
  --json "$OUT/vs_torch_attention.json" --out "$OUT" >"$OUT/vs_torch_attention.log" 2>&1
echo "vs_torch attention rc=$?" | tee -a "$S"
echo "==== summary"
cat "$S"
sed -n '/^attention: TFLOP/,$p' "$OUT/vs_torch_attention.log" | cut -c1-160
cut -c1-160 "$OUT/bench.txt"
