#!/usr/bin/env bash
# Call M (one GPU, eighth session): every GPU test of the session's final code (the new dtypes touch
# fills, poison, GREEN's comparison and argument packing on every path). carry ["bundle.tar.xz"].
set -u; export PYTHONUNBUFFERED=1
T0=$(date +%s)
[ -x bundle/evo ] && [ bundle/evo -nt bundle.tar.xz ] || { rm -rf bundle; tar xJf bundle.tar.xz; }
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/m.tgz -C $S . ; }
export EVO_BINARY=$PWD/bundle/evo LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-}
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpu: $(nvidia-smi --query-gpu=name --format=csv,noheader | paste -sd';')"
EVO_CACHE=/tmp/m-tests timeout ${TESTS_S:-540} bundle/evo_tests --gtest_filter='Gpu*:GreenCompareOnDevice.*:MetricGpu*:BuiltinCache*:WorkerProtocol.*:Buffers.*:SdpaRef*:*OnDevice*' > $S/gpu_tests.txt 2>&1
log "gpu tests rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' $S/gpu_tests.txt | paste -sd' ')"
grep -E "^\[  FAILED|Failure|Which is|Value of|Expected" $S/gpu_tests.txt | head -30 | tee -a $S/log.txt
log "done after $(( $(date +%s) - T0 )) s"; pack
