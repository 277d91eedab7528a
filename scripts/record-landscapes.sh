#!/usr/bin/env bash
# Records complete landscapes of the Kernel Tuner example profiles (examples/kernel_tuner/), or of
# evo's own profiles by name (gemm_fp16, sdpa_fp16_wgmma ...: landscape_<name>_<suffix>.json), on the
# GPU machine: one exhaustive `evo run` per profile, from an empty database and a cold compile
# cache, then `evo export-landscape` into $OUT. The run's summary (with its pipeline line: how
# busy the compile workers and the GPU were, the bound, the wall) is kept beside each landscape:
# the exhaustive run of the most compile-heavy profile is the pipeline benchmark of docs/results.
# --metrics-all: every configuration's hardware metrics, for replays of strategies that read them
# (a plain exhaustive run profiles only its 10 best, at its end).
#
#   here:  examples/kernel_tuner/fetch-kernels.sh KERNEL_TUNER_CLONE && EVO_BUNDLE_BUILD=build scripts/bundle.sh
#   there: (device tool, carry ["bundle", "examples/kernel_tuner/kernels"])
#          scripts/record-landscapes.sh [SUFFIX] [PROFILE...]     e.g.  h100 matmul pnpoly
# METRICS=0 leaves the hardware metrics to the run's 10 best (a space whose candidates are long).
# RUN_LIMIT=S stops each run after S seconds (SIGINT: the run ends cleanly, `evo run --resume`
# finishes it later) and exports what it measured, so a call's time limit never loses a run.
set -uo pipefail
OUT="${OUT:-/tmp/evo-landscapes}"
mkdir -p "$OUT"
suffix="${1:-h100}"; shift || true
profiles="${*:-matmul pnpoly stencil zeromean}"
evo="$PWD/bundle/evo"
echo "device: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null)" | tee -a "$OUT/record.log"
for p in $profiles; do
  work="$(mktemp -d)"
  profile="examples/kernel_tuner/$p.json" name="kt_$p"
  [ -f "$profile" ] || profile="$p" name="$p"
  t0=$(date +%s%N)
  ${RUN_LIMIT:+timeout -s INT "$RUN_LIMIT"} "$evo" --db "$work/evo.db" --cache "$work/cache" run --profile "$profile" \
    --strategy exhaustive --budget 1000000 --no-sanitize $([ "${METRICS:-1}" = 0 ] || echo --metrics-all) >"$OUT/run_$p.txt" 2>&1
  rc=$?
  echo "$p: exhaustive rc=$rc wall=$(( ($(date +%s%N) - t0) / 1000000 )) ms" | tee -a "$OUT/record.log"
  tail -n 6 "$OUT/run_$p.txt" | tee -a "$OUT/record.log"
  "$evo" --db "$work/evo.db" export-landscape 1 --to "$OUT/landscape_${name}_${suffix}.json" >>"$OUT/record.log" 2>&1
  "$evo" --db "$work/evo.db" runs >>"$OUT/record.log" 2>&1
  rm -rf "$work"
done
echo "done" >> "$OUT/record.log"
