#!/usr/bin/env bash
# Runs on a machine with several GPUs (device tool kind nvidia-h200-x2, carry ["bundle"], from the
# repository root; scripts/bundle.sh here first): the same exhaustive sweep of one profile measured
# on one GPU and on every GPU (`--devices all`), from fresh databases over a warm compile cache, so
# the comparison is of the measuring side alone. Each run starts without stored reference outputs
# (the cache's reference/ folder is emptied first), so each pays GREEN's fixed part once, shared by
# its workers. Prints each run's evaluations per second and their ratio, then compares each run's
# verdicts and medians with the first one-GPU run's, configuration by configuration.
#   scripts/gpu-devices.sh [PROFILE] [BUDGET] [DEVICE SETS] [REPEAT]   # default sdpa_fp8, its whole space, "0 all", 1
# e.g. scripts/gpu-devices.sh gemm_fp16 1000 "0 0,1 all" 3. With REPEAT > 1 the sets take turns
# (0, 0,1, all, 0, 0,1, all, ...) and the ratio quoted is of the median rates: one run of a
# 7-second sweep moves by 2-3 % from run to run on the same GPUs (docs/results/scale17), so a
# single pair of runs is a single timing. Every run's rate and its pair's ratio are printed too.
# The rates go to $OUT/rates_PROFILE.txt ("PROFILE SET RATE", one line a run).
set -uo pipefail
OUT="${OUT:-/tmp/evo-out}"
mkdir -p "$OUT"
export EVO_BINARY="$PWD/bundle/evo" EVO_CACHE="${EVO_CACHE:-/tmp/evo-cache-devices}"
prof="${1:-sdpa_fp8}" budget="${2:-1000}" sets="${3:-0 all}" repeat="${4:-1}"
log() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$OUT/session.log"; }
log "gpus: $(nvidia-smi --query-gpu=index,name --format=csv,noheader | paste -sd';')"
t0=$(date +%s%N); bundle/evo compile "$prof" --all >"$OUT/compile.txt" 2>&1
log "warm compile cache: $(( ($(date +%s%N) - t0) / 1000000 )) ms, $(tail -n 1 "$OUT/compile.txt")"
declare -A rate  # rate[set,repetition]
first=${sets%% *}
for r in $(seq 1 "$repeat"); do
  for d in $sets; do
    tag="${d}_$r"; [ "$repeat" = 1 ] && tag="$d"
    rm -f "d_$d.db"*
    rm -rf "$EVO_CACHE/reference"
    t0=$(date +%s%N)
    bundle/evo --db "d_$d.db" run --profile "$prof" --strategy exhaustive --budget "$budget" --devices "$d" \
      --no-sanitize -q >"$OUT/run_${prof}_$tag.txt" 2>&1
    rc=$? ms=$(( ($(date +%s%N) - t0) / 1000000 ))
    new=$(grep -oE '^run [0-9]+ [a-z]+ \([^)]*\): [0-9]+ new' "$OUT/run_${prof}_$tag.txt" | grep -oE '[0-9]+ new' | grep -oE '[0-9]+')
    rate[$d,$r]=$(awk -v n="${new:-0}" -v ms="$ms" 'BEGIN { printf "%.3f", (ms > 0 ? 1000 * n / ms : 0) }')
    log "$prof devices $d (run $r of $repeat): rc=$rc wall=$ms ms, ${new:-0} new, ${rate[$d,$r]} evaluations/s; $(grep -E '^run|^pipeline|^time' "$OUT/run_${prof}_$tag.txt" | paste -sd' ')"
    log "devices $d: reference store $(find "$EVO_CACHE/reference" -name '*.out' 2>/dev/null | wc -l) outputs, $(find "$EVO_CACHE/reference" -name '*.fill' 2>/dev/null | wc -l) fills, $(du -sh "$EVO_CACHE/reference" 2>/dev/null | cut -f1); warnings: $(grep -c 'trial store' "$OUT/run_${prof}_$tag.txt")"
    bundle/evo --db "d_$d.db" export-landscape 1 --to "$OUT/landscape_$tag.json" >/dev/null 2>&1
    cp "$OUT/landscape_$tag.json" "$OUT/landscape_${prof}_$tag.json"
  done
  for d in $sets; do
    [ "$d" = "$first" ] || [ "$repeat" = 1 ] && continue
    log "$prof: devices $d, run $r: $(awk -v a="${rate[$first,$r]}" -v b="${rate[$d,$r]}" 'BEGIN { printf "%.2f", (a > 0 ? b / a : 0) }')x devices $first's evaluations/s of the same turn"
  done
done
median() { tr ' ' '\n' | sort -g | awk '{ v[NR] = $1 } END { printf "%.3f", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
declare -A med
for d in $sets; do
  all=""; for r in $(seq 1 "$repeat"); do all="$all ${rate[$d,$r]}"; done
  med[$d]=$(echo $all | median)
  [ "$repeat" = 1 ] || log "$prof devices $d: median ${med[$d]} evaluations/s of$all"
done
ref="landscape_$first"; [ "$repeat" = 1 ] || ref="landscape_${first}_1"
for d in $sets; do
  [ "$d" = "$first" ] && continue
  log "$prof: devices $d: $(awk -v a="${med[$first]}" -v b="${med[$d]}" 'BEGIN { printf "%.2f", (a > 0 ? b / a : 0) }')x devices $first's evaluations/s$([ "$repeat" = 1 ] || echo " (medians of $repeat runs each)")"
done
for d in $sets; do
  for r in $(seq 1 "$repeat"); do
    tag="${d}_$r"; [ "$repeat" = 1 ] && tag="$d"
    [ "landscape_$tag" = "$ref" ] && continue
    log "verdicts and medians, devices $d run $r against devices $first run 1:"
    python3 scripts/compare-landscapes.py "$OUT/$ref.json" "$OUT/landscape_$tag.json" "devices $first" these | tee -a "$OUT/session.log"
  done
done
for d in $sets; do for r in $(seq 1 "$repeat"); do echo "$prof $d ${rate[$d,$r]}"; done; done >> "$OUT/rates_$prof.txt"
(cd "$OUT" && tar czf /tmp/devices.tgz --exclude=session.log . && mv /tmp/devices.tgz devices.tgz &&
  find . -mindepth 1 -maxdepth 1 ! -name devices.tgz ! -name session.log -exec rm -rf {} +)
