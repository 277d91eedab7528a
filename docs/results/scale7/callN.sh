#!/usr/bin/env bash
# Call N (one H100, `nvidia-h100-x1`): the coordinator now draws GREEN's inputs into the trial
# store while the workers start (store_fills_ahead; EVO_FILLS_AHEAD=0 leaves them to the workers).
# The GPU tests of what changed since call K (the moats, CUPTI's set-up ahead, the fills), then
# sdpa_fp8 on one GPU with the fills drawn ahead and without, alternated, and the README's main
# job on an H100 (issue 35: <= 20 s). carry ["bundle.tar.xz"].
set -u; export PYTHONUNBUFFERED=1
T0=$(date +%s)
rm -rf bundle; tar xJf bundle.tar.xz
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/n.tgz -C $S . ; }
export EVO_BINARY=$PWD/bundle/evo LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-}
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpus: $(nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader | paste -sd';'), $(nproc) cores"

t0=$(date +%s%N)
EVO_CACHE=/tmp/n-main timeout 100 bundle/evo --db $S/main.db run --budget 200 > $S/main_job.txt 2>&1
log "main job (evo run --budget 200, empty db, cold cache, one H100): rc=$? $(( ($(date +%s%N) - t0) / 1000000 )) ms; $(grep -E '^run [0-9]|^best|^pipeline|^time|profile ' $S/main_job.txt | paste -sd' ' | cut -c1-700)"
rm -f $S/*.db-* $S/*.db; pack

EVO_CACHE=/tmp/n-sdpa bundle/evo compile sdpa_fp8 --all > /dev/null 2>&1
i=0
for mode in ahead workers ahead workers; do
  i=$((i+1)); env=""; [ $mode = workers ] && env="EVO_FILLS_AHEAD=0"
  rm -rf /tmp/n-sdpa/reference $S/r.db*
  t0=$(date +%s%N)
  env $env EVO_GREEN_TIMES=$S/green_${i}_$mode.jsonl EVO_CACHE=/tmp/n-sdpa timeout 120 bundle/evo --db $S/r.db run --profile sdpa_fp8 \
    --strategy exhaustive --budget 1000 --devices 0 --no-sanitize -q > $S/sweep_${i}_$mode.txt 2>&1
  log "$i $mode: rc=$? $(( ($(date +%s%N) - t0) / 1000000 )) ms; $(grep -E '^run [0-9]|^time' $S/sweep_${i}_$mode.txt | paste -sd' ' | cut -c1-400)"
  bundle/evo --db $S/r.db export-landscape 1 --to $S/landscape_${i}_$mode.json > /dev/null 2>&1
done
python3 scripts/compare-landscapes.py $S/landscape_1_ahead.json $S/landscape_2_workers.json ahead workers | tee -a $S/log.txt
rm -f $S/*.db $S/*.db-*; pack

EVO_CACHE=/tmp/n-tests timeout 320 bundle/evo_tests --gtest_filter='GpuGreenSafety.*:GuardedDevice.*:GpuGates.*:GpuCli.*:MetricGpu.*' > $S/gpu_tests.txt 2>&1
log "gpu tests rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' $S/gpu_tests.txt | paste -sd' ')"
grep -E "^\[  FAILED|Failure|Which is|Value of|Expected|\[kill" $S/gpu_tests.txt | head -40 | tee -a $S/log.txt
log "done after $(( $(date +%s) - T0 )) s"; pack
