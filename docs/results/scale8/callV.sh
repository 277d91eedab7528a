#!/usr/bin/env bash
# Call V (4 GPUs of one host): call T again after the knob space enumerates without maps; the workers asked to quit all at once; CUPTI's set-up made ahead only where a run collects metrics as it measures; after the cached key
# digests, the end's metrics on one GPU, the probes at once, the contexts made after the probe and
# the baseline's own lane not re-timed: issue 35's exhaustive sweeps of
# sdpa_fp8 and gemm_fp16 on 1, 2 and 4 GPUs in one call (scripts/gpu-devices.sh: warm compile
# cache, reference store emptied before each run), the README's main job from an empty database
# and a cold cache on every GPU (PART=sweeps, the default); PART=tests: the GPU tests.
# carry ["bundle.tar.xz"].
set -u; export PYTHONUNBUFFERED=1
T0=$(date +%s)
[ -x bundle/evo ] && [ bundle/evo -nt bundle.tar.xz ] || { rm -rf bundle; tar xJf bundle.tar.xz; }
SETS=${SETS:-0 0,1 all}
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/v_${PART:-sweeps}.tgz -C $S . ; }
export EVO_BINARY=$PWD/bundle/evo LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-}
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpus: $(nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader | paste -sd';'), $(nproc) cores"

sweep() {  # name, timeout, profile, sets, env...
  local name=$1 t=$2 prof=$3 sets=$4; shift 4
  env "$@" EVO_METRICS_TIMES=$S/$name.times.jsonl EVO_GREEN_TIMES=$S/$name.green.jsonl EVO_TRACE=$S/$name.trace.jsonl \
    OUT=$S/$name EVO_CACHE=/tmp/v-$prof timeout $t bash scripts/gpu-devices.sh $prof 1000 "$sets" > /dev/null 2>&1
  log "$name: rc=$?"
  grep -E "warm compile|devices|x one GPU|configs:|median ratio" $S/$name/session.log | cut -c1-760 | tee -a $S/log.txt
  pack
}
if [ "${PART:-sweeps}" = sweeps ]; then
sweep sdpa 200 sdpa_fp8 "$SETS"
sweep gemm 150 gemm_fp16 "$SETS"
# the same again in the other order: how far one run's wall moves from the next
sweep sdpa2 150 sdpa_fp8 "$(echo $SETS | tr ' ' '\n' | tac | paste -sd' ')"
sweep gemm2 120 gemm_fp16 "$(echo $SETS | tr ' ' '\n' | tac | paste -sd' ')"

t0=$(date +%s%N)
EVO_CACHE=/tmp/v-main timeout 120 bundle/evo --db $S/main.db run --budget 200 > $S/main_job.txt 2>&1
log "main job (evo run --budget 200, empty db, cold cache, every GPU of the host): rc=$? $(( ($(date +%s%N) - t0) / 1000000 )) ms; $(grep -E '^run [0-9]|^best|^pipeline|^time|profile ' $S/main_job.txt | paste -sd' ' | cut -c1-700)"
rm -f $S/*.db-* $S/*.db; pack
log "done after $(( $(date +%s) - T0 )) s"; pack; exit 0
fi

EVO_CACHE=/tmp/v-tests timeout ${TESTS_S:-330} bundle/evo_tests --gtest_filter='GpuGreenSafety.*:GuardedDevice.*:GpuGates.*:GpuCli.*:MetricGpu.*:BuiltinCache*' > $S/gpu_tests.txt 2>&1
log "gpu tests rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' $S/gpu_tests.txt | paste -sd' ')"
grep -E "^\[  FAILED|Failure|Which is|Value of|Expected|\[kill" $S/gpu_tests.txt | head -40 | tee -a $S/log.txt
log "done after $(( $(date +%s) - T0 )) s"; pack
