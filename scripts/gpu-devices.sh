#!/usr/bin/env bash
# Runs on a machine with several GPUs (device tool kind nvidia-h200-x2, carry ["bundle"], from the
# repository root; scripts/bundle.sh here first): the same exhaustive sweep of one profile measured
# on one GPU and on every GPU (`--devices all`), from fresh databases over a warm compile cache, so
# the comparison is of the measuring side alone. Each run starts without stored reference outputs
# (the cache's reference/ folder is emptied first), so each pays GREEN's fixed part once, shared by
# its workers. Prints each run's evaluations per second and their ratio (issue 20: >= 1.8), then
# compares each run's verdicts and medians with the one-GPU run's, configuration by configuration.
#   scripts/gpu-devices.sh [PROFILE] [BUDGET] [DEVICE SETS]   # default sdpa_fp8, its whole space, "0 all"
# e.g. scripts/gpu-devices.sh gemm_fp16 1000 "0 0,1 all". The rates go to $OUT/rates_PROFILE.txt.
set -uo pipefail
OUT="${OUT:-/tmp/evo-out}"
mkdir -p "$OUT"
export EVO_BINARY="$PWD/bundle/evo" EVO_CACHE="${EVO_CACHE:-/tmp/evo-cache-devices}"
prof="${1:-sdpa_fp8}" budget="${2:-1000}" sets="${3:-0 all}"
log() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$OUT/session.log"; }
log "gpus: $(nvidia-smi --query-gpu=index,name --format=csv,noheader | paste -sd';')"
t0=$(date +%s%N); bundle/evo compile "$prof" --all >"$OUT/compile.txt" 2>&1
log "warm compile cache: $(( ($(date +%s%N) - t0) / 1000000 )) ms, $(tail -n 1 "$OUT/compile.txt")"
declare -A rate
for d in $sets; do
  rm -f "d_$d.db"*
  rm -rf "$EVO_CACHE/reference"
  t0=$(date +%s%N)
  bundle/evo --db "d_$d.db" run --profile "$prof" --strategy exhaustive --budget "$budget" --devices "$d" \
    --no-sanitize -q >"$OUT/run_${prof}_$d.txt" 2>&1
  rc=$? ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  new=$(grep -oE '^run [0-9]+ [a-z]+ \([^)]*\): [0-9]+ new' "$OUT/run_${prof}_$d.txt" | grep -oE '[0-9]+ new' | grep -oE '[0-9]+')
  rate[$d]=$(awk -v n="${new:-0}" -v ms="$ms" 'BEGIN { printf "%.3f", (ms > 0 ? 1000 * n / ms : 0) }')
  log "$prof devices $d: rc=$rc wall=$ms ms, ${new:-0} new, ${rate[$d]} evaluations/s; $(grep -E '^run|^pipeline|^time' "$OUT/run_${prof}_$d.txt" | paste -sd' ')"
  log "devices $d: reference store $(find "$EVO_CACHE/reference" -name '*.out' 2>/dev/null | wc -l) outputs, $(find "$EVO_CACHE/reference" -name '*.fill' 2>/dev/null | wc -l) fills, $(du -sh "$EVO_CACHE/reference" 2>/dev/null | cut -f1); warnings: $(grep -c 'trial store' "$OUT/run_${prof}_$d.txt")"
  bundle/evo --db "d_$d.db" export-landscape 1 --to "$OUT/landscape_$d.json" >/dev/null 2>&1
  cp "$OUT/landscape_$d.json" "$OUT/landscape_${prof}_$d.json"
done
for d in $sets; do
  [ "$d" = 0 ] && continue
  log "$prof: devices $d: $(awk -v a="${rate[0]}" -v b="${rate[$d]}" 'BEGIN { printf "%.2f", (a > 0 ? b / a : 0) }')x one GPU's evaluations/s"
  python3 scripts/compare-landscapes.py "$OUT/landscape_0.json" "$OUT/landscape_$d.json" "one GPU" these | tee -a "$OUT/session.log"
done
for d in $sets; do echo "$prof $d ${rate[$d]}"; done >> "$OUT/rates_$prof.txt"
(cd "$OUT" && tar czf /tmp/devices.tgz --exclude=session.log . && mv /tmp/devices.tgz devices.tgz &&
  find . -mindepth 1 -maxdepth 1 ! -name devices.tgz ! -name session.log -exec rm -rf {} +)
