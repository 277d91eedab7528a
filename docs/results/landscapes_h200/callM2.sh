#!/usr/bin/env bash
# Call M2 (twenty-fifth session, 1 x H200; carry ["bundle.tar.xz"], the bundle of call M). Call M's
# fifth profile again, whole this time, and two more of evo's own: sdpa_fp16_d128 (272 valid),
# sdpa_fp8_d128 (128), sdpa_fp16_wgmma_d128 (232). The last's objective problem ("long") is a
# 580-720 us kernel whose timing took 1.1 s a configuration in call M (144 of 232 in its 170 s).
# Prediction: the two d128 profiles on "mission" in 20-40 s each; sdpa_fp16_wgmma_d128 about 260 s
# of GPU time (232 x 1.1 s), well inside its 400 s limit.
set -uo pipefail
T0=$(date +%s)
tar xJf bundle.tar.xz
export OUT_DIR="$OUT"; export OUT="$OUT/landscapes"; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$OUT/device.txt"
for p in sdpa_fp16_d128 sdpa_fp8_d128; do METRICS=0 RUN_LIMIT=60 scripts/record-landscapes.sh h200 "$p"; done
METRICS=0 RUN_LIMIT=$(( 560 - ($(date +%s) - T0) )) scripts/record-landscapes.sh h200 sdpa_fp16_wgmma_d128
echo "done after $(( $(date +%s) - T0 )) s" >> "$OUT/record.log"
tar czf "$OUT_DIR/callM2.tgz" -C "$OUT" .
