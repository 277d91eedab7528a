#!/usr/bin/env bash
# call 2: STREAM_K as the data-parallel + stream-K hybrid — GREEN of the STREAM_K=1 slices of the fp16 spaces, the A/B
# (9 rounds, the SM clock sampled), GREEN of the other four spaces' STREAM_K slices
export PYTHONUNBUFFERED=1; S=$OUT/s; mkdir -p $S
echo "device: $(nvidia-smi --query-gpu=name --format=csv,noheader)" > $S/log.txt
pack() { tar czf $OUT/c2.tgz -C $S . ; }
R=docs/results/fa3/h100-s8; R6=docs/results/fa3/h100-s6
for n in sdpa_fp16_wgmma sdpa_fp16_wgmma_d128; do
  timeout 110 python3 tests/gpu/sdpa_check.py $R/profiles/${n}_sk.json --only STREAM_K=1 --time 4 --json $S/check_$n.json > $S/check_$n.txt 2>&1
  echo "$(date +%T) check $n rc=$?" >> $S/log.txt; pack
done
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv,noheader -lms 100 > $S/clocks_ab.csv 2>&1 & SMI=$!
timeout 200 python3 bench/ab.py $R/rows_c2.json --shapes long,long128,prefill128,long128_causal --rounds 9 --json $S/ab.json > $S/ab.txt 2>&1
echo "$(date +%T) ab rc=$?" >> $S/log.txt; kill $SMI; python3 $R6/clock_summary.py $S/clocks_ab.csv >> $S/log.txt; pack
timeout 150 python3 tests/gpu/sdpa_check.py $R/profiles/sdpa_fp8pv_wgmma_d128_sk.json --only STREAM_K=1 --json $S/check_sdpa_fp8pv_wgmma_d128.json > $S/check_sdpa_fp8pv_wgmma_d128.txt 2>&1
echo "$(date +%T) check sdpa_fp8pv_wgmma_d128 rc=$?" >> $S/log.txt; pack
for n in sdpa_fp8_wgmma sdpa_fp8_wgmma_d128 sdpa_fp8pv_wgmma; do
  timeout 80 python3 tests/gpu/sdpa_check.py $R/profiles/${n}_sk.json --only STREAM_K=1 --json $S/check_$n.json > $S/check_$n.txt 2>&1
  echo "$(date +%T) check $n rc=$?" >> $S/log.txt; pack
done
cat $S/log.txt; grep -h "GREEN:\|compile:\|^worst\|FAIL" $S/check_*.txt | cut -c1-250 | head -30; sed -n '/^row/,$p' $S/ab.txt
