#!/usr/bin/env bash
# Call E (nineteenth session, 2 x H200): two queue workers over PostgreSQL against `--devices 0,1`
# after the queue worker posts on a thread of its own and holds fewer claims ahead (the bar:
# the queue >= 0.9x; call D: 0.94, 0.88, 0.86x). scripts/gpu-queue.sh sdpa_fp8 1000 three times (each pair
# alternated inside: --devices 0,1, then the queue), PostgreSQL 15 carried as pgdist.tar.xz.
# Predicted: call D's queue runs spent 9.5 s after the workers' start for 7.3 s of GPU a GPU: about
# 1.3 s of it the tail (160 and 192 candidates: one worker measured 32 more while the other, holding
# nothing, waited; each held 33 claims ahead) and 0.3-0.5 s posting and claiming between measurements
# (a commit each). Now at most 3 claims ahead while compiles keep up, and posts overlap the next
# measurement: the queue's wall 10.0 -> 8.8-9.2 s, 0.95-1.0x of --devices 0,1; verdicts identical.
# carry ["bundle.tar.xz", "pgdist.tar.xz"].
set -u; export PYTHONUNBUFFERED=1
T0=$(date +%s)
[ -x bundle/evo ] && [ bundle/evo -nt bundle.tar.xz ] || { rm -rf bundle; tar xJf bundle.tar.xz; }
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/e.tgz -C $S . ; }
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpus: $(nvidia-smi --query-gpu=index,name --format=csv,noheader | paste -sd';'), $(nproc) cores"
for i in 1 2 3; do
  left=$(( 560 - ($(date +%s) - T0) )); [ $left -lt 60 ] && break
  OUT=$S/q$i EVO_CACHE=/tmp/e-cache timeout $left bash scripts/gpu-queue.sh sdpa_fp8 1000 > /dev/null 2>&1
  log "pair $i: rc=$?"; grep -E "devices 0,1:|queue, 2|queue/devices|verdicts|worker [01]:" $S/q$i/session.log | cut -c1-260 | tee -a $S/log.txt
  rm -f $S/q$i/landscape_*.json
  pack
done
log "done after $(( $(date +%s) - T0 )) s"; pack
