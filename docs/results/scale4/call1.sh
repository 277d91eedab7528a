#!/usr/bin/env bash
# Call 1 (4 GPUs of one host): the same exhaustive sweeps on 1, 2 and 4 GPUs with metrics taking
# turns (the default), then on 4 GPUs with EVO_METRICS_CONCURRENT=1 (no host-wide lock), for
# sdpa_fp8 and gemm_fp16. Predictions: predictions.md. From the repository root, carry ["bundle"].
set -u; export PYTHONUNBUFFERED=1
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/c1.tgz -C $S . ; }
export EVO_BINARY=$PWD/bundle/evo LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-}
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpus: $(nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader | paste -sd';'), $(nproc) cores"
sweep() {  # name, timeout, profile, sets, env...
  local name=$1 t=$2 prof=$3 sets=$4; shift 4
  env "$@" OUT=$S/$name EVO_CACHE=/tmp/c-$prof timeout $t bash scripts/gpu-devices.sh $prof 1000 "$sets" > /dev/null 2>&1
  log "$name: rc=$?"
  grep -E "warm compile|devices|x one GPU|configs:|median ratio" $S/$name/session.log | cut -c1-400 | tee -a $S/log.txt; pack
}
sweep sdpa 240 sdpa_fp8 "0 0,1 all"
sweep sdpa_conc 70 sdpa_fp8 "all" EVO_METRICS_CONCURRENT=1
sweep gemm 200 gemm_fp16 "0 0,1 all"
sweep gemm_conc 60 gemm_fp16 "all" EVO_METRICS_CONCURRENT=1
log done
