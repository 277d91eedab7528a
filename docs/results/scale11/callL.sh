#!/usr/bin/env bash
# Call L (eleventh session, one GPU, the last of the device budget): every GPU test on the session's
# final build (call H ran them all before the last two changes; calls I and J the pool's, the
# metrics' and the reference store's). Bounded so that the results come back within the budget.
# carry ["bundle.tar.xz"].
set -u
T0=$(date +%s)
[ -x bundle/evo ] && [ bundle/evo -nt bundle.tar.xz ] || { rm -rf bundle; tar xJf bundle.tar.xz; }
S=$OUT/s; mkdir -p $S
export EVO_BINARY=$PWD/bundle/evo LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-}
echo "gpu: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" > $S/log.txt
EVO_CACHE=/tmp/l-tests timeout 250 bundle/evo_tests --gtest_filter='Gpu*:GreenCompareOnDevice.*:MetricGpu*:BuiltinCache*:WorkerProtocol.*:Buffers.*:SdpaRef*:*OnDevice*:PoolWorker.*:PoolCli.*' > $S/gpu_tests.txt 2>&1
echo "gpu tests rc=$? after $(( $(date +%s) - T0 )) s" >> $S/log.txt
grep -E '^\[  (PASSED|FAILED|SKIPPED) ' $S/gpu_tests.txt >> $S/log.txt
grep -E "^\[  FAILED|Failure" -A6 $S/gpu_tests.txt | head -40 >> $S/log.txt
grep -E "^\[ RUN|^\[       OK" $S/gpu_tests.txt | tail -2 >> $S/log.txt
tar czf $OUT/l.tgz -C $S .
