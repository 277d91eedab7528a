#!/usr/bin/env bash
# Call P (twenty-sixth session, 2 x H200): the protocol on two GPUs on the build of be3e058 (no change
# on a candidate's path since scale18; the search default moved, which an exhaustive sweep does not use), the pool:
# gemm_fp16 then sdpa_fp8, scripts/gpu-devices.sh PROF 1000 "0 0,1" 3 each (call A had sdpa_fp8's
# first three turns: 1.95x; scale18 call B: gemm_fp16 1.99x, sdpa_fp8 1.93x).
# Predicted: as scale18 call B within its 2-5 % spread: gemm_fp16 1.92-2.00x at 88-93 ev/s on one GPU;
# sdpa_fp8 1.90-2.00x at 23.5-25.5 ev/s; every verdict identical to the first one-GPU run's.
# carry ["bundle.tar.xz"].
set -u; export PYTHONUNBUFFERED=1
T0=$(date +%s)
[ -x bundle/evo ] && [ bundle/evo -nt bundle.tar.xz ] || { rm -rf bundle; tar xJf bundle.tar.xz; }
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/p.tgz -C $S . ; }
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpus: $(nvidia-smi --query-gpu=index,name --format=csv,noheader | paste -sd';'), $(nproc) cores"
export EVO_BINARY=$PWD/bundle/evo LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-} EVO_POOL_DIR=/tmp/p-pool
bundle/evo pool start --devices all > $S/pool.txt 2>&1; log "pool: rc=$? $(grep -c ready $S/pool.txt) ready"
for prof in gemm_fp16 sdpa_fp8; do
  left=$(( 560 - ($(date +%s) - T0) ))
  EVO_POOL=1 OUT=$S/$prof EVO_CACHE=/tmp/p-$prof timeout $left bash scripts/gpu-devices.sh $prof 1000 "0 0,1" 3 > /dev/null 2>&1
  log "$prof: rc=$?"; grep -E "evaluations/s|verdicts differing" $S/$prof/session.log | sed -E 's/; run [0-9]+ .*//' | cut -c1-200 | tee -a $S/log.txt
  rm -f $S/$prof/landscape_*_[23].json
  pack
done
bundle/evo pool stop >> $S/log.txt 2>&1
log "done after $(( $(date +%s) - T0 )) s"; pack
