#!/usr/bin/env bash
# Call W (fourteenth session, one H200): the GPU tests that calls T and V did not run, on the final
# build (the fills' checksum change touches Buffers and the reference store): the reference store,
# the buffers, the metrics, evo's own kernels' cache, GREEN's on-device comparison, the SDPA
# reference, the pool's workers and the tensor maps. carry ["bundle.tar.xz"].
set -u
T0=$(date +%s)
[ -x bundle/evo ] && [ bundle/evo -nt bundle.tar.xz ] || { rm -rf bundle; tar xJf bundle.tar.xz; }
S=$OUT/s; mkdir -p $S
export EVO_BINARY=$PWD/bundle/evo LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-}
EVO_CACHE=/tmp/w-tests timeout 170 bundle/evo_tests --gtest_filter='GpuReferenceStore.*:Buffers.*:MetricGpu*:BuiltinCache*:*OnDevice*:SdpaRef*:PoolWorker.*:PoolCli.*:GpuTensorMap.*' > $S/gpu_tests.txt 2>&1
echo "gpu tests rc=$? after $(( $(date +%s) - T0 )) s: $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' $S/gpu_tests.txt | paste -sd' ' | cut -c1-500)" | tee $S/log.txt
grep -E "^\[  FAILED|: Failure" -A6 $S/gpu_tests.txt | head -30 | tee -a $S/log.txt
