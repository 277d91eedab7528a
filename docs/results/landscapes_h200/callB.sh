#!/usr/bin/env bash
# Call B (2026-11-28, twentieth session; 1 x H200, carry ["bundle.tar.xz", "examples/kernel_tuner/kernels"]).
# Call A recorded 25 of kt_reduction's 2 376 configurations in 8 minutes (20 s each) and was cut by
# the call's limit. Its scratch buffer of partials was sized by the knob num_blocks, and GREEN keeps
# one set of buffers per buffer shapes (gates/green.cpp, Benches), each holding the 3.2 GB input:
# eleven shapes against an 8 GB bound, so sets were freed and made again (allocation, the input's
# fill) nearly every candidate. The profile now sizes it for the largest num_blocks (32 768 floats).
# Prediction: per candidate 40-60 ms once the first has made the input (3.2 GB drawn and stored
# once per host: a few seconds), the whole space in 100-150 s. Here the four H100 landscapes' kernels
# go first (about 110 s), then kt_reduction with RUN_LIMIT so that whatever it has measured when the
# limit comes is exported; before it, `evo eval --baseline` twice with EVO_TRACE for the per-step
# seconds of one candidate.
set -uo pipefail
tar xJf bundle.tar.xz
export OUT_DIR="$OUT"; export OUT="$OUT/landscapes"; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$OUT/device.txt"
nproc >> "$OUT/device.txt"
t0=$SECONDS
scripts/record-landscapes.sh h200 stencil zeromean zeromean_h pnpoly
w="$(mktemp -d)"
for i in 1 2; do
  /usr/bin/time -f "eval $i: %e s wall" env EVO_TRACE="$OUT/trace_eval$i.json" bundle/evo --db "$w/evo.db" --cache "$w/cache" \
    eval examples/kernel_tuner/reduction.json --baseline --no-metrics >"$OUT/eval$i.txt" 2>&1
  tail -1 "$OUT/eval$i.txt" | tee -a "$OUT/record.log"
done
left=$(( 530 - (SECONDS - t0) ))
echo "reduction: RUN_LIMIT=$left" | tee -a "$OUT/record.log"
RUN_LIMIT=$left scripts/record-landscapes.sh h200 reduction
tar czf "$OUT_DIR/callB.tgz" -C "$OUT" .
