#!/usr/bin/env bash
# Call D (prepared 2026-11-28, twentieth session, for the next session's device time; 1 x H200 or
# H100, carry ["bundle.tar.xz", "examples/kernel_tuner/kernels"], bundle built with evo_tests).
# kt_reduction whole is call E (callE.sh): it needs a call of its own.
#   1. Every GPU test (scripts/gpu-tests.sh; the last full run was scale18 call A on 286e996, before
#      the judge's memory bounds), among them `GpuGates.InputsOfGigabytesAreKeptFromOneCandidateToTheNext`
#      and `Buffers.KeptCopies...`, written after call C and never yet run on a GPU.
#      (Twenty-first session: widened from those two tests to the whole GPU suite.)
#   2. kt_spmv (new, 128 configurations: Kernel Tuner's spmv example over its own space).
# Prediction: 132 run, 126 passed, 6 skipped (the six that need a machine without a GPU), in
# about 250 s (scale18 call A: 130 tests, 234 s); GREEN of the kept-fill test's second candidate
# some milliseconds, the first some seconds. kt_spmv: all 128 pass GREEN in under a minute; a warp per row (threads_per_row 32) ahead of a
# thread per row by 3-10x (a thread's row is 65 scattered non-zeros, uncoalesced); the best some
# 40-80 us (70 MB of values and column indices, x gathered from L2).
set -uo pipefail
tar xJf bundle.tar.xz
export OUT_DIR="$OUT"; export OUT="$OUT/landscapes"; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$OUT/device.txt"
EVO_BINARY=$PWD/bundle/evo EVO_CACHE=/tmp/evo-test-cache timeout 330 bash scripts/gpu-tests.sh bundle/evo_tests \
  > "$OUT/tests.txt" 2>&1
echo "gpu tests: rc=$?"; grep -E '^\[  (PASSED|FAILED|SKIPPED) \]|tests? from .* ran' "$OUT/tests.txt" | tail -n 12
suffix="$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | grep -q H100 && echo h100 || echo h200)"
scripts/record-landscapes.sh "$suffix" spmv
tar czf "$OUT_DIR/callD.tgz" -C "$OUT" .
