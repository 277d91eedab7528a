#!/usr/bin/env bash
# call 3: GREEN of every MMA_PATH=3 configuration of sdpa_fp8pv_wgmma_d128 and sdpa_fp8_wgmma_d128 on every problem
# (the template now stores O 16 bytes a thread and waits for the next Q before the stores: the PTX of every
# MMA_PATH=3 configuration changed), with the spill and serialisation counts
export PYTHONUNBUFFERED=1; S=$OUT/s; mkdir -p $S
echo "device: $(nvidia-smi --query-gpu=name --format=csv,noheader)" > $S/log.txt
pack() { tar czf $OUT/c3.tgz -C $S . ; }
for n in sdpa_fp8pv_wgmma_d128 sdpa_fp8_wgmma_d128; do
  timeout 520 python3 tests/gpu/sdpa_check.py profiles/$n.json --only MMA_PATH=3 --time 4 --json $S/check_$n.json > $S/check_$n.txt 2>&1
  echo "$(date +%T) check $n rc=$?" >> $S/log.txt; pack
done
cat $S/log.txt; grep -h "GREEN:\|compile:\|^worst\|FAIL\|SPILL" $S/check_*.txt | cut -c1-300
