#!/usr/bin/env bash
# End-of-session device calls. Phase 1: every GPU test, the examples, the torch-op tests, the
# bf16 row-op variants by name and as dispatched, and the attention side-by-side with SDPA.
# Phase 2: the row ops beside torch eager / torch.compile / Triton, and compute-sanitizer over
# the attention test. Keeps the files that matter under $OUT and prints a short table last.
set -uo pipefail
cd "$(dirname "$0")/.."
export LD_LIBRARY_PATH=$PWD/.device/lib
B=.device/bin
S=$OUT/summary.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee "$S"
bench() { # op dtype shape [variant]
  timeout 30 $B/fusedops bench "$1" --dtype "$2" --shape "$3" ${4:+--variant $4} 2>&1 | tr '\n' ' ' |
    sed -E 's/on NVIDIA [^:]*: //; s/  +/ /g' | tee -a "$OUT/bench.txt"
  echo | tee -a "$OUT/bench.txt"
}
run_test() { # test or example path: its last line (and failures) into the summary
  timeout ${TEST_TIMEOUT:-200} "$1" >"$OUT/tests.log.tmp" 2>&1
  echo "$(basename "$1") rc=$? $(tail -1 "$OUT/tests.log.tmp")" | tee -a "$S"
  grep -E "FAIL|not ok" "$OUT/tests.log.tmp" | head -8 | tee -a "$S"
  cat "$OUT/tests.log.tmp" >>"$OUT/tests.log"
  rm -f "$OUT/tests.log.tmp"
}
run_torch_ops() { # the torch.library ops' tests (per-call overhead included)
  FUSEDOPS_LIBRARY=$PWD/.device/lib/libfusedops.so PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 timeout 200 \
    python3 tests/python/run_gpu.py tests/python/test_torch_ops.py >"$OUT/pytest.log" 2>&1
  echo "torch ops test rc=$? $(grep -E '^(Ran|OK|FAILED)' "$OUT/pytest.log" | tr '\n' ' ')" | tee -a "$S"
  grep -E "^(FAIL|ERROR):|per call" "$OUT/pytest.log" | head -8 | tee -a "$S"
}
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
sanitize() { # name tool test [variant filter]: log to san_NAME.log, a line to san_NAME.sum
  # SAN_MAX_ROWS, when set, is the tests' FUSEDOPS_TEST_MAX_ROWS (unset or empty: no cap).
  FUSEDOPS_TEST_VARIANT=${4:-} FUSEDOPS_TEST_MAX_ROWS=${SAN_MAX_ROWS:-} timeout ${SAN_TIMEOUT:-540} \
    "$cs" --tool $2 --error-exitcode 99 --report-api-errors no .device/tests/$3 >"$OUT/san_$1.log" 2>&1
  local rc=$? log=$OUT/san_$1.log
  # The test's last line ("N passed, M failed ..." or "N cases, M failures") and the tool's
  # summary, each named when missing: a run cut short (rc 124) has neither.
  local result summary
  result=$(grep -E '^[0-9]+ (passed|cases), [0-9]+ fail' "$log" | tail -1)
  summary=$(grep -E '(ERROR|RACECHECK) SUMMARY' "$log" | tail -1 | sed -E 's/^=+ *//')
  echo "sanitize $2 $3 ${4:-}${SAN_MAX_ROWS:+ max_rows=$SAN_MAX_ROWS} rc=$rc: ${result:-no final line} | ${summary:-no sanitizer summary}" >"$OUT/san_$1.sum"
}
sanitize_report() { # after the sanitize runs: their lines into the summary, the logs packed
  cat "$OUT"/san_*.sum | tee -a "$S"
  (cd "$OUT" && rm -f san_*.sum && for f in san_*.log; do tail -c 20000 "$f" >"$f.tail" && mv "$f.tail" "$f"; done &&
    tar czf san_logs.tgz san_*.log && rm -f san_*.log) # (few files come back from a call)
}
if [[ ${1:-1} == 1 ]]; then
  for t in .device/tests/test_*gpu* .device/bin/example_*; do run_test "$t"; done
  run_torch_ops
  for s in 8192x8192 32768x4096; do
    for v in "" softmax_bf16_pipe_n8192_w16_v8_s2_sm90 softmax_bf16_pipe_n4096_w8_v8_s3_sm90; do
      bench softmax bf16 $s $v
    done
    bench softmax f32 $s
    for op in layernorm rmsnorm residual_dropout residual_dropout_norm; do
      bench $op bf16 $s
      bench $op f32 $s
    done
    bench layernorm bf16 $s norm_bf16_pipe_n8192_w16_v8_s2_d0_sm90
    bench layernorm bf16 $s norm_bf16_pipe_n4096_w8_v8_s2_d0_sm90
  done
  PYTHONUNBUFFERED=1 timeout 200 python3 bench/vs_torch.py --ops attention --lib .device/lib/libfusedops.so \
    --json "$OUT/vs_torch_attention.json" --out "$OUT" >"$OUT/vs_torch_attention.log" 2>&1
  echo "vs_torch attention rc=$?" | tee -a "$S"
