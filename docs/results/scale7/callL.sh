#!/usr/bin/env bash
# Call L (4 GPUs of one host, `nvidia-h100-x4`; SETS="0 0,1" on a 2-GPU host, call M): issue 35's
# sweeps on 1, 2 and 4 GPUs with this
# session's changes (the faster integrity scan, the kept CUPTI session at the run's end, the
# inputs drawn on every core at once); sdpa_fp8 on 1 and 4 GPUs with the binary before them
# (bundle_b) in the same call; the README's main job from an empty database and a cold cache;
# then the GPU tests (GREEN's fault tests, every GpuGates and GpuCli test, the metrics and guards).
# carry ["bundle.tar.xz", "bundle_b.tar.xz"].
set -u; export PYTHONUNBUFFERED=1
T0=$(date +%s)
rm -rf bundle bundle_b; tar xJf bundle.tar.xz; mkdir -p bundle_b && tar xJf bundle_b.tar.xz -C bundle_b --strip-components=1
SETS=${SETS:-0 0,1 all}; BEFORE=${BEFORE:-0 all}
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/l.tgz -C $S . ; }
export EVO_BINARY=$PWD/bundle/evo LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-}
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpus: $(nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader | paste -sd';'), $(nproc) cores"

sweep() {  # name, timeout, profile, sets, env...
  local name=$1 t=$2 prof=$3 sets=$4; shift 4
  env "$@" EVO_METRICS_TIMES=$S/$name.times.jsonl EVO_GREEN_TIMES=$S/$name.green.jsonl OUT=$S/$name EVO_CACHE=/tmp/l-$prof \
    timeout $t bash scripts/gpu-devices.sh $prof 1000 "$sets" > /dev/null 2>&1
  log "$name: rc=$?"
  grep -E "warm compile|devices|x one GPU|configs:|median ratio" $S/$name/session.log | cut -c1-760 | tee -a $S/log.txt
  pack
}
sweep sdpa 170 sdpa_fp8 "$SETS"
sweep gemm 130 gemm_fp16 "$SETS"
mv bundle bundle_new; mv bundle_b bundle
sweep sdpa_before 120 sdpa_fp8 "$BEFORE"
mv bundle bundle_b; mv bundle_new bundle
python3 scripts/compare-landscapes.py $S/sdpa_before/landscape_0.json $S/sdpa/landscape_0.json before now 2>/dev/null | tee -a $S/log.txt || true

t0=$(date +%s%N)
EVO_CACHE=/tmp/l-main timeout 120 bundle/evo --db $S/main.db run --budget 200 > $S/main_job.txt 2>&1
log "main job (evo run --budget 200, empty db, cold cache, every GPU of the host): rc=$? $(( ($(date +%s%N) - t0) / 1000000 )) ms; $(grep -E '^run [0-9]|^best|^pipeline|^time|profile ' $S/main_job.txt | paste -sd' ' | cut -c1-700)"
rm -f $S/*.db-* $S/*.db; pack

EVO_CACHE=/tmp/l-tests timeout 330 bundle/evo_tests --gtest_filter='GpuGreenSafety.*:GuardedDevice.*:GpuGates.*:GpuCli.*:MetricGpu.*' > $S/gpu_tests.txt 2>&1
log "gpu tests rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' $S/gpu_tests.txt | paste -sd' ')"
grep -E "^\[  FAILED|Failure|Which is|Value of|Expected|\[kill" $S/gpu_tests.txt | head -40 | tee -a $S/log.txt
log "done after $(( $(date +%s) - T0 )) s"; pack
