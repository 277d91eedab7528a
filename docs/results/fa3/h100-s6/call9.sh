#!/usr/bin/env bash
# call 9: ITEM_OVERLAP (an item's last P·V and the next item's first Q·Kᵀ in one turn, the next item's first
# softmax under that P·V) — GREEN sweeps of its slices of the six wgmma spaces (scratch profiles in profiles/),
# the timeline of the e4m3 D=128 export's configuration with and without it (clocks between items), and the
# A/B of the PERSIST configurations that matter (7 rounds, the clock sampled)
export PYTHONUNBUFFERED=1; S=$OUT/s; mkdir -p $S
echo "device: $(nvidia-smi --query-gpu=name --format=csv,noheader)" > $S/log.txt
pack() { tar czf $OUT/c9.tgz -C $S . ; }
R=docs/results/fa3/h100-s6
for n in sdpa_fp8pv_wgmma_d128 sdpa_fp16_wgmma_d128 sdpa_fp8pv_wgmma sdpa_fp8_wgmma_d128 sdpa_fp16_wgmma sdpa_fp8_wgmma; do
  timeout 110 python3 tests/gpu/sdpa_check.py $R/profiles/${n}_xitem.json --only ITEM_OVERLAP=1 --time 4 --json $S/check_$n.json > $S/check_$n.txt 2>&1
  echo "$(date +%T) check $n rc=$?" >> $S/log.txt; pack
done
timeout 100 python3 bench/timeline.py $R/rows_c9.json --shape long128 --json $S/timeline_c9.json > $S/timeline_c9.txt 2>&1
echo "$(date +%T) timeline rc=$?" >> $S/log.txt; gzip $S/timeline_c9.json; pack
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv,noheader -lms 100 > $S/clocks_ab.csv 2>&1 & SMI=$!
timeout 240 python3 bench/ab.py $R/rows_c9.json --shapes long,long128,prefill128,long128_causal --rounds 7 --json $S/ab.json > $S/ab.txt 2>&1
echo "$(date +%T) ab rc=$?" >> $S/log.txt; kill $SMI; python3 $R/clock_summary.py $S/clocks_ab.csv >> $S/log.txt; pack
cat $S/log.txt; grep -h "GREEN:\|compile:\|^best at long \|^worst" $S/check_*.txt | cut -c1-200; grep -h "^fp\|between items" $S/timeline_c9.txt | cut -c1-200; sed -n '/^row/,$p' $S/ab.txt
