#!/usr/bin/env bash
# call 7: the FA3 GPU tests on the final bundle (ITEM_OVERLAP now a knob of sdpa_fp16_wgmma, and in the STREAM_K test)
export PYTHONUNBUFFERED=1; S=$OUT/s; mkdir -p $S
export LD_LIBRARY_PATH="$PWD/bundle/lib:${LD_LIBRARY_PATH:-}" EVO_CACHE=/tmp/evo-cache-s8 EVO_BINARY="$PWD/bundle/evo"
echo "device: $(nvidia-smi --query-gpu=name --format=csv,noheader)" > $S/log.txt
timeout 300 bundle/evo_tests --gtest_filter='GpuGates.*' > $S/gpu-tests.txt 2>&1
echo "$(date +%T) gpu-tests rc=$?" >> $S/log.txt; tar czf $OUT/c7.tgz -C $S .
cat $S/log.txt; grep -E "tests ran|PASSED|FAILED|OK \] GpuGates.Fa3|SKIPPED \]" $S/gpu-tests.txt | head -20
