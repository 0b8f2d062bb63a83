export LD_LIBRARY_PATH=$PWD/.device/lib; F=$PWD/.device/bin/fusedops
ok=1
for t in test_softmax_gpu test_norm_gpu; do timeout 120 .device/tests/$t > /tmp/$t.log 2>&1; rc=$?; echo "$t rc=$rc $(tail -1 /tmp/$t.log)"; [ $rc = 0 ] || ok=0; done
timeout 100 $F check --quick > /tmp/check.log 2>&1; rc=$?; echo "check rc=$rc $(tail -1 /tmp/check.log)"; [ $rc = 0 ] || ok=0
for v in "softmax bf16 16384x3072 softmax_bf16_r1_n4096_w8_v1" "softmax bf16 16384x4096 softmax_bf16_r1_n4096_w8_v1" "softmax bf16 15069x3362 softmax_bf16_r1_n4096_w8_v1" "softmax bf16 15069x3362 softmax_bf16_loop_n1024_w4_v1" "layernorm bf16 8499x1820 norm_bf16_r1_n2048_w4_v1_d0" "layernorm bf16 8499x1820 norm_bf16_loop_n1024_w4_v1_d0" "softmax f32 16384x3072 softmax_f32_r1_n4096_w8_v1"; do set -- $v; echo "$v: $($F bench $1 --dtype $2 --shape $3 --variant $4 2>&1 | tail -1)"; done
if [ $ok = 1 ]; then TUNE_TIMEOUT=190 TUNE_JOBS="softmax:;norm:" bash scripts/device_tune.sh tune 2>&1 | tail -7; fi
