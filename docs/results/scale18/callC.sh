#!/usr/bin/env bash
# Call C (nineteenth session, 4 x H200, lent later in the session): the protocol on one, two and four GPUs
# on the build of 286e996, the pool:
# gemm_fp16 then sdpa_fp8, scripts/gpu-devices.sh PROF 1000 "0 0,1 all" 3 each (calls A, B had two GPUs:
# sdpa_fp8 1.95x, 1.93x; gemm_fp16 1.99x).
# Predicted: as scale17 call C (086dcb7: sdpa_fp8 2.01x / 3.80x, gemm_fp16 1.94x / 3.73x), GREEN now
# 1.25 ms shorter a candidate (a20b53c) on every GPU alike: ratios within their 2-8 % spread, all four at
# or above 1.9x and 3.6x;
# every verdict identical to the first one-GPU run's.
# carry ["bundle.tar.xz"].
set -u; export PYTHONUNBUFFERED=1
T0=$(date +%s)
[ -x bundle/evo ] && [ bundle/evo -nt bundle.tar.xz ] || { rm -rf bundle; tar xJf bundle.tar.xz; }
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/c.tgz -C $S . ; }
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpus: $(nvidia-smi --query-gpu=index,name --format=csv,noheader | paste -sd';'), $(nproc) cores"
export EVO_BINARY=$PWD/bundle/evo LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-} EVO_POOL_DIR=/tmp/c-pool
bundle/evo pool start --devices all > $S/pool.txt 2>&1; log "pool: rc=$? $(grep -c ready $S/pool.txt) ready"
for prof in gemm_fp16 sdpa_fp8; do
  left=$(( 560 - ($(date +%s) - T0) ))
  EVO_POOL=1 OUT=$S/$prof EVO_CACHE=/tmp/c-$prof timeout $left bash scripts/gpu-devices.sh $prof 1000 "0 0,1 all" 3 > /dev/null 2>&1
  log "$prof: rc=$?"; grep -E "evaluations/s|verdicts differing" $S/$prof/session.log | sed -E 's/; run [0-9]+ .*//' | cut -c1-200 | tee -a $S/log.txt
  rm -f $S/$prof/landscape_*_[23].json
  pack
done
bundle/evo pool stop >> $S/log.txt 2>&1
log "done after $(( $(date +%s) - T0 )) s"; pack
