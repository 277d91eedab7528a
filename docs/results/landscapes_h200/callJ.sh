#!/usr/bin/env bash
# Call J (twenty-third session, 1 x H200, the only kind lent; carry ["bundle.tar.xz",
# "examples/kernel_tuner/kernels"], bundle without evo_tests at 8a4b629's code).
# A kernel the search has never met: Kernel Tuner's expdist example (examples/kernel_tuner/expdist.json,
# 640 valid configurations of 960), recorded whole for a landscape no default was chosen on.
#   1. the exhaustive run and its export (scripts/record-landscapes.sh h200 expdist);
#   2. the default search live on it, 48 evaluations, with the sanitizer gate on (GREEN against the
#      profile's double-precision reference).
# Prediction: every configuration compiles (8 of 8 sampled did here, 1.8-3.5 s each: cub's block
# reduction), about 100-200 s of compiles on 16 cores; no GREEN failure (the partials' order differs,
# rtol 1e-9 holds for double sums of 4 M terms); tiles of 8 x 8 with use_shared_mem = 1 may spill
# (124 registers here at 64 x 2). The best several times faster than the slowest; the default search
# within 5 % of the recorded best in 48 evaluations.
set -uo pipefail
T0=$(date +%s)
tar xJf bundle.tar.xz
export OUT_DIR="$OUT"; export OUT="$OUT/landscapes"; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$OUT/device.txt"
nproc >> "$OUT/device.txt"
RUN_LIMIT=420 scripts/record-landscapes.sh h200 expdist
w="$(mktemp -d)"
t=$(date +%s%N)
bundle/evo --db "$w/evo.db" --cache "$w/cache" run --profile examples/kernel_tuner/expdist.json --budget 48 > "$OUT/run_default.txt" 2>&1
echo "default search: rc=$? wall=$(( ($(date +%s%N) - t) / 1000000 )) ms" | tee -a "$OUT/record.log"
tail -n 8 "$OUT/run_default.txt" >> "$OUT/record.log"
echo "done after $(( $(date +%s) - T0 )) s" >> "$OUT/record.log"
tar czf "$OUT_DIR/callJ.tgz" -C "$OUT" .