elif [[ $1 == 2 ]]; then
  for s in 8192x8192 32768x4096 4096x4096; do
    for op in softmax layernorm rmsnorm residual_dropout residual_dropout_norm; do
      bench $op bf16 $s
      bench $op f32 $s
    done
  done
  PYTHONUNBUFFERED=1 timeout 400 python3 bench/vs_torch.py --lib .device/lib/libfusedops.so \
    --json "$OUT/vs_torch_rows.json" --out /tmp/vs_plots --shapes 4096x1024,8192x2048,4096x4096,8192x8192,32768x4096 \
    >"$OUT/vs_torch_rows.log" 2>&1
  echo "vs_torch rows rc=$?" | tee -a "$S"
elif [[ $1 == san ]]; then
  # compute-sanitizer over what earlier sessions could not finish, in parallel: each tool run
  # is bound by the host (instrumentation), so the 16 cores run them side by side.
  for tool in memcheck racecheck initcheck synccheck; do sanitize gmm_$tool $tool test_grouped_matmul_gpu & done
  for tool in memcheck racecheck initcheck; do sanitize norm_$tool $tool test_norm_gpu & done
  for tool in memcheck initcheck; do sanitize softmax_$tool $tool test_softmax_gpu & done
  sanitize softmax_racecheck_c8 racecheck test_softmax_gpu _c8_sm90 &
  sanitize softmax_racecheck_staged racecheck test_softmax_gpu _staged_ &
  for tool in racecheck initcheck; do sanitize stress_$tool $tool test_stress_gpu & done
  wait
  sanitize_report
elif [[ $1 == tests ]]; then
  # Every GPU test and example, then the torch ops: the last check of a session's build.
  for t in .device/tests/test_*gpu* .device/bin/example_*; do run_test "$t"; done
  run_torch_ops
elif [[ $1 == san2 ]]; then
  # The torch ops, then racecheck by variant family where a whole test takes longer than a
  # call: the norm test, softmax's 8-program clusters and staged families, and the two
  # attention variants the stress test dispatches.
  run_torch_ops
  for f in f32_r1_ f16_r1_ bf16_r1_ _r4_ _r8_ _r16_ _loop_ _pipe_ _c2_ _c4_ _c8_; do
    sanitize "norm$f" racecheck test_norm_gpu $f &
  done
  for d in f32 f16 bf16; do
    v=$([[ $d == f32 ]] && echo 4 || echo 8)
    for f in ${d}_staged ${d}_n8192_w16_v${v}_c8 ${d}_n16384_w32_v${v}_c8 ${d}_loop_n4096_w16_v${v}_c8; do
      sanitize "softmax_$f" racecheck test_softmax_gpu $f &
    done
  done
  sanitize attention_bf16_d128 racecheck test_attention_gpu bf16_d128_m64_n128_w4_s2_wgmma &
  sanitize attention_f16_d64 racecheck test_attention_gpu f16_d64_m64_n128_w4_s2_wgmma &
  sanitize stress racecheck test_stress_gpu &
  wait
  sanitize_report
