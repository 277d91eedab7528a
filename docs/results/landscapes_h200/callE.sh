#!/usr/bin/env bash
# Call E (prepared 2026-11-28, twentieth session, for the next session's device time; 1 x H200 or
# H100, carry ["bundle.tar.xz", "examples/kernel_tuner/kernels"]): kt_reduction whole, in one call
# (timings are compared within one call only). Call C measured 2 239 of its 2 376 configurations in
# 420 s after a 21 s first candidate (the 3.2 GB input drawn and stored): a mean of 187 ms a
# candidate, the kernels' own time (up to 293 ms a launch, 45 launches in FAST).
# Prediction: about 470 s in all; the run ends "space exhausted" with 2 376 measured, every one
# passing GREEN, the best within 0.5 % of call C's 699.1 us on an H200 (~95 % of its 4.8 TB/s).
# RUN_LIMIT 560 exports what was measured should it not.
set -uo pipefail
tar xJf bundle.tar.xz
export OUT_DIR="$OUT"; export OUT="$OUT/landscapes"; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$OUT/device.txt"
suffix="$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | grep -q H100 && echo h100 || echo h200)"
METRICS=0 RUN_LIMIT=${RUN_LIMIT:-560} scripts/record-landscapes.sh "$suffix" reduction
tar czf "$OUT_DIR/callE.tgz" -C "$OUT" .
