#!/usr/bin/env bash
# call 1: an item's boundary, event by event (TB_* stamps, bench/timeline.py), and two experiments on it, as defines
# (not knobs yet): FA3_Q_EARLY (the producer copies the next item's Q a whole item ahead, not two tiles ahead) and
# FA3_O_V4 (the epilogue's stores 16 bytes a thread after a transpose within each quad, not 4). GREEN of slices with
# both (scratch profiles in profiles/*_qo.json), the timeline, then the A/B (7 rounds, the clock sampled)
export PYTHONUNBUFFERED=1; S=$OUT/s; mkdir -p $S
echo "device: $(nvidia-smi --query-gpu=name --format=csv,noheader)" > $S/log.txt
pack() { tar czf $OUT/c1.tgz -C $S . ; }
R=docs/results/fa3/h100-s9; R6=docs/results/fa3/h100-s6
chk() {  # name, profile, slice, timeout
  timeout $4 python3 tests/gpu/sdpa_check.py $R/profiles/$2_qo.json --only $3 --json $S/check_$1.json > $S/check_$1.txt 2>&1
  echo "$(date +%T) check $1 rc=$?" >> $S/log.txt; pack
}
chk f16d128_persist sdpa_fp16_wgmma_d128 MMA_PATH=3,PERSIST=1 110
chk f16d128_pp sdpa_fp16_wgmma_d128 MMA_PATH=3,PERSIST=0,PINGPONG=1 60
chk e4m3d128_192 sdpa_fp8pv_wgmma_d128 MMA_PATH=3,PERSIST=1,TILE_N=192 110
chk f16d64_w8 sdpa_fp16_wgmma MMA_PATH=3,PERSIST=1,NUM_WARPS=8 80
timeout 100 python3 bench/timeline.py $R/rows_c1.json --shape long128 --blocks 8 --json $S/timeline.json > $S/timeline.txt 2>&1
echo "$(date +%T) timeline rc=$?" >> $S/log.txt; gzip $S/timeline.json; pack
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv,noheader -lms 100 > $S/clocks_ab.csv 2>&1 & SMI=$!
timeout 200 python3 bench/ab.py $R/rows_c1.json --shapes long,long128,prefill128 --rounds 7 --json $S/ab.json > $S/ab.txt 2>&1
echo "$(date +%T) ab rc=$?" >> $S/log.txt; kill $SMI; python3 $R6/clock_summary.py $S/clocks_ab.csv >> $S/log.txt; pack
cat $S/log.txt; grep -h "GREEN:\|compile:\|^worst\|FAIL" $S/check_*.txt | cut -c1-200; grep -h "^fp\|between items\|boundary" $S/timeline.txt | cut -c1-400; sed -n '/^row/,$p' $S/ab.txt
