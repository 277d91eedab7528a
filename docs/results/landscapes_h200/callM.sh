#!/usr/bin/env bash
# Call M (twenty-fifth session, 1 x H200, the only kind lent; carry ["bundle.tar.xz"], bundle of evo
# alone at 58736d9's code). Five of evo's own profiles recorded whole, landscapes no default was
# chosen on (the suite's twenty hold none of them): gemm_fp16 (636 valid configurations),
# sdpa_fp16_wgmma (540), sdpa_fp16 (424), sdpa_fp8_wgmma (470), sdpa_fp16_wgmma_d128 (232).
# Prediction: compiles here took 0.3-0.5 s (gemm), 0.8-3.3 s (wgmma), 0.9 s (sdpa_fp16) each, so
# 20-90 s of compiles a profile on 16 cores; GPU time at the recorded 24 (sdpa) and 92 (gemm)
# evaluations a second 10-25 s; every profile whole within 150 s, the five within 8 minutes.
# A profile is not started after 420 s, so the call's limit never cuts one half-way.
set -uo pipefail
T0=$(date +%s)
tar xJf bundle.tar.xz
export OUT_DIR="$OUT"; export OUT="$OUT/landscapes"; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$OUT/device.txt"
nproc >> "$OUT/device.txt"
for p in gemm_fp16 sdpa_fp16_wgmma sdpa_fp16 sdpa_fp8_wgmma sdpa_fp16_wgmma_d128; do
  if [ $(( $(date +%s) - T0 )) -gt 420 ]; then echo "$p: not started ($(( $(date +%s) - T0 )) s gone)" >> "$OUT/record.log"; continue; fi
  METRICS=0 RUN_LIMIT=170 scripts/record-landscapes.sh h200 "$p"
done
echo "done after $(( $(date +%s) - T0 )) s" >> "$OUT/record.log"
tar czf "$OUT_DIR/callM.tgz" -C "$OUT" .
