#!/usr/bin/env bash
# Call A (2026-11-28, twentieth session; device tool, 1 x H200, carry ["bundle.tar.xz",
# "examples/kernel_tuner/kernels"]): complete landscapes recorded by evo on one H200.
#   1. kt_reduction, new: Kernel Tuner's reduction example (examples/kernel_tuner/reduction.json),
#      2 376 configurations, every one passing its constraints (it has none).
#   2. The four Kernel Tuner examples recorded on the H100 on 2026-11-24, now on the H200:
#      stencil, zeromean, zeromean_h, pnpoly (matmul's 600+ s does not fit one call).
# Prediction, written before the call: kt_reduction compiles in about 0.1 s a configuration (here:
# 12 in 0.6 s on 2 cores), so 2 376 take about 15 s of 16 workers and the run is GPU-bound: each
# candidate reads 3.2 GB some 50 times (GREEN, 5 warm-ups, 40 timed; about 0.75 ms a pass at
# ~4.3 TB/s), 40-60 ms, so 100-150 s for the whole space. Every configuration passes GREEN (the
# kernel is right for power-of-two blocks and N a multiple of 4); `#pragma unroll 0` compiles. The
# best reads at 85-90 % of the H200's 4.8 TB/s, about 0.75 ms, with vector = 4; fewer than 20
# configurations within 2 % of it. The others take about what they took on the H100 (stencil 11 s,
# zeromean 9, zeromean_h 8, pnpoly 75), within 1.15 x their bounds.
set -uo pipefail
tar xJf bundle.tar.xz
export OUT_DIR="$OUT"; export OUT="$OUT/landscapes"; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$OUT/device.txt"
nproc >> "$OUT/device.txt"
scripts/record-landscapes.sh h200 reduction stencil zeromean zeromean_h pnpoly
tar czf "$OUT_DIR/callA.tgz" -C "$OUT" .
