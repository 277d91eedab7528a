#!/usr/bin/env bash
# call 2: the epilogue's stores 16 bytes a thread (FA3_O_V4=1, now the template's default) or 8 (=2, one exchange),
# FA3_Q_FIRST (the next Q waited for and fenced before the stores) with and without FA3_Q_EARLY: GREEN of slices,
# the boundary's stamps, the A/B (rows_c2.json, 9 rounds, the clock sampled)
export PYTHONUNBUFFERED=1; S=$OUT/s; mkdir -p $S
echo "device: $(nvidia-smi --query-gpu=name --format=csv,noheader)" > $S/log.txt
pack() { tar czf $OUT/c2.tgz -C $S . ; }
R=docs/results/fa3/h100-s9; R6=docs/results/fa3/h100-s6
chk() {  # name, profile file, slice, timeout
  timeout $4 python3 tests/gpu/sdpa_check.py $R/profiles/$2.json --only $3 --json $S/check_$1.json > $S/check_$1.txt 2>&1
  echo "$(date +%T) check $1 rc=$?" >> $S/log.txt; pack
}
chk f16d128_qf sdpa_fp16_wgmma_d128_qf MMA_PATH=3,PERSIST=1 100
chk f16d128_o2 sdpa_fp16_wgmma_d128_o2 MMA_PATH=3,PERSIST=1 100
chk e4m3d128_o2 sdpa_fp8pv_wgmma_d128_o2 MMA_PATH=3,PERSIST=1,TILE_N=192 100
chk f16d64_w12_o2 sdpa_fp16_wgmma_o2 MMA_PATH=3,PERSIST=1,NUM_WARPS=12 100
timeout 100 python3 bench/timeline.py $R/rows_c2.json --shape long128 --blocks 8 --json $S/timeline.json > $S/timeline.txt 2>&1
echo "$(date +%T) timeline rc=$?" >> $S/log.txt; gzip $S/timeline.json; pack
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv,noheader -lms 100 > $S/clocks_ab.csv 2>&1 & SMI=$!
timeout 260 python3 bench/ab.py $R/rows_c2.json --shapes long,long128,prefill128 --rounds 9 --json $S/ab.json > $S/ab.txt 2>&1
echo "$(date +%T) ab rc=$?" >> $S/log.txt; kill $SMI; python3 $R6/clock_summary.py $S/clocks_ab.csv >> $S/log.txt; pack
cat $S/log.txt; grep -h "GREEN:\|compile:\|^worst\|FAIL" $S/check_*.txt | cut -c1-200; grep -h "between items\|boundary" $S/timeline.txt | cut -c1-330; sed -n '/^row/,$p' $S/ab.txt
