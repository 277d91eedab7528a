#!/usr/bin/env bash
# call 11: the review's mend (merge_scales shared with SPLIT_KV, ex2.approx in the merge; the hand-over's state swap without a branch): GREEN of every
# STREAM_K=1 configuration of the six shipped profiles and of sdpa_fp16_wgmma's ITEM_OVERLAP=1 slice, then the FA3
# GPU tests on the bundle
export PYTHONUNBUFFERED=1; S=$OUT/s; mkdir -p $S
export LD_LIBRARY_PATH="$PWD/bundle/lib:${LD_LIBRARY_PATH:-}" EVO_CACHE=/tmp/evo-cache-s8c EVO_BINARY="$PWD/bundle/evo"
echo "device: $(nvidia-smi --query-gpu=name --format=csv,noheader)" > $S/log.txt
pack() { tar czf $OUT/c11.tgz -C $S . ; }
for n in sdpa_fp8pv_wgmma_d128 sdpa_fp16_wgmma sdpa_fp16_wgmma_d128 sdpa_fp8_wgmma sdpa_fp8_wgmma_d128 sdpa_fp8pv_wgmma; do
  timeout 120 python3 tests/gpu/sdpa_check.py profiles/$n.json --only STREAM_K=1 --json $S/check_$n.json > $S/check_$n.txt 2>&1
  echo "$(date +%T) check $n rc=$?" >> $S/log.txt; pack
done
timeout 60 python3 tests/gpu/sdpa_check.py profiles/sdpa_fp16_wgmma.json --only ITEM_OVERLAP=1 --json $S/check_xit.json > $S/check_xit.txt 2>&1
echo "$(date +%T) check xit rc=$?" >> $S/log.txt; pack
timeout 200 bundle/evo_tests --gtest_filter='GpuGates.Fa3*' > $S/gpu-tests.txt 2>&1
echo "$(date +%T) gpu-tests rc=$?" >> $S/log.txt; pack
cat $S/log.txt; grep -h "GREEN:\|compile:\|^worst\|FAIL" $S/check_*.txt | cut -c1-250; grep -E "tests ran|PASSED|FAILED|OK \]" $S/gpu-tests.txt | head
