#!/usr/bin/env bash
# scratch: session 12 call 1 (deleted before finishing)
set -uo pipefail
D=$PWD/.device
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
A="$D/lib:/usr/local/cuda/lib64"; B="$D/libB:/usr/local/cuda/lib64"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
export LD_LIBRARY_PATH=$A
t0=$(date +%s)
FUSEDOPS_TEST_VARIANT=lean timeout 120 $D/tests/test_norm_gpu > $OUT/norm_lean.log 2>&1; echo "norm lean rc=$? $(tail -1 $OUT/norm_lean.log) $(( $(date +%s)-t0 ))s"
t0=$(date +%s)
timeout 200 $D/tests/test_softmax_gpu > $OUT/softmax.log 2>&1; echo "softmax gpu rc=$? $(tail -1 $OUT/softmax.log) $(( $(date +%s)-t0 ))s"
grep -m5 FAIL $OUT/softmax.log $OUT/norm_lean.log
b() { # lib op dtype shape [variant]
  local lib=$1 op=$2 dt=$3 sh=$4 v=${5:-}
  LD_LIBRARY_PATH=$lib $D/bin/fusedops bench $op --dtype $dt --shape $sh ${v:+--variant $v} 2>&1 | grep -Eo "[0-9.]+ us|[0-9.]+ GB/s" | tr '\n' ' '
}
echo "== A/B dispatched (new | old), 2 rounds"
for r in 1 2; do
for c in "softmax bf16 8192x8192" "softmax bf16 2048x16384" "softmax bf16 32768x4096" "softmax f32 4096x1024" "softmax f32 8192x2048" "softmax f32 1024x32768" "log_softmax bf16 8192x8192" \
         "layernorm bf16 8192x8192" "layernorm bf16 32768x4096" "layernorm bf16 4096x4096" "layernorm bf16 1024x16384" "layernorm f32 8192x8192" "layernorm f32 4096x4096" "layernorm f32 8192x2048" \
         "rmsnorm bf16 8192x8192" "rmsnorm bf16 32768x4096" "rmsnorm bf16 1024x16384" "rmsnorm f32 8192x8192" "rmsnorm f32 32768x4096" "rmsnorm f32 1024x16384"; do
  set -- $c
  echo "$r $1 $2 $3 | new $(b $A $1 $2 $3) | old $(b $B $1 $2 $3)"
done; done
echo "== forced softmax variants (new | old)"
for v in softmax_bf16_r1_n8192_w16_v8 softmax_bf16_r1_n8192_w8_v8 softmax_bf16_r1_n8192_w8_v8_nc softmax_bf16_r1_n8192_w16_v8_nc softmax_bf16_r1_n8192_w32_v8; do
  echo "$v 8192x8192 | new $(b $A softmax bf16 8192x8192 $v) | old $(b $B softmax bf16 8192x8192 $v)"
done
for v in softmax_bf16_r1_n16384_w16_v8 softmax_bf16_r1_n16384_w32_v8; do
  echo "$v 2048x16384 | new $(b $A softmax bf16 2048x16384 $v) | old $(b $B softmax bf16 2048x16384 $v)"
done
for v in softmax_f32_r1_n1024_w4_v4 softmax_f32_persistent_n1024_w2_v4 softmax_f32_persistent_n1024_w4_v4; do
  echo "$v 4096x1024 | new $(b $A softmax f32 4096x1024 $v)"
done
LD_LIBRARY_PATH=$A $D/bin/fusedops explain softmax --dtype f32 --shape 4096x1024 | grep -E "variant|why"
