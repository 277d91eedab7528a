#!/usr/bin/env bash
# Call U (fourteenth session, 2 x H200): the issue's protocol on this session's build (each GPU's
# next candidate queued): scripts/gpu-devices.sh with the pool, gemm_fp16 and sdpa_fp8 on 1 and 2
# GPUs, twice (call Q on 4 x H200: 2 GPUs 1.94-1.96x gemm_fp16, 1.90-1.96x sdpa_fp8); traced, with
# GREEN's steps (EVO_GREEN_TIMES) to see where the first candidate's GREEN goes.
# carry ["bundle.tar.xz"].
set -u; export PYTHONUNBUFFERED=1
T0=$(date +%s)
[ -x bundle/evo ] && [ bundle/evo -nt bundle.tar.xz ] || { rm -rf bundle; tar xJf bundle.tar.xz; }
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/u.tgz -C $S . ; }
export EVO_BINARY=$PWD/bundle/evo LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-}
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpus: $(nvidia-smi --query-gpu=index,name,persistence_mode --format=csv,noheader | paste -sd';'), $(nproc) cores"
export EVO_POOL_DIR=/tmp/u-pool
t0=$(date +%s%N); bundle/evo pool start --devices all > $S/pool_start.txt 2>&1
log "pool start: rc=$? $(( ($(date +%s%N) - t0) / 1000000 )) ms; $(grep -c ready $S/pool_start.txt) ready"
for pass in pool pool2; do
  for prof in gemm_fp16 sdpa_fp8; do
    n=${prof}_$pass
    EVO_POOL=1 EVO_GREEN_TIMES=$S/$n.green.jsonl EVO_TRACE=$S/$n.trace.jsonl OUT=$S/$n EVO_CACHE=/tmp/u-$prof \
      timeout 150 bash scripts/gpu-devices.sh $prof 1000 "0 0,1" > /dev/null 2>&1
    log "$n: rc=$? $(grep -E "devices [0-9a-z,]+: rc|x one GPU|verdicts differing|median" $S/$n/session.log | sed -E 's/evaluations.s;.*//' | cut -c1-160 | paste -sd' ')"
    pack
  done
done
bundle/evo pool stop >> $S/log.txt 2>&1
log "done after $(( $(date +%s) - T0 )) s"; pack
