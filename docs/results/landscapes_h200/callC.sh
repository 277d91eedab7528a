#!/usr/bin/env bash
# Call C (2026-11-28, twentieth session; 1 x H200, carry ["bundle.tar.xz", "examples/kernel_tuner/kernels"]).
# Call B: with the partials' buffer of fixed size kt_reduction still took 20 s a candidate (GREEN 7,
# FAST 8.7, metrics 6). The cause: the fill memo's bound (4 GB, host and device copies counted)
# was below its 3.2 GB input's two copies, so every other fill cleared it and each GREEN, FAST and
# metrics pass read the input back from the trial store and uploaded it again. The bound is now a
# quarter of the device's memory (35 GB here), GREEN's buffer sets and reference outputs likewise.
# Prediction: from the second candidate on, 80-150 ms a candidate (GREEN about 15 ms, FAST 45
# launches of 1.26 ms, no metrics but the 10 best's), the baseline 1258 us as in call B (one
# process reads the input from the store once: a few seconds); within RUN_LIMIT the whole space.
set -uo pipefail
tar xJf bundle.tar.xz
export OUT_DIR="$OUT"; export OUT="$OUT/landscapes"; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$OUT/device.txt"
METRICS=0 RUN_LIMIT=${RUN_LIMIT:-420} scripts/record-landscapes.sh h200 reduction
tar czf "$OUT_DIR/callC.tgz" -C "$OUT" .
