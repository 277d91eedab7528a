#!/usr/bin/env bash
# Call F (2 GPUs of one host, `nvidia-h100-x2`): the run's end profiles its 10 best on every GPU at
# once (GpuEvaluator::collect_metrics_of). The GPU tests of the change; then the exhaustive sweeps
# of issue 35 on 1 and 2 GPUs (warm compile cache, reference store emptied before each run), once
# with the passes taking turns at the host's metrics lock (the default) and once without it
# (EVO_METRICS_CONCURRENT=1), each collection's steps logged (EVO_METRICS_TIMES).
# carry ["bundle.tar.xz"].
set -u; export PYTHONUNBUFFERED=1
T0=$(date +%s)
[ -f bundle.tar.xz ] && { rm -rf bundle; tar xJf bundle.tar.xz; }
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/f.tgz -C $S . ; }
export EVO_BINARY=$PWD/bundle/evo LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-}
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpus: $(nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader | paste -sd';'), $(nproc) cores"

EVO_CACHE=/tmp/f-tests timeout 150 bundle/evo_tests --gtest_filter='GpuGates.MetricsAtTheRunsEnd*:GpuGates.MetricsDeferred*:GpuGates.MetricsOnlyNearTheRunsBest' > $S/gpu_tests.txt 2>&1
log "gpu tests rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' $S/gpu_tests.txt | paste -sd' ')"
grep -E "^\[  FAILED|^\[       OK|Failure|Which is|Value of|Expected|answer " $S/gpu_tests.txt | head -30 | tee -a $S/log.txt; pack

sweep() {  # name, timeout, profile, sets, env...
  local name=$1 t=$2 prof=$3 sets=$4; shift 4
  env "$@" EVO_METRICS_TIMES=$S/$name.times.jsonl OUT=$S/$name EVO_CACHE=/tmp/f-$prof timeout $t bash scripts/gpu-devices.sh $prof 1000 "$sets" > /dev/null 2>&1
  log "$name: rc=$?"
  grep -E "warm compile|devices|x one GPU|configs:|median ratio" $S/$name/session.log | cut -c1-700 | tee -a $S/log.txt
  pack
}
sweep sdpa 150 sdpa_fp8 "0 0,1"
sweep sdpa_concurrent 60 sdpa_fp8 "0,1" EVO_METRICS_CONCURRENT=1
sweep gemm 100 gemm_fp16 "0 0,1"
sweep gemm_concurrent 40 gemm_fp16 "0,1" EVO_METRICS_CONCURRENT=1
log "done after $(( $(date +%s) - T0 )) s"; pack
