#!/usr/bin/env bash
# Call R (fourteenth session, one H200): what the thirteenth session built without a GPU, run on one.
# 1. The GPU suite (the budget's end and the scheduled sweep run inside GpuGreenSafety's exhaustive
#    test and the CLI tests).
# 2. The README's main job from an empty database and a cold cache (200 of 352: the budget's end on
#    a real compile pool; before: 15.6 s, call P on an H100).
# 3. Kernel Tuner's convolution as it is, the default strategy at 68 evaluations, cold cache, 3 seeds
#    (issue 35: 1.72-2.61x the bound on an H100's host before the budget's end).
# carry ["bundle.tar.xz", "examples/kernel_tuner/kernels"].
set -u; export PYTHONUNBUFFERED=1
T0=$(date +%s)
[ -x bundle/evo ] && [ bundle/evo -nt bundle.tar.xz ] || { rm -rf bundle; tar xJf bundle.tar.xz; }
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/r.tgz -C $S . ; }
export EVO_BINARY=$PWD/bundle/evo LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-}
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpu: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | paste -sd';'), $(nproc) cores"
rm -rf /tmp/r-main; mkdir -p /tmp/r-main; t0=$(date +%s%N)
(cd /tmp/r-main && EVO_CACHE=/tmp/r-main/cache $OLDPWD/bundle/evo run --budget 200 > $S/main_job.txt 2>&1)
log "main job: rc=$? wall $(( ($(date +%s%N) - t0) / 1000000 )) ms: $(grep -E '^run |^time|^pipeline|dropped' $S/main_job.txt | paste -sd' ' | cut -c1-600)"
(cd /tmp/r-main && $OLDPWD/bundle/evo db check 2>&1 | tail -2) >> $S/log.txt
for seed in 1 2 3; do
  t0=$(date +%s%N)
  EVO_CACHE=/tmp/r-conv$seed timeout 150 bundle/evo --db $S/conv$seed.db run --profile examples/kernel_tuner/convolution.json \
    --budget 68 --seed $seed --devices 0 > $S/conv$seed.txt 2>&1
  log "conv default seed $seed: rc=$? $(( ($(date +%s%N) - t0) / 1000000 )) ms; $(grep -E '^run [0-9]|^best|^pipeline|^time|dropped' $S/conv$seed.txt | paste -sd' ' | cut -c1-700)"
  bundle/evo --db $S/conv$seed.db db check 2>&1 | tail -1 >> $S/log.txt; pack
done
left=$(( 560 - ($(date +%s) - T0) ))
log "GPU tests with ${left} s left"
EVO_CACHE=/tmp/r-tests timeout $left bundle/evo_tests --gtest_filter='Gpu*:GreenCompareOnDevice.*:MetricGpu*:BuiltinCache*:WorkerProtocol.*:Buffers.*:SdpaRef*:*OnDevice*:PoolWorker.*:PoolCli.*' > $S/gpu_tests.txt 2>&1
log "gpu tests rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' $S/gpu_tests.txt | paste -sd' ' | cut -c1-900)"
grep -E "^\[  FAILED|: Failure" -A6 $S/gpu_tests.txt | head -60 | tee -a $S/log.txt
grep -E "^\[       OK \] GpuGreenSafety.Exhaustive" $S/gpu_tests.txt | tee -a $S/log.txt
log "done after $(( $(date +%s) - T0 )) s"; pack
