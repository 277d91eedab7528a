#!/usr/bin/env bash
# Call B (sixteenth session, 1 x H200): every GPU test on the build with compile workers started anew
# (131f3e9: each test's compile pool now starts evo_tests again as its workers, so every GPU test's
# compiles go through the new path), then the README's main job from an empty database and a cold
# cache. Predicted: every GPU test passes (71 passed, 5 skipped on 4d2b861, call A of scale14, 267 s)
# and StartingAWorkerCopiesNoneOfTheRunsMemory with them; the main job 12-14 s (13.3 s in scale14's
# call A on 1 x H200). carry ["bundle.tar.xz"].
set -u; export PYTHONUNBUFFERED=1
T0=$(date +%s)
[ -x bundle/evo ] && [ bundle/evo -nt bundle.tar.xz ] || { rm -rf bundle; tar xJf bundle.tar.xz; }
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/b.tgz -C $S . ; }
export EVO_BINARY=$PWD/bundle/evo LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-}
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpus: $(nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader | paste -sd';'), $(nproc) cores"
EVO_CACHE=/tmp/b-tests timeout 480 bundle/evo_tests \
  --gtest_filter='Gpu*:GreenCompareOnDevice.*:MetricGpu*:BuiltinCache*:WorkerProtocol.*:Buffers.*:SdpaRef*:*OnDevice*:PoolWorker.*:PoolCli.*:CompilePool.*' \
  > $S/gpu_tests.txt 2>&1
log "gpu tests rc=$? after $(( $(date +%s) - T0 )) s: $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' $S/gpu_tests.txt | paste -sd' ' | cut -c1-600)"
grep -E "^\[  FAILED|: Failure" -A6 $S/gpu_tests.txt | head -60 | tee -a $S/log.txt
grep -E '^\[  SKIPPED' -B3 $S/gpu_tests.txt | grep -iE 'skip|needs' | head -10 >> $S/log.txt
pack
left=$(( 580 - ($(date +%s) - T0) ))
if [ $left -gt 40 ]; then
  rm -rf /tmp/b-main; mkdir -p /tmp/b-main; t0=$(date +%s%N)
  (cd /tmp/b-main && EVO_CACHE=/tmp/b-main/cache timeout $left $OLDPWD/bundle/evo run --budget 200 > $S/main.txt 2>&1)
  log "main job: rc=$? $(( ($(date +%s%N) - t0) / 1000000 )) ms; $(grep -E '^run|^best|^time|^pipeline' $S/main.txt | paste -sd' ' | cut -c1-600)"
fi
log "done after $(( $(date +%s) - T0 )) s"; pack
