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
if [[ ${1:-1} == 1 ]]; then
  for t in .device/tests/test_*gpu* .device/bin/example_*; do
    timeout ${TEST_TIMEOUT:-200} "$t" >"$OUT/tests.log.tmp" 2>&1
    echo "$(basename "$t") rc=$? $(tail -1 "$OUT/tests.log.tmp")" | tee -a "$S"
    grep FAIL "$OUT/tests.log.tmp" | head -5 | tee -a "$S"
    cat "$OUT/tests.log.tmp" >>"$OUT/tests.log"
  done
  rm -f "$OUT/tests.log.tmp"
  FUSEDOPS_LIBRARY=$PWD/.device/lib/libfusedops.so PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 timeout 200 \
    python3 tests/python/run_gpu.py tests/python/test_torch_ops.py >"$OUT/pytest.log" 2>&1
  echo "torch ops test rc=$? $(grep -E '^(Ran|OK|FAILED)' "$OUT/pytest.log" | tr '\n' ' ')" | tee -a "$S"
  grep -E "per call:" "$OUT/pytest.log" | head -3 | tee -a "$S"
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
  cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  run_san() { # name tool test [variant filter]
    FUSEDOPS_TEST_VARIANT=${4:-} timeout ${SAN_TIMEOUT:-540} "$cs" --tool $2 --error-exitcode 99 \
      --report-api-errors no .device/tests/$3 >"$OUT/san_$1.log" 2>&1
    echo "sanitize $1 rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|cases,|passed,|checks' "$OUT/san_$1.log" | tail -2 | tr '\n' ' ')" >"$OUT/san_$1.sum"
  }
  for tool in memcheck racecheck initcheck synccheck; do run_san gmm_$tool $tool test_grouped_matmul_gpu & done
  for tool in memcheck racecheck initcheck; do run_san norm_$tool $tool test_norm_gpu & done
  for tool in memcheck initcheck; do run_san softmax_$tool $tool test_softmax_gpu & done
  run_san softmax_racecheck_c8 racecheck test_softmax_gpu _c8_sm90 &
  run_san softmax_racecheck_staged racecheck test_softmax_gpu _staged_ &
  for tool in racecheck initcheck; do run_san stress_$tool $tool test_stress_gpu & done
  wait
  cat "$OUT"/san_*.sum | tee -a "$S"
  rm -f "$OUT"/san_*.sum
  (cd "$OUT" && for f in san_*.log; do tail -c 20000 "$f" >"$f.tail" && mv "$f.tail" "$f"; done &&
    tar czf san_logs.tgz san_*.log && rm -f san_*.log) # (few files come back from a call)
elif [[ $1 == tests ]]; then
  # Every GPU test and example, then the torch ops: the last check of a session's build.
  for t in .device/tests/test_*gpu* .device/bin/example_*; do
    timeout ${TEST_TIMEOUT:-200} "$t" >"$OUT/tests.log.tmp" 2>&1
    echo "$(basename "$t") rc=$? $(tail -1 "$OUT/tests.log.tmp")" | tee -a "$S"
    grep -E "FAIL|not ok" "$OUT/tests.log.tmp" | head -5 | tee -a "$S"
    cat "$OUT/tests.log.tmp" >>"$OUT/tests.log"
  done
  rm -f "$OUT/tests.log.tmp"
  FUSEDOPS_LIBRARY=$PWD/.device/lib/libfusedops.so PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 timeout 200 \
    python3 tests/python/run_gpu.py tests/python/test_torch_ops.py >"$OUT/pytest.log" 2>&1
  echo "torch ops test rc=$? $(grep -E '^(Ran|OK|FAILED)' "$OUT/pytest.log" | tr '\n' ' ')" | tee -a "$S"
  grep -E "^(FAIL|ERROR):|per call" "$OUT/pytest.log" | head -8 | tee -a "$S"
