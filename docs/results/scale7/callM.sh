#!/usr/bin/env bash
# Call M (2 GPUs of one host; asked as `nvidia-h200-x2`: call L's PLANT=5 hole was on 2 x H200):
# guarded buffers now sit between unmapped moats (DeviceBuffer::moated) and the worker prepares
# CUPTI's set-up on a thread of its own. The GPU tests first (GREEN's fault tests, the guards, every
# GpuGates and GpuCli test, the metrics), then the sweeps on 1 and 2 GPUs and the main job.
# carry ["bundle.tar.xz"].
set -u; export PYTHONUNBUFFERED=1
T0=$(date +%s)
rm -rf bundle; tar xJf bundle.tar.xz
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/m.tgz -C $S . ; }
export EVO_BINARY=$PWD/bundle/evo LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-}
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpus: $(nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader | paste -sd';'), $(nproc) cores"

EVO_CACHE=/tmp/m-tests timeout 300 bundle/evo_tests --gtest_filter='GpuGreenSafety.*:GuardedDevice.*:GpuGates.*:GpuCli.*:MetricGpu.*' > $S/gpu_tests.txt 2>&1
log "gpu tests rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' $S/gpu_tests.txt | paste -sd' ')"
grep -E "^\[  FAILED|Failure|Which is|Value of|Expected|\[kill|PLANT=5" $S/gpu_tests.txt | head -40 | tee -a $S/log.txt; pack

sweep() {  # name, timeout, profile, sets, env...
  local name=$1 t=$2 prof=$3 sets=$4; shift 4
  env "$@" EVO_METRICS_TIMES=$S/$name.times.jsonl EVO_GREEN_TIMES=$S/$name.green.jsonl OUT=$S/$name EVO_CACHE=/tmp/m-$prof \
    timeout $t bash scripts/gpu-devices.sh $prof 1000 "$sets" > /dev/null 2>&1
  log "$name: rc=$?"
  grep -E "warm compile|devices|x one GPU|configs:|median ratio" $S/$name/session.log | cut -c1-760 | tee -a $S/log.txt
  pack
}
sweep sdpa 120 sdpa_fp8 "0 0,1"
sweep gemm 90 gemm_fp16 "0 0,1"
t0=$(date +%s%N)
EVO_CACHE=/tmp/m-main timeout 100 bundle/evo --db $S/main.db run --budget 200 > $S/main_job.txt 2>&1
log "main job (evo run --budget 200, empty db, cold cache, every GPU of the host): rc=$? $(( ($(date +%s%N) - t0) / 1000000 )) ms; $(grep -E '^run [0-9]|^best|^pipeline|^time|profile ' $S/main_job.txt | paste -sd' ' | cut -c1-700)"
rm -f $S/*.db-* $S/*.db; log "done after $(( $(date +%s) - T0 )) s"; pack
