#!/usr/bin/env bash
# The fusedops command's arguments (docs/cli.md): a malformed number, a number out of range or
# an unknown option is a usage error (exit 2) found before any GPU work, and explain for a
# named arch needs no GPU (exit 0). Usage: test_cli.sh PATH_TO_FUSEDOPS. No GPU needed.
set -u
cli=$1
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
if [ "$failed" = 0 ]; then echo "fusedops arguments: all as documented"; fi
exit "$failed"
