#!/usr/bin/env bash
# The fusedops command's arguments (docs/cli.md): a malformed number, a number out of range or
# an unknown option is a usage error (exit 2) found before any GPU work, and explain for a
# named arch needs no GPU (exit 0); explain for this GPU, played by fake_cuda (a stand-in
# driver, tests/host/fake_cuda.h), gives back the primary context it opened. Usage:
# test_cli.sh PATH_TO_FUSEDOPS PATH_TO_FAKE_CUDA. No GPU needed.
set -u
cli=$1
fake_cuda=$2
failed=0
expect() {
  local want=$1
  shift
  "$cli" "$@" > /dev/null 2>&1
  local got=$?
  if [ "$got" != "$want" ]; then
    echo "FAIL: fusedops $* exited $got, want $want"
    failed=1
  fi
}
expect 0 version
expect 2 version --bogus
expect 0 explain softmax --dtype bf16 --shape 64x64 --arch sm_90
expect 0 explain softmax --dtype bf16 --shape 64x64 --arch sm_80 --align 8 --ld-x 72 --ld-y 64
expect 0 explain attention --dtype bf16 --shape 2x16x1024x128 --heads-kv 4 --seqlen-k 2048 --arch sm_90
expect 0 explain grouped_matmul --dtype bf16 --shape 8x4096x1024x2048 --arch sm_90
for arch in sm_0 sm_9 sm_1000 sm_99999999999 sm_90abc sm_ 90 sm_-90; do
  expect 2 explain softmax --dtype bf16 --shape 64x64 --arch "$arch"
done
for bad in abc 0 -1 12abc 99999999999999999999 ""; do
  expect 2 explain softmax --dtype bf16 --shape 64x64 --arch sm_90 --ld-x "$bad"
  expect 2 explain softmax --dtype bf16 --shape 64x64 --arch sm_90 --ld-y "$bad"
  expect 2 explain softmax --dtype bf16 --shape 64x64 --arch sm_90 --align "$bad"
  expect 2 explain attention --dtype bf16 --shape 2x16x1024x128 --arch sm_90 --heads-kv "$bad"
  expect 2 explain attention --dtype bf16 --shape 2x16x1024x128 --arch sm_90 --seqlen-k "$bad"
done
expect 2 explain softmax --dtype bf16 --shape 64x64 --arch sm_90 --align 4294967312
expect 2 explain softmax --dtype bf16 --shape 99999999999999999999x4 --arch sm_90
expect 2 explain softmax --dtype bf16 --shape 64x --arch sm_90
# sizes whose dense strides pass 64 bits: refused by the command, before the library
expect 2 explain attention --dtype bf16 --shape 2x16x576460752303423488x128 --arch sm_90
expect 2 explain attention --dtype bf16 --shape 2x16x1024x128 --seqlen-k 9223372036854775807 --arch sm_90
expect 2 explain grouped_matmul --dtype bf16 --shape 2x16x4294967296x4294967296 --arch sm_90
expect 2 explain softmax --dtype bf16 --shape 64x64 --arch sm_90 --bogus 1
expect 2 tune --min-rows abc
# varlen's B x S tokens past 64 bits: refused, not wrapped
expect 2 explain attention --dtype bf16 --shape 2x1x4611686018427387904x1 --varlen --arch sm_90
expect 2 explain attention --dtype bf16 --shape 2x1x1x1 --seqlen-k 4611686018427387904 --varlen --arch sm_90
# check refuses a selection of no variant (it would check nothing and pass), before the GPU
expect 2 check --variant no_such_variant
expect 2 check --variant attention_bf16_d64_m192_n128_s2_ws_sm90 --dtype f16
# tune refuses before the GPU: an empty --shapes (not the whole grid), a trailing comma, crossed
# bounds, and words past the 62 it keeps (not dropped)
expect 2 tune --shapes ""
expect 2 tune --shapes 64x64,
expect 2 tune --min-rows 10 --max-rows 5
expect 2 tune $(printf -- '--quick %.0s' $(seq 70)) --op bogus
# where the exit code cannot tell the cause, the message
expect_message() {
  local want=$1
  shift
  local got
  got=$("$cli" "$@" 2>&1 > /dev/null | head -n 1)
  if [ "$got" != "fusedops: $want" ]; then
    echo "FAIL: fusedops $* said '$got', want 'fusedops: $want'"
    failed=1
  fi
}
# negative sizes reach the library, whose message comes first, without the command's stride
# products overflowing (a sanitizer build stops there, also with exit 1)
expect_message "invalid argument: tile_flash_attention_explain: seqlen_q is -576460752303423488; it must be in [1, 2^31)" \
  explain attention --dtype bf16 --shape 2x16x-576460752303423488x128 --arch sm_90
expect_message "invalid argument: tile_flash_attention_explain: heads_kv is -16; it must be >= 1" \
  explain attention --dtype bf16 --shape 2x-16x576460752303423488x-128 --arch sm_90
expect_message "unknown option" explain softmax --dtype bf16 --shape 64x64 --arch sm_90 --bogus
expect_message "unknown option" tune stray
expect_message "option needs a value" explain softmax --dtype bf16 --shape 64x64 --ld-x
expect_message "option needs a value" tune --out
expect_message "--shape needs rows >= 1 and cols >= 1, at most 2^40 elements" bench softmax --dtype f32 --shape 0x64
# explain without --arch opens the GPU (its primary context) and closes it on every path: the
# decision (exit 0) and a refused call (sm_75, below every variant: exit 1). The fake says at
# exit if a reference was never released.
expect_released() {
  local want=$1
  shift
  local said
  said=$(FUSEDOPS_LIBCUDA=$fake_cuda "$cli" "$@" 2>&1 > /dev/null)
  local got=$?
  if [ "$got" != "$want" ] || [[ "$said" == *"fake_cuda: primary context retained at exit"* ]]; then
    echo "FAIL: fusedops $* on fake_cuda exited $got (want $want), said: $said"
    failed=1
  fi
}
expect_released 0 explain softmax --dtype bf16 --shape 64x64
FAKE_CUDA_CC=75 expect_released 1 explain softmax --dtype bf16 --shape 64x64
# a GPU that opens halfway (its name unreadable, after the context was retained): no GPU, exit
# 3, and the context released
FAKE_CUDA_NAME=fail expect_released 3 explain softmax --dtype bf16 --shape 64x64
if [ "$failed" = 0 ]; then echo "fusedops arguments: all as documented"; fi
exit "$failed"
