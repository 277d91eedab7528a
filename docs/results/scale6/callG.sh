#!/usr/bin/env bash
# Call G (2 GPUs of one host, `nvidia-h100-x2`), after call F: the run's end now profiles on every
# GPU without the host's metrics lock (call F's "no lock" column), and the copy tests of
# test_metrics.cpp share their buffer set-up. The GPU tests of both, GREEN's fault tests, the killed
# worker; then the two sweeps on 1 and 2 GPUs with the code as it now is.
# carry ["bundle.tar.xz"].
set -u; export PYTHONUNBUFFERED=1
T0=$(date +%s)
[ -f bundle.tar.xz ] && { rm -rf bundle; tar xJf bundle.tar.xz; }
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/g.tgz -C $S . ; }
export EVO_BINARY=$PWD/bundle/evo LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-}
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpus: $(nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader | paste -sd';'), $(nproc) cores"

EVO_CACHE=/tmp/g-tests timeout 300 bundle/evo_tests --gtest_filter='MetricGpu.*:GpuGates.Metrics*:GpuGreenSafety.*:GuardedDevice.*:GpuCli.AWorkerKilled*' > $S/gpu_tests.txt 2>&1
log "gpu tests rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' $S/gpu_tests.txt | paste -sd' ')"
grep -E "^\[  FAILED|^\[       OK|Failure|Which is|Value of|Expected" $S/gpu_tests.txt | head -40 | tee -a $S/log.txt; pack

sweep() {  # name, timeout, profile, sets, env...
  local name=$1 t=$2 prof=$3 sets=$4; shift 4
  env "$@" EVO_METRICS_TIMES=$S/$name.times.jsonl OUT=$S/$name EVO_CACHE=/tmp/g-$prof timeout $t bash scripts/gpu-devices.sh $prof 1000 "$sets" > /dev/null 2>&1
  log "$name: rc=$?"
  grep -E "warm compile|devices|x one GPU|configs:|median ratio" $S/$name/session.log | cut -c1-700 | tee -a $S/log.txt
  pack
}
sweep sdpa 150 sdpa_fp8 "0 0,1"
sweep gemm 100 gemm_fp16 "0 0,1"
log "done after $(( $(date +%s) - T0 )) s"; pack
