#!/usr/bin/env bash
# Call U (`nvidia-h100-x1`: one H100): the README's main job from an empty database and a cold
# compile cache, twice (the second with EVO_TRACE, to see where its seconds go, the end included),
# then the GPU tests. carry ["bundle.tar.xz"].
set -u; export PYTHONUNBUFFERED=1
T0=$(date +%s)
rm -rf bundle; tar xJf bundle.tar.xz
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/u.tgz -C $S . ; }
export EVO_BINARY=$PWD/bundle/evo LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-}
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpus: $(nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader | paste -sd';'), $(nproc) cores"
main_job() {  # name, env...
  local name=$1; shift
  rm -rf /tmp/u-main-$name; t0=$(date +%s%N)
  env "$@" EVO_CACHE=/tmp/u-main-$name timeout 120 bundle/evo --db $S/$name.db run --budget 200 > $S/$name.txt 2>&1
  log "$name (evo run --budget 200, empty db, cold cache): rc=$? $(( ($(date +%s%N) - t0) / 1000000 )) ms; $(grep -E '^run [0-9]|^best|^pipeline|^time' $S/$name.txt | paste -sd' ' | cut -c1-700)"
  rm -f $S/*.db-* $S/*.db; pack
}
main_job main1
main_job main2 EVO_TRACE=$S/main2.trace.jsonl
EVO_CACHE=/tmp/u-tests timeout 420 bundle/evo_tests --gtest_filter='GpuGreenSafety.*:GuardedDevice.*:GpuGates.*:GpuCli.*:MetricGpu.*:BuiltinCache*' > $S/gpu_tests.txt 2>&1
log "gpu tests rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' $S/gpu_tests.txt | paste -sd' ')"
grep -E "^\[  FAILED|Failure|Which is|Value of|Expected|\[kill" $S/gpu_tests.txt | head -40 | tee -a $S/log.txt
log "done after $(( $(date +%s) - T0 )) s"; pack
