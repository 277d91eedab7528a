#!/usr/bin/env bash
# call 5: the GPU tests on the final binary (main at 8b76a21: EXP_BEFORE_MAX and the NUM_SMS constant)
export PYTHONUNBUFFERED=1; S=$OUT/s; mkdir -p $S
export LD_LIBRARY_PATH="$PWD/bundle/lib:${LD_LIBRARY_PATH:-}" EVO_CACHE=/tmp/evo-cache-s7 EVO_BINARY="$PWD/bundle/evo"
echo "device: $(nvidia-smi --query-gpu=name --format=csv,noheader)" > $S/log.txt
timeout 420 bundle/evo_tests --gtest_filter='Gpu*:Ptxas*:Metric*:*SdpaRef*:GreenCompare*' > $S/gpu-tests.txt 2>&1
echo "$(date +%T) gpu-tests rc=$?" >> $S/log.txt; tar czf $OUT/c5.tgz -C $S .
cat $S/log.txt; grep -E "tests ran|PASSED|FAILED|SKIPPED \]" $S/gpu-tests.txt | head -20
