#!/usr/bin/env bash
# Call F (nineteenth session, 2 x H200): call E again, three more pairs (one call's three pairs are one
# sample of the host; the bar is read on the median of every pair). Call E:: two queue workers over PostgreSQL against `--devices 0,1`
# after the queue worker posts on a thread of its own and holds fewer claims ahead (the bar:
# the queue >= 0.9x; call D: 0.94, 0.88, 0.86x). scripts/gpu-queue.sh sdpa_fp8 1000 three times (each pair
# alternated inside: --devices 0,1, then the queue), PostgreSQL 15 carried as pgdist.tar.xz.
# Predicted: as call E, 0.93-1.0x a pair.
# carry ["bundle.tar.xz", "pgdist.tar.xz"].
set -u; export PYTHONUNBUFFERED=1
T0=$(date +%s)
[ -x bundle/evo ] && [ bundle/evo -nt bundle.tar.xz ] || { rm -rf bundle; tar xJf bundle.tar.xz; }
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/f.tgz -C $S . ; }
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpus: $(nvidia-smi --query-gpu=index,name --format=csv,noheader | paste -sd';'), $(nproc) cores"
for i in 1 2 3; do
  left=$(( 560 - ($(date +%s) - T0) )); [ $left -lt 60 ] && break
  OUT=$S/q$i EVO_CACHE=/tmp/f-cache timeout $left bash scripts/gpu-queue.sh sdpa_fp8 1000 > /dev/null 2>&1
  log "pair $i: rc=$?"; grep -E "devices 0,1:|queue, 2|queue/devices|verdicts|worker [01]:" $S/q$i/session.log | cut -c1-260 | tee -a $S/log.txt
  rm -f $S/q$i/landscape_*.json
  pack
done
log "done after $(( $(date +%s) - T0 )) s"; pack
