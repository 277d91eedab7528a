#!/usr/bin/env bash
# Call E (sixteenth session, 4 x H200): where sdpa_fp8's 4-GPU runs lose against one GPU. In calls C
# and D, GPU seconds summed grew 14.3 s (1 GPU) -> 15.4 s (4 GPUs), all of it GREEN (4.6 -> 5.5 s;
# FAST 9.1 s in both): each GPU makes its own trials' reference outputs (57 trials), as the default
# has it since scale11 measured gemm_fp16's reference launches cheaper than the outputs' trip through
# the disk. Here the same protocol ("0 all") alternated without and with EVO_REFERENCE_STORE=1
# (outputs made once per host, shared through the store), two of each, GREEN's steps recorded.
# Predicted: if the reference kernel is the extra, the 4-GPU GREEN sum falls 5.5 -> 4.8-5.0 s and the
# ratio rises 0.1-0.2x; if the trip costs as much, no change. Without the pool (a pool's workers
# serve runs of their own environment only), so each run starts its workers. carry ["bundle.tar.xz"].
set -u; export PYTHONUNBUFFERED=1
T0=$(date +%s)
[ -x bundle/evo ] && [ bundle/evo -nt bundle.tar.xz ] || { rm -rf bundle; tar xJf bundle.tar.xz; }
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/e.tgz -C $S . ; }
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpus: $(nvidia-smi --query-gpu=index,name --format=csv,noheader | paste -sd';'), $(nproc) cores"
export EVO_BINARY=$PWD/bundle/evo LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-}
for pass in 1 2; do for share in 0 1; do
  n=sdpa_share${share}_$pass; left=$(( 500 - ($(date +%s) - T0) )); [ $left -lt 40 ] && { log "$n skipped"; continue; }
  EVO_REFERENCE_STORE=$share EVO_GREEN_TIMES=$S/$n.green.jsonl OUT=$S/$n EVO_CACHE=/tmp/e-sdpa \
    timeout $left bash scripts/gpu-devices.sh sdpa_fp8 1000 "0 all" > /dev/null 2>&1
  log "$n: rc=$? $(grep -E "devices [0-9a-z,]+: rc|x one GPU|verdicts differing|median|reference store" $S/$n/session.log | sed -E 's/evaluations.s;.*//' | cut -c1-200 | paste -sd' ')"
  log "$n: $(grep -ohE 'time: compile [^;]*' $S/$n/session.log | paste -sd' | ')"
  pack
done; done
log "done after $(( $(date +%s) - T0 )) s"; pack