elif [[ $1 == san2 ]]; then
  # The torch ops (per-call overhead included), then racecheck by variant family where a whole
  # test takes longer than a call: the norm test, softmax's 8-program clusters and staged
  # families, and the two attention variants the stress test dispatches.
  FUSEDOPS_LIBRARY=$PWD/.device/lib/libfusedops.so PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 timeout 200 \
    python3 tests/python/run_gpu.py tests/python/test_torch_ops.py >"$OUT/pytest.log" 2>&1
  echo "torch ops test rc=$? $(grep -E '^(Ran|OK|FAILED)' "$OUT/pytest.log" | tr '\n' ' ')" | tee -a "$S"
  grep -E "^(FAIL|ERROR):|per call" "$OUT/pytest.log" | head -8 | tee -a "$S"
  cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  run_race() { # name test filter
    FUSEDOPS_TEST_VARIANT=$3 timeout ${SAN_TIMEOUT:-480} "$cs" --tool racecheck --error-exitcode 99 \
      --report-api-errors no .device/tests/$2 >"$OUT/race_$1.log" 2>&1
    echo "racecheck $2 $3 rc=$? $(grep -E 'RACECHECK SUMMARY|cases,|passed,|checks' "$OUT/race_$1.log" | tail -2 | tr '\n' ' ')" >"$OUT/race_$1.sum"
  }
  i=0
  for f in f32_r1_ f16_r1_ bf16_r1_ _r4_ _r8_ _r16_ _loop_ _pipe_ _c2_ _c4_ _c8_; do i=$((i + 1)); run_race n$i test_norm_gpu $f & done
  for d in f32 f16 bf16; do
    v=$([[ $d == f32 ]] && echo 4 || echo 8)
    for f in ${d}_staged ${d}_n8192_w16_v${v}_c8 ${d}_n16384_w32_v${v}_c8 ${d}_loop_n4096_w16_v${v}_c8; do
      i=$((i + 1)); run_race s$i test_softmax_gpu $f &
    done
  done
  run_race a1 test_attention_gpu bf16_d128_m64_n128_w4_s2_wgmma &
  run_race a2 test_attention_gpu f16_d64_m64_n128_w4_s2_wgmma &
  run_race t1 test_stress_gpu "" &
  wait
  cat "$OUT"/race_*.sum | tee -a "$S"
  (cd "$OUT" && rm -f race_*.sum && for f in race_*.log; do tail -c 6000 "$f" >"$f.tail" && mv "$f.tail" "$f"; done &&
    tar czf race_logs.tgz race_*.log && rm -f race_*.log)
elif [[ $1 == gmm ]]; then
  # Grouped matmul: its GPU test (every variant, both paths), the attention and stress tests
  # (shared matrix machinery), the torch op, the issue's shapes beside torch's peers.
  for t in test_grouped_matmul_gpu test_attention_gpu test_stress_gpu; do
    timeout ${TEST_TIMEOUT:-200} .device/tests/$t >"$OUT/tests.log.tmp" 2>&1
    echo "$t rc=$? $(tail -1 "$OUT/tests.log.tmp")" | tee -a "$S"
    grep -E "FAIL|not ok" "$OUT/tests.log.tmp" | head -8 | tee -a "$S"
    cat "$OUT/tests.log.tmp" >>"$OUT/tests.log"
  done
  rm -f "$OUT/tests.log.tmp"
  FUSEDOPS_LIBRARY=$PWD/.device/lib/libfusedops.so PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 timeout 200 \
    python3 tests/python/run_gpu.py tests/python/test_torch_ops.py >"$OUT/pytest.log" 2>&1
  echo "torch ops test rc=$? $(grep -E '^(Ran|OK|FAILED)' "$OUT/pytest.log" | tr '\n' ' ')" | tee -a "$S"
  grep -E "^(FAIL|ERROR):" "$OUT/pytest.log" | head -8 | tee -a "$S"
  PYTHONUNBUFFERED=1 timeout 300 python3 bench/vs_torch.py --ops grouped_matmul --lib .device/lib/libfusedops.so \
    --json "$OUT/vs_torch_gmm.json" --out "$OUT" >"$OUT/vs_torch_gmm.log" 2>&1
  echo "vs_torch grouped_matmul rc=$?" | tee -a "$S"
  if [[ -n ${SAN_GMM:-} ]]; then # compute-sanitizer over the grouped matmul test, by family
    cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
    for tool in memcheck racecheck initcheck synccheck; do
      for fam in ${SAN_GMM}; do
        FUSEDOPS_TEST_VARIANT=$fam timeout ${SAN_TIMEOUT:-90} "$cs" --tool $tool --error-exitcode 99 \
          --report-api-errors no .device/tests/test_grouped_matmul_gpu >"$OUT/san_gmm.log.tmp" 2>&1
        echo "sanitize $tool grouped_matmul $fam rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|cases,' "$OUT/san_gmm.log.tmp" | tail -2 | tr '\n' ' ')" | tee -a "$S"
        cat "$OUT/san_gmm.log.tmp" >>"$OUT/san_gmm.log"
      done
    done
    rm -f "$OUT/san_gmm.log.tmp"
  fi
else
  cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  for tool in memcheck racecheck initcheck synccheck; do
    FUSEDOPS_TEST_VARIANT=${SAN_VARIANT:-bf16_d128_m128} timeout 60 "$cs" --tool $tool --error-exitcode 99 \
      --report-api-errors no .device/tests/test_attention_gpu >"$OUT/san_$tool.log" 2>&1
    echo "sanitize $tool attention rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|cases,' "$OUT/san_$tool.log" | tail -2 | tr '\n' ' ')" | tee -a "$S"
  done
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