elif [[ $1 == attn ]]; then
  # Attention: the warp-specialized variants' cases first (short timeout: a hang shows fast),
  # then the whole attention and grouped matmul tests (shared rings), then the issue's shapes
  # beside SDPA, forced onto each warp-specialized variant and as dispatched.
  FUSEDOPS_TEST_VARIANT=_ws_ TEST_TIMEOUT=60 run_test .device/tests/test_attention_gpu
  if [[ -z ${ATTN_QUICK:-} ]]; then
    for t in test_attention_gpu test_grouped_matmul_gpu; do run_test .device/tests/$t; done
  fi
  for v in ${ATTN_VARIANTS:-attention_bf16_d128_m128_n128_s2_ws_sm90 attention_bf16_d64_m128_n128_s2_ws_sm90}; do
    PYTHONUNBUFFERED=1 timeout 200 python3 bench/vs_torch.py --ops attention --variant $v --lib .device/lib/libfusedops.so \
      --json "$OUT/vs_torch_$v.json" --out /tmp/vs_plots >"$OUT/vs_torch_$v.log" 2>&1
    echo "vs_torch $v rc=$?" | tee -a "$S"
    sed -n '/^attention: TFLOP/,$p' "$OUT/vs_torch_$v.log" | cut -c1-150 >>"$S"
  done
  if [[ -z ${ATTN_QUICK:-} ]]; then
    PYTHONUNBUFFERED=1 timeout 200 python3 bench/vs_torch.py --ops attention --lib .device/lib/libfusedops.so \
      --json "$OUT/vs_torch_attention.json" --out "$OUT" >"$OUT/vs_torch_attention.log" 2>&1
    echo "vs_torch attention rc=$?" | tee -a "$S"
  fi
elif [[ $1 == attn2 ]]; then
  # Attention after a kernel change: the GPU tests that run it (grouped matmul's shares the
  # rings), a fresh attention table and its held-out check, then the issue's shapes beside SDPA
  # and the torch ops, both dispatching through that table.
  for t in test_attention_gpu test_grouped_matmul_gpu test_stress_gpu; do run_test .device/tests/$t; done
  timeout 120 $B/fusedops tune --op attention --out "$OUT/attention.tsv" 2>"$OUT/tune_attention.log"
  echo "tune attention rc=$? $(tail -1 "$OUT/tune_attention.log")" | tee -a "$S"
  export FUSEDOPS_TUNING_FILE=$OUT/attention.tsv
  timeout 120 $B/fusedops tune --verify --op attention --out "$OUT/verify_attention.txt" 2>"$OUT/verify_attention.log"
  echo "verify attention rc=$? $(tail -2 "$OUT/verify_attention.txt" | tr '\n' ' ')" | tee -a "$S"
  PYTHONUNBUFFERED=1 timeout 200 python3 bench/vs_torch.py --ops attention --lib .device/lib/libfusedops.so \
    --json "$OUT/vs_torch_attention.json" --out "$OUT" >"$OUT/vs_torch_attention.log" 2>&1
  echo "vs_torch attention rc=$?" | tee -a "$S"
  run_torch_ops
elif [[ $1 == san_ws ]]; then
  # compute-sanitizer over the warp-specialized attention variants (and the dispatcher's cases
  # the test always runs), all four tools side by side, and racecheck over the stress test.
  for tool in memcheck racecheck initcheck synccheck; do sanitize attention_ws_$tool $tool test_attention_gpu _ws_ & done
  sanitize stress_racecheck racecheck test_stress_gpu &
  wait
  sanitize_report
