#!/usr/bin/env bash
# call 5: the GPU tests on the NUM_SMS binary (the worker sets NUM_SMS from its device; the FA3 GPU test runs
# PERSIST=1 through evo's own gates)
export PYTHONUNBUFFERED=1; S=$OUT/s; mkdir -p $S
export LD_LIBRARY_PATH="$PWD/bundle/lib:${LD_LIBRARY_PATH:-}" EVO_CACHE=/tmp/evo-cache-s5 EVO_BINARY="$PWD/bundle/evo"
echo "device: $(nvidia-smi --query-gpu=name --format=csv,noheader)" > $S/log.txt
timeout 240 bundle/evo_tests --gtest_filter='Gpu*:Ptxas*:Metric*:*SdpaRef*:GreenCompare*' > $S/gpu-tests.txt 2>&1
echo "$(date +%T) gpu-tests rc=$?" >> $S/log.txt
timeout 100 python3 tests/gpu/sdpa_check.py profiles/sdpa_fp8pv_wgmma_d128.json --only PERSIST=1,TILE_N=192 --time 2 > $S/check_persist.txt 2>&1
echo "$(date +%T) check rc=$?" >> $S/log.txt
tar czf $OUT/c5.tgz -C $S .
cat $S/log.txt; grep -E "tests ran|PASSED|FAILED|SKIPPED" $S/gpu-tests.txt | head; grep -E "device:|GREEN:|compile:|^best" $S/check_persist.txt | cut -c1-200
