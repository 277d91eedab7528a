#!/usr/bin/env bash
# Call B (eighteenth session, 4 x H200): the protocol as the project's rule has it, medians
# of alternated runs: scripts/gpu-devices.sh PROF 1000 "0 0,1 all" 3 (the pool, a warm compile cache,
# the reference store emptied before each run; the sets take turns, three runs each), sdpa_fp8 then
# gemm_fp16, every verdict compared with the first one-GPU run's.
# Predicted (calls L, M, A: single pairs 1.87-2.02x for sdpa on two GPUs, 3.66-3.81x on four; gemm
# 1.93-2.01x and 3.62-3.77x): ratios of medians sdpa_fp8 1.93-1.99x and 3.70-3.80x, gemm_fp16
# 1.95-2.02x and 3.62-3.78x; no verdict differing; median ratio of medians within 1 +- 0.01.
# carry ["bundle.tar.xz"].
set -u; export PYTHONUNBUFFERED=1
T0=$(date +%s)
[ -x bundle/evo ] && [ bundle/evo -nt bundle.tar.xz ] || { rm -rf bundle; tar xJf bundle.tar.xz; }
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/b.tgz -C $S . ; }
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpus: $(nvidia-smi --query-gpu=index,name --format=csv,noheader | paste -sd';'), $(nproc) cores"
export EVO_BINARY=$PWD/bundle/evo LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-} EVO_POOL_DIR=/tmp/b-pool
bundle/evo pool start --devices all > $S/pool.txt 2>&1; log "pool: rc=$? $(grep -c ready $S/pool.txt) ready"
for prof in sdpa_fp8 gemm_fp16; do
  left=$(( 540 - ($(date +%s) - T0) )); [ $left -lt 60 ] && { log "$prof skipped"; continue; }
  EVO_POOL=1 OUT=$S/$prof EVO_CACHE=/tmp/b-$prof timeout $left bash scripts/gpu-devices.sh $prof 1000 "0 0,1 all" 3 > /dev/null 2>&1
  log "$prof: rc=$?"; grep -E "evaluations/s|verdicts differing|median ratio" $S/$prof/session.log | sed -E 's/; run [0-9]+ .*//' | cut -c1-200 | tee -a $S/log.txt
  pack
done
bundle/evo pool stop >> $S/log.txt 2>&1
log "done after $(( $(date +%s) - T0 )) s"; pack
