#!/usr/bin/env bash
# Call A (fifteenth session, one H200): the whole GPU suite on the fourteenth session's final build
# (4d2b861: the lane queue, the fills' checksum, the compile time limit), which call W could not run,
# then the README's main job from an empty database and a cold cache (bar: <= 20 s; call R 14.4 s).
# carry ["bundle.tar.xz"].
set -u
T0=$(date +%s)
[ -x bundle/evo ] && [ bundle/evo -nt bundle.tar.xz ] || { rm -rf bundle; tar xJf bundle.tar.xz; }
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/a.tgz -C $S . ; }
export EVO_BINARY=$PWD/bundle/evo LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-}
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpu: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | paste -sd';'), $(nproc) cores, head $(cat .git/HEAD 2>/dev/null | cut -c1-12)"
EVO_CACHE=/tmp/a-tests timeout 480 bundle/evo_tests --gtest_filter='Gpu*:GreenCompareOnDevice.*:MetricGpu*:BuiltinCache*:WorkerProtocol.*:Buffers.*:SdpaRef*:*OnDevice*:PoolWorker.*:PoolCli.*' > $S/gpu_tests.txt 2>&1
log "gpu tests rc=$? after $(( $(date +%s) - T0 )) s: $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' $S/gpu_tests.txt | paste -sd' ' | cut -c1-900)"
grep -E "^\[  FAILED|: Failure" -A6 $S/gpu_tests.txt | head -60 | tee -a $S/log.txt
grep -E "^\[       OK \] (GpuGreenSafety.Exhaustive|GpuReferenceStore|GpuTensorMap|PoolWorker|BuiltinCache)" $S/gpu_tests.txt | tee -a $S/log.txt
pack
left=$(( 570 - ($(date +%s) - T0) ))
if [ $left -gt 40 ]; then
  rm -rf /tmp/a-main; mkdir -p /tmp/a-main; t0=$(date +%s%N)
  (cd /tmp/a-main && EVO_CACHE=/tmp/a-main/cache timeout $left $OLDPWD/bundle/evo run --budget 200 > $S/main_job.txt 2>&1)
  log "main job: rc=$? wall $(( ($(date +%s%N) - t0) / 1000000 )) ms: $(grep -E '^run |^time|^pipeline|dropped' $S/main_job.txt | paste -sd' ' | cut -c1-600)"
  (cd /tmp/a-main && $OLDPWD/bundle/evo db check 2>&1 | tail -2) >> $S/log.txt
fi
log "done after $(( $(date +%s) - T0 )) s"; pack
