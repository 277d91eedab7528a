#!/usr/bin/env bash
# Call K (eleventh session, one H100): the README's main job (`evo run --budget 200`, an empty
# database and a cold compile cache) with the metrics in each GPU's profiling worker, without a pool
# and with one; issue 35 asks for <= 20 s on an H100.
# carry ["bundle.tar.xz"].
set -u; export PYTHONUNBUFFERED=1
T0=$(date +%s)
[ -x bundle/evo ] && [ bundle/evo -nt bundle.tar.xz ] || { rm -rf bundle; tar xJf bundle.tar.xz; }
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/k.tgz -C $S . ; }
export EVO_BINARY=$PWD/bundle/evo LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-}
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpu: $(nvidia-smi --query-gpu=name,driver_version,persistence_mode --format=csv,noheader | paste -sd';'), $(nproc) cores"
for mode in nopool pool; do
  rm -rf /tmp/k-main; mkdir -p /tmp/k-main
  [ $mode = pool ] && EVO_POOL_DIR=/tmp/k-pool bundle/evo pool start > $S/pool_start.txt 2>&1
  t0=$(date +%s%N)
  (cd /tmp/k-main && EVO_POOL_DIR=/tmp/k-pool EVO_CACHE=/tmp/k-main/cache EVO_TRACE=$S/main_$mode.trace.jsonl $OLDPWD/bundle/evo run --budget 200 > $S/main_job_$mode.txt 2>&1)
  log "main job, $mode: rc=$? wall $(( ($(date +%s%N) - t0) / 1000000 )) ms: $(grep -E '^run |^time|metrics of|got no metrics|pool' $S/main_job_$mode.txt | paste -sd' ' | cut -c1-400)"
  (cd /tmp/k-main && $OLDPWD/bundle/evo show-elites 2>&1 | head -8) >> $S/log.txt
done
EVO_POOL_DIR=/tmp/k-pool bundle/evo pool stop >> $S/log.txt 2>&1
log "done after $(( $(date +%s) - T0 )) s"; pack
