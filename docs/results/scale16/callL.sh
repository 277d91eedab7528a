#!/usr/bin/env bash
# Call L (seventeenth session, 4 x H200): the issue's protocol whole on the session's build (7e9114a,
# the faster reference): sdpa_fp8 and gemm_fp16 exhaustively on 1, 2 and 4 GPUs
# (scripts/gpu-devices.sh PROF 1000 "0 0,1 all", the pool, a warm cache, the reference store emptied
# before each run), three passes, the two profiles alternated.
# Predicted: gemm_fp16 1.95-2.05x on 2 GPUs and 3.65-3.85x on 4 (scale15: 1.97-2.03, 3.65-3.83);
# sdpa_fp8 1.87-1.97x on 2 and 3.65-3.80x on 4 (scale15: 1.87-1.96, 3.54-3.79; calls I-J 3.66-3.81);
# sdpa's 2-GPU ratio may fall below 1.9 (one of scale15's three did). carry ["bundle.tar.xz"].
set -u; export PYTHONUNBUFFERED=1
T0=$(date +%s)
[ -x bundle/evo ] && [ bundle/evo -nt bundle.tar.xz ] || { rm -rf bundle; tar xJf bundle.tar.xz; }
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/l.tgz -C $S . ; }
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpus: $(nvidia-smi --query-gpu=index,name --format=csv,noheader | paste -sd';'), $(nproc) cores"
export EVO_BINARY=$PWD/bundle/evo LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-} EVO_POOL_DIR=/tmp/l-pool
bundle/evo pool start --devices all > $S/pool.txt 2>&1; log "pool: rc=$? $(grep -c ready $S/pool.txt) ready"
for pass in 1 2 3; do for prof in sdpa_fp8 gemm_fp16; do
  n=${prof}_pass$pass; left=$(( 420 - ($(date +%s) - T0) )); [ $left -lt 50 ] && { log "$n skipped"; continue; }
  EVO_POOL=1 OUT=$S/$n EVO_CACHE=/tmp/l-$prof timeout $left bash scripts/gpu-devices.sh $prof 1000 "0 0,1 all" > /dev/null 2>&1
  log "$n: rc=$? $(grep -E "devices [0-9a-z,]+: rc|x one GPU|verdicts differing|median" $S/$n/session.log | sed -E 's/evaluations.s;.*//' | cut -c1-160 | paste -sd' ')"
  pack
done; done
bundle/evo pool stop >> $S/log.txt 2>&1
log "done after $(( $(date +%s) - T0 )) s"; pack
