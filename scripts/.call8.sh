#!/usr/bin/env bash
# scratch: session 12 call 8 (deleted before finishing)
set -uo pipefail
D=$PWD/.device
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
export LD_LIBRARY_PATH=$D/lib:/usr/local/cuda/lib64
t0=$(date +%s); FUSEDOPS_TEST_VARIANT=_lean timeout 60 $D/tests/test_norm_gpu > $OUT/lean.log 2>&1
echo "norm lean rc=$? $(tail -1 $OUT/lean.log) $(( $(date +%s)-t0 ))s"; grep -m3 FAIL $OUT/lean.log
b() { $D/bin/fusedops bench $1 --dtype $2 --shape $3 ${4:+--variant $4} 2>&1 | grep -Eo "[0-9.]+ us|[0-9.]+ GB/s" | head -1; }
for r in 1 2; do for op in layernorm rmsnorm; do for dt in bf16 f32; do for sh in 4096x1024 16384x1024; do
  v=$([ $dt = f32 ] && echo norm_f32_r4_n1024_w4_v4_d0 || echo norm_bf16_r4_n1024_w4_v8_d0)
  echo "$r $op $dt $sh | dispatched(lean) $(b $op $dt $sh) | general $(b $op $dt $sh $v) | lean $(b $op $dt $sh ${v}_lean) | r8 lean $(b $op $dt $sh ${v/r4_n1024_w4/r8_n1024_w8}_lean)"
done; done; done; done
PYTHONUNBUFFERED=1 timeout 120 python3 bench/vs_torch.py --lib $D/lib/libfusedops.so --dtypes bf16,f32 --ops layernorm,rmsnorm --shapes 4096x1024,16384x1024 --json $OUT/vs.json --out $OUT/plots > $OUT/vs.log 2>&1
echo "vs_torch rc=$?"; grep -A12 "^op " $OUT/vs.log
