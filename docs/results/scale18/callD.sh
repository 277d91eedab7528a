#!/usr/bin/env bash
# Call D (nineteenth session, 2 x H200): two queue workers over PostgreSQL against `--devices 0,1`
# on the build of 286e996+ (the bar: the queue >= 0.9x), last measured in scale9 (0.94x, when
# --devices 0,1 measured 35.7 a second). scripts/gpu-queue.sh sdpa_fp8 1000 three times (each pair
# alternated inside: --devices 0,1, then the queue), PostgreSQL 15 carried as pgdist.tar.xz.
# Predicted: both sides gained GREEN's memoizations alike (the queue worker runs the same job code);
# --devices 0,1 without the pool 40-45 a second, the queue 0.90-1.00x of it; verdicts identical.
# carry ["bundle.tar.xz", "pgdist.tar.xz"].
set -u; export PYTHONUNBUFFERED=1
T0=$(date +%s)
[ -x bundle/evo ] && [ bundle/evo -nt bundle.tar.xz ] || { rm -rf bundle; tar xJf bundle.tar.xz; }
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/d.tgz -C $S . ; }
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpus: $(nvidia-smi --query-gpu=index,name --format=csv,noheader | paste -sd';'), $(nproc) cores"
for i in 1 2 3; do
  left=$(( 560 - ($(date +%s) - T0) )); [ $left -lt 60 ] && break
  OUT=$S/q$i EVO_CACHE=/tmp/d-cache timeout $left bash scripts/gpu-queue.sh sdpa_fp8 1000 > /dev/null 2>&1
  log "pair $i: rc=$?"; grep -E "devices 0,1:|queue, 2|queue/devices|verdicts|worker [01]:" $S/q$i/session.log | cut -c1-260 | tee -a $S/log.txt
  rm -f $S/q$i/landscape_*.json
  pack
done
log "done after $(( $(date +%s) - T0 )) s"; pack
