#!/usr/bin/env bash
# Call Y (the same 2-GPU host as call X, warm): how far the whole-process ratio moves from pair to
# pair. Three more pairs of each sweep, one GPU and two alternating first (scripts/gpu-devices.sh:
# warm compile cache, reference store emptied before each run). carry ["bundle.tar.xz"].
set -u; export PYTHONUNBUFFERED=1
T0=$(date +%s)
[ -x bundle/evo ] && [ bundle/evo -nt bundle.tar.xz ] || { rm -rf bundle; tar xJf bundle.tar.xz; }
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/y.tgz -C $S . ; }
export EVO_BINARY=$PWD/bundle/evo LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-}
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpus: $(nvidia-smi --query-gpu=index,name,persistence_mode --format=csv,noheader | paste -sd';'), $(nproc) cores"
for i in 1 2 3; do
  for prof in sdpa_fp8 gemm_fp16; do
    sets="0 0,1"; [ $((i % 2)) = 0 ] && sets="0,1 0"
    OUT=$S/${prof}_$i EVO_CACHE=/tmp/x-$prof timeout 90 bash scripts/gpu-devices.sh $prof 1000 "$sets" > /dev/null 2>&1
    log "$prof pair $i ($sets): rc=$? $(grep -E "devices [0-9,]+: rc|x one GPU|verdicts differing|median ratio" $S/${prof}_$i/session.log | sed -E 's/;.*pipeline/ ... pipeline/' | cut -c1-300 | paste -sd' ')"
    pack
  done
done
log "done after $(( $(date +%s) - T0 )) s"; pack
