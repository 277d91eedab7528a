#!/usr/bin/env bash
# Call N (twenty-sixth session, 1 x H200, the only kind lent; carry ["bundle.tar.xz"], bundled at
# 8ac502f's code). Two more of evo's own profiles recorded whole, as landscapes the search was never
# tuned on: sdpa_fp8_wgmma_d128 (324 valid; the FP8 sibling of sdpa_fp16_wgmma_d128 and the head-128
# sibling of sdpa_fp8_wgmma), then, in the time left, sdpa_fp8pv_wgmma (472 valid).
# Prediction: sdpa_fp8_wgmma_d128's objective ("long", B2 H16 S4096) runs about half as long as the
# FP16 one's 580-720 us, so its timing takes about 0.6 s a configuration: about 200-260 s for the
# whole space, inside its 330 s limit; no GREEN failure; a handful of static-gate rejections at most.
# sdpa_fp8pv_wgmma in the rest: whole if its timing stays under 0.45 s a configuration.
set -uo pipefail
T0=$(date +%s)
tar xJf bundle.tar.xz
export OUT_DIR="$OUT"; export OUT="$OUT/landscapes"; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$OUT/device.txt"
METRICS=0 RUN_LIMIT=330 scripts/record-landscapes.sh h200 sdpa_fp8_wgmma_d128
METRICS=0 RUN_LIMIT=$(( 560 - ($(date +%s) - T0) )) scripts/record-landscapes.sh h200 sdpa_fp8pv_wgmma
echo "done after $(( $(date +%s) - T0 )) s" >> "$OUT/record.log"
tar czf "$OUT_DIR/callN.tgz" -C "$OUT" .
