#!/usr/bin/env bash
# Call C (4 GPUs of one host), after calls A and B: the GPU tests of what changed after them (an L2
# flush before each metrics pass, the default list's 2 passes, workers probed at once); the same
# sweeps as call A (sdpa_fp8, gemm_fp16 on 1, 2, 4 GPUs); the default strategy with metrics by user
# and by kernel replay; the README's main job; then Kernel Tuner's matmul, exhaustive from a cold
# cache on every GPU with the time it needs to finish its space (call B's 240 s reached 481 of 525).
# carry ["bundle.tar.xz", "examples/kernel_tuner/kernels"].
set -u; export PYTHONUNBUFFERED=1
T0=$(date +%s)
[ -f bundle.tar.xz ] && { rm -rf bundle; tar xJf bundle.tar.xz; }
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/c.tgz -C $S . ; }
export EVO_BINARY=$PWD/bundle/evo LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-}
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpus: $(nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader | paste -sd';'), $(nproc) cores"

EVO_CACHE=/tmp/c-tests timeout 120 bundle/evo_tests --gtest_filter='MetricGpu.*:GpuGates.Fp8Attention*:GpuGates.Metrics*:GpuGreenSafety.ExhaustiveRunOnEveryDevice*:GpuCli.AWorkerKilled*' > $S/gpu_tests.txt 2>&1
log "gpu tests rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' $S/gpu_tests.txt | paste -sd' ')"
grep -E "^\[  FAILED|^\[       OK|Failure|Which is|Value of|Expected|dram__bytes_read" $S/gpu_tests.txt | head -40 | tee -a $S/log.txt; pack

sweep() {  # name, timeout, profile, sets, env...
  local name=$1 t=$2 prof=$3 sets=$4; shift 4
  env "$@" OUT=$S/$name EVO_CACHE=/tmp/c-$prof timeout $t bash scripts/gpu-devices.sh $prof 1000 "$sets" > /dev/null 2>&1
  log "$name: rc=$?"
  grep -E "warm compile|devices|x one GPU|configs:|median ratio" $S/$name/session.log | cut -c1-600 | tee -a $S/log.txt
  pack
}
sweep sdpa 120 sdpa_fp8 "0 0,1 all"
sweep gemm 90 gemm_fp16 "0 0,1 all"

for mode in user kernel; do
  t0=$(date +%s%N)
  EVO_METRICS_REPLAY=$mode EVO_CACHE=/tmp/c-sdpa_fp8 timeout 90 bundle/evo --db $S/m_$mode.db run --profile sdpa_fp8 \
    --budget 60 --seed 1 --devices 0 --no-sanitize -q > $S/m_$mode.txt 2>&1
  log "metrics by $mode replay, default strategy 60: rc=$? $(( ($(date +%s%N) - t0) / 1000000 )) ms; $(grep -E '^run|^pipeline|^time' $S/m_$mode.txt | paste -sd' ' | cut -c1-500)"
  bundle/evo --db $S/m_$mode.db export-landscape 1 --to $S/landscape_m_$mode.json > /dev/null 2>&1
done; pack

t0=$(date +%s%N)
EVO_CACHE=/tmp/c-main timeout 90 bundle/evo --db $S/main.db run --budget 200 > $S/main_job.txt 2>&1
log "main job (evo run --budget 200, empty db, cold cache): rc=$? $(( ($(date +%s%N) - t0) / 1000000 )) ms; $(grep -E '^run [0-9]|^best|^pipeline|^time|profile ' $S/main_job.txt | paste -sd' ' | cut -c1-700)"
pack

left=$(( 575 - ($(date +%s) - T0) ))
log "matmul, exhaustive, cold cache, every GPU, --time-limit $((left - 20)) s"
t0=$(date +%s%N)
EVO_CACHE=/tmp/c-matmul timeout $left bundle/evo --db $S/matmul.db run --profile examples/kernel_tuner/matmul.json \
  --strategy exhaustive --budget 5000 --devices all --time-limit $((left - 20)) > $S/matmul.txt 2>&1
log "matmul: rc=$? $(( ($(date +%s%N) - t0) / 1000000 )) ms; $(grep -E '^run [0-9]|^best|^pipeline|^time' $S/matmul.txt | paste -sd' ' | cut -c1-600)"
bundle/evo --db $S/matmul.db export-landscape 1 --to $S/landscape_matmul.json > /dev/null 2>&1
bundle/evo --db $S/matmul.db db check >> $S/log.txt 2>&1
rm -f $S/*.db-* $S/*.db; log "done after $(( $(date +%s) - T0 )) s"; pack
