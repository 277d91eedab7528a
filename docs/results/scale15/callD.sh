#!/usr/bin/env bash
# Call D (sixteenth session, 4 x H200, 64 cores): two more passes of the issue's protocol on the head
# (131f3e9, compile workers started anew), after call C's one pass gave gemm_fp16 1.97x / 3.65x and
# sdpa_fp8 1.87x / 3.54x on 2 / 4 GPUs (its 1-GPU sdpa_fp8 run at 24.3 evaluations/s, faster than any
# of scale14 call C's three, 22.7-23.1, while its 4-GPU run, 85.9, lay inside theirs, 82.7-88.4).
# Predicted: the change touches no warm-cache path, so as scale14's call C: gemm_fp16 3.6-3.9x,
# sdpa_fp8 3.5-3.8x on 4 GPUs, 1.9-2.1x on 2; verdicts identical, medians within 0.3 %.
# carry ["bundle.tar.xz"].
set -u; export PYTHONUNBUFFERED=1
T0=$(date +%s)
[ -x bundle/evo ] && [ bundle/evo -nt bundle.tar.xz ] || { rm -rf bundle; tar xJf bundle.tar.xz; }
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/d.tgz -C $S . ; }
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpus: $(nvidia-smi --query-gpu=index,name --format=csv,noheader | paste -sd';'), $(nproc) cores"
export EVO_BINARY=$PWD/bundle/evo LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-} EVO_POOL_DIR=/tmp/d-pool
bundle/evo pool start --devices all > $S/pool.txt 2>&1; log "pool: rc=$? $(grep -c ready $S/pool.txt) ready"
for pass in 2 3; do for prof in gemm_fp16 sdpa_fp8; do
  n=${prof}_pass$pass; left=$(( 540 - ($(date +%s) - T0) )); [ $left -lt 40 ] && { log "$n skipped"; continue; }
  EVO_POOL=1 OUT=$S/$n EVO_CACHE=/tmp/d-$prof timeout $left bash scripts/gpu-devices.sh $prof 1000 "0 0,1 all" > /dev/null 2>&1
  log "$n: rc=$? $(grep -E "devices [0-9a-z,]+: rc|x one GPU|verdicts differing|median" $S/$n/session.log | sed -E 's/evaluations.s;.*//' | cut -c1-160 | paste -sd' ')"
  pack
done; done
bundle/evo pool stop >> $S/log.txt 2>&1
log "done after $(( $(date +%s) - T0 )) s"; pack
