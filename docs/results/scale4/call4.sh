#!/usr/bin/env bash
# Call 4 (2 GPUs of one host), after call 2 found the queue workers paying a CUPTI pass for every
# candidate (the coordinator's metrics thresholds never reached them; mended in queue_evaluator.cpp):
# the queue against --devices 0,1 again; the GPU test call 2's time limit cut
# (MetricGpu.AUnitOfTwoLaunchesCountsBothOrTheOneNamed); the README's main job from an empty database
# and a cold cache. carry ["bundle.tar.xz", "pgdist.tar.xz"].
set -u; export PYTHONUNBUFFERED=1
[ -f bundle.tar.xz ] && { rm -rf bundle; tar xJf bundle.tar.xz; }
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/c4.tgz -C $S . ; }
export EVO_BINARY=$PWD/bundle/evo LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-}
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpus: $(nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader | paste -sd';'), $(nproc) cores"
EVO_CACHE=/tmp/c4-tests timeout 60 bundle/evo_tests --gtest_filter='MetricGpu.*' > $S/gpu_tests.txt 2>&1
log "gpu tests rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' $S/gpu_tests.txt | paste -sd' ')"
grep -E "^\[  FAILED|^\[       OK|Failure|Which is|Value of|Expected" $S/gpu_tests.txt | head -20 | tee -a $S/log.txt; pack
OUT=$S/queue EVO_CACHE=/tmp/c4-sdpa timeout 200 bash scripts/gpu-queue.sh sdpa_fp8 1000 > /dev/null 2>&1
log "queue: rc=$?"; cat $S/queue/session.log >> $S/log.txt; tail -n 8 $S/queue/session.log; pack
t0=$(date +%s%N)
EVO_CACHE=/tmp/c4-main timeout 90 bundle/evo --db $S/main.db run --budget 200 > $S/main_job.txt 2>&1
log "main job (evo run --budget 200, empty db, cold cache): rc=$? $(( ($(date +%s%N) - t0) / 1000000 )) ms; $(grep -E '^run [0-9]|^best|^pipeline|^time' $S/main_job.txt | paste -sd' ' | cut -c1-600)"
log done; pack
