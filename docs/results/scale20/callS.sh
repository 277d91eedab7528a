#!/usr/bin/env bash
# Call S (forty-second session, on the machine call R left warm): every GPU test on the build of
# 4d3ddc0 (the bundle of 349a71c, docs only since). Sent inline on the warm machine; this file, written
# after the call, records its command. What call Q implied beforehand: 133 listed (call Q's 132 and the new
# PoolWorker.ASocketPathAppearsOnlyOnceItsWorkerListens), 127 passed, the 6 that need a machine
# without a GPU skipped. carry ["bundle.tar.xz"].
[ -x bundle/evo ] || tar xJf bundle.tar.xz; mkdir -p $OUT/s
export EVO_BINARY=$PWD/bundle/evo LD_LIBRARY_PATH=$PWD/bundle/lib; T0=$(date +%s)
EVO_CACHE=/tmp/s-tests timeout 480 scripts/gpu-tests.sh bundle/evo_tests > $OUT/s/gpu_tests.txt 2>&1
echo "rc=$? $(( $(date +%s)-T0 )) s"
grep -E '^\[  (PASSED|FAILED) \]|tests? from .* ran|SKIPPED \] [0-9]' $OUT/s/gpu_tests.txt
grep '^\[  FAILED' $OUT/s/gpu_tests.txt | head; nvidia-smi --query-gpu=name --format=csv,noheader
cd $OUT && tar czf r2.tgz s
