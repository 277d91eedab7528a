#!/usr/bin/env bash
# call 8: the GPU tests on the final bundle (the two FA3 tests share one helper now; the export header names scratch)
export PYTHONUNBUFFERED=1; S=$OUT/s; mkdir -p $S
export LD_LIBRARY_PATH="$PWD/bundle/lib:${LD_LIBRARY_PATH:-}" EVO_CACHE=/tmp/evo-cache-s8 EVO_BINARY="$PWD/bundle/evo"
echo "device: $(nvidia-smi --query-gpu=name --format=csv,noheader)" > $S/log.txt
pack() { tar czf $OUT/c8.tgz -C $S . ; }
p=sdpa_fp8pv_wgmma_d128
timeout 330 bundle/evo_tests --gtest_filter='Gpu*:Ptxas*:Metric*:*SdpaRef*:GreenCompare*' > $S/gpu-tests.txt 2>&1
echo "$(date +%T) gpu-tests rc=$?" >> $S/log.txt; pack
cat $S/log.txt; grep -E "tests ran|PASSED|FAILED|SKIPPED \]" $S/gpu-tests.txt | head -20
