#!/usr/bin/env bash
# Call F (tenth session, one GPU; every GPU test ran in call E on 4 x H200): whether a worker CUPTI never touched times as a fresh one does: a pool started without its CUPTI
# warm-up (EVO_METRICS_PREWARM=0) against no pool, sdpa_fp8 exhaustive with --no-metrics, alternated
# twice (calls C and D: +0.3 % on sdpa_fp8's medians with a pool whose workers had used CUPTI);
# the README's main job from an empty database and a cold cache, without a pool and then with one.
# carry ["bundle.tar.xz"].
set -u; export PYTHONUNBUFFERED=1
T0=$(date +%s)
[ -x bundle/evo ] && [ bundle/evo -nt bundle.tar.xz ] || { rm -rf bundle; tar xJf bundle.tar.xz; }
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/f.tgz -C $S . ; }
export EVO_BINARY=$PWD/bundle/evo LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-}
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpu: $(nvidia-smi --query-gpu=name,driver_version,persistence_mode --format=csv,noheader | paste -sd';'), $(nproc) cores"
export EVO_METRICS_PREWARM=0
EVO_POOL_DIR=/tmp/f-pool bundle/evo pool start > $S/pool_start.txt 2>&1
log "pool without CUPTI: rc=$? $(grep -c ready $S/pool_start.txt) ready"
bundle/evo --cache /tmp/f-sdpa compile sdpa_fp8 --all > /dev/null 2>&1
for r in 1 2; do
  for mode in nopool pool; do
    n=${mode}_$r; env="EVO_POOL=0"; [ $mode = pool ] && env="EVO_POOL_DIR=/tmp/f-pool"
    rm -rf /tmp/f-sdpa/reference; rm -f $n.db*
    t0=$(date +%s%N)
    env $env timeout 100 bundle/evo --db $n.db --cache /tmp/f-sdpa run --profile sdpa_fp8 --strategy exhaustive --budget 1000 --no-metrics --no-sanitize -q > $S/run_$n.txt 2>&1
    log "$n: rc=$? wall $(( ($(date +%s%N) - t0) / 1000000 )) ms $(grep -c "pool's warm worker" $S/run_$n.txt) attached"
    bundle/evo --db $n.db export-landscape 1 --to $S/landscape_$n.json > /dev/null 2>&1
  done
done
EVO_POOL_DIR=/tmp/f-pool bundle/evo pool stop >> $S/log.txt 2>&1; unset EVO_METRICS_PREWARM
pack
for mode in nopool pool; do
  rm -rf /tmp/f-main; mkdir -p /tmp/f-main
  [ $mode = pool ] && EVO_POOL_DIR=/tmp/f-pool2 bundle/evo pool start > $S/pool2_start.txt 2>&1
  t0=$(date +%s%N)
  (cd /tmp/f-main && EVO_POOL_DIR=/tmp/f-pool2 EVO_CACHE=/tmp/f-main/cache $OLDPWD/bundle/evo run --budget 200 > $S/main_job_$mode.txt 2>&1)
  log "main job, $mode: rc=$? wall $(( ($(date +%s%N) - t0) / 1000000 )) ms: $(grep -E '^run |^time' $S/main_job_$mode.txt | paste -sd' ' | cut -c1-300)"
done
EVO_POOL_DIR=/tmp/f-pool2 bundle/evo pool stop >> $S/log.txt 2>&1
log "done after $(( $(date +%s) - T0 )) s"; pack
