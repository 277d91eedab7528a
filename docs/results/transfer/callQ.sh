#!/usr/bin/env bash
# Call Q (one GPU, ninth session): every GPU test with the measurement's setup in its identity
# (schema v4; GpuCli.AProblemResizedIsMeasuredAgainNotReadBack among them) and transfer; then the
# README's main job from an empty database and a cold cache (its wall against the 20 s of issue 35,
# now that each run hashes the profile's setup). carry ["bundle.tar.xz"].
set -u; export PYTHONUNBUFFERED=1
T0=$(date +%s)
[ -x bundle/evo ] && [ bundle/evo -nt bundle.tar.xz ] || { rm -rf bundle; tar xJf bundle.tar.xz; }
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/q.tgz -C $S . ; }
export EVO_BINARY=$PWD/bundle/evo LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-}
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpu: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | paste -sd';')"
EVO_CACHE=/tmp/q-tests timeout 420 bundle/evo_tests --gtest_filter='Gpu*:GreenCompareOnDevice.*:MetricGpu*:BuiltinCache*:WorkerProtocol.*:Buffers.*:SdpaRef*:*OnDevice*' > $S/gpu_tests.txt 2>&1
log "gpu tests rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' $S/gpu_tests.txt | paste -sd' ')"
grep -E "^\[  FAILED|Failure" $S/gpu_tests.txt | head | tee -a $S/log.txt
grep -E "AProblemResized" $S/gpu_tests.txt | tee -a $S/log.txt
pack
rm -rf /tmp/q-main; mkdir -p /tmp/q-main
t0=$(date +%s%N)
(cd /tmp/q-main && EVO_CACHE=/tmp/q-main/cache $OLDPWD/bundle/evo run --budget 200 > $S/main_job.txt 2>&1)
log "main job rc=$? wall $(( ($(date +%s%N) - t0) / 1000000 )) ms: $(grep -E '^run |^time' $S/main_job.txt | paste -sd' ' | cut -c1-400)"
log "done after $(( $(date +%s) - T0 )) s"; pack