elif [[ $1 == san3 ]]; then
  # racecheck over what no recorded run finished (docs/reliability.md), 16 runs side by side,
  # each bounded at SAN_TIMEOUT: the softmax variants no recorded family group covers (8-program
  # clusters, staged and 4096-column loop variants without a cluster), every norm variant by
  # family, and the stress test (racecheck and initcheck). The softmax and norm tests run with
  # FUSEDOPS_TEST_MAX_ROWS=SAN_MAX_ROWS (301): their 1823-row cases run with 301 rows. The wide
  # staged and cluster cases have 3 rows (their columns cost), so those variants come in small
  # groups. Globs (support_variant_selected) pick the variants without a cluster, whose names
  # are prefixes of cluster variants' names. Each group NAME=FILTER; its log is san_NAME.log.
  export SAN_TIMEOUT=${SAN_TIMEOUT:-500}
  max_rows=${SAN_MAX_ROWS:-301}
  softmax_groups=(
    'staged=*_staged_n*_v[48]'                              # 8: staged without a cluster
    'staged16384_c8=*_staged_n16384_v[48]_c8_sm90'          # 3
    'staged32768_c8_16bit=*16_staged_n32768_v8_c8_sm90'     # 2
    'staged32768_c8_f32=*f32_staged_n32768_v4_c8_sm90'      # 1
    'onepass_loop_c8=*_n*_w*_c8_sm90'                       # 9: one pass and loop, 8-program clusters
    'loop4096=*_loop_n4096_w16_v[48]'                       # 3: the 4096-column loop without a cluster
  )
  norm_groups=( # all 164 norm variants, each in one group
    'r1_f32=_f32_r1_' 'r1_f16=_f16_r1_' 'r1_bf16=_bf16_r1_' 'r4_r8=*_r[48]_*' 'r16=_r16_'
    'loop=_loop_' 'cluster=*_c[248]_d[01]_sm90' 'pipe=_pipe_'
  )
  for g in "${softmax_groups[@]}"; do
    SAN_MAX_ROWS=$max_rows sanitize "softmax_${g%%=*}" racecheck test_softmax_gpu "${g#*=}" &
  done
  for g in "${norm_groups[@]}"; do
    SAN_MAX_ROWS=$max_rows sanitize "norm_${g%%=*}" racecheck test_norm_gpu "${g#*=}" &
  done
  for tool in racecheck initcheck; do sanitize stress_$tool $tool test_stress_gpu & done
  wait
  sanitize_report
elif [[ $1 == gmm ]]; then
  # Grouped matmul: its GPU test (every variant, both paths), the attention and stress tests
  # (shared matrix machinery), the torch op, the issue's shapes beside torch's peers.
  for t in test_grouped_matmul_gpu test_attention_gpu test_stress_gpu; do run_test .device/tests/$t; done
  run_torch_ops
  PYTHONUNBUFFERED=1 timeout 300 python3 bench/vs_torch.py --ops grouped_matmul --lib .device/lib/libfusedops.so \
    --json "$OUT/vs_torch_gmm.json" --out "$OUT" >"$OUT/vs_torch_gmm.log" 2>&1
  echo "vs_torch grouped_matmul rc=$?" | tee -a "$S"
  if [[ -n ${SAN_GMM:-} ]]; then # compute-sanitizer over the grouped matmul test, by family
    for tool in memcheck racecheck initcheck synccheck; do
      for fam in ${SAN_GMM}; do SAN_TIMEOUT=${SAN_TIMEOUT:-90} sanitize gmm_${tool}_$fam $tool test_grouped_matmul_gpu $fam; done
    done
    sanitize_report
  fi
else
  for tool in memcheck racecheck initcheck synccheck; do
    SAN_TIMEOUT=${SAN_TIMEOUT:-60} sanitize attention_$tool $tool test_attention_gpu ${SAN_VARIANT:-bf16_d128_m128}
  done
  sanitize_report
  PYTHONUNBUFFERED=1 timeout 150 python3 bench/vs_torch.py --ops softmax,log_softmax --dtypes bf16 \
    --lib .device/lib/libfusedops.so --json "$OUT/vs_torch_softmax.json" --out /tmp/vs_plots \
    --shapes 4096x1024,8192x2048,4096x4096,8192x8192,32768x4096,2048x16384,1024x32768,1024x65536 \
    >"$OUT/vs_torch_softmax.log" 2>&1
  echo "vs_torch softmax rc=$?" | tee -a "$S"
  timeout 200 $B/fusedops tune --verify --out "$OUT/verify.txt" 2>"$OUT/verify.log"
  echo "verify rc=$? $(tail -3 "$OUT/verify.txt" | tr '\n' ' ')" | tee -a "$S"
fi
echo "==== summary"
cat "$S"
[[ -f $OUT/vs_torch_attention.log ]] && sed -n '/^attention: TFLOP/,$p' "$OUT/vs_torch_attention.log" | cut -c1-150
[[ -f $OUT/vs_torch_gmm.log ]] && tail -30 "$OUT/vs_torch_gmm.log" | cut -c1-170
[[ -f $OUT/vs_torch_rows.log ]] && tail -45 "$OUT/vs_torch_rows.log" | cut -c1-160
[[ -f $OUT/vs_torch_softmax.log ]] && tail -22 "$OUT/vs_torch_softmax.log" | cut -c1-160
[[ -f $OUT/bench.txt ]] && cut -c1-150 "$OUT/bench.txt"
exit 0
