#!/usr/bin/env bash
# call 5: fp16 long D=64 — variants of the 192x128 PINGPONG PERSIST STREAM_K kernel (9 rounds; ITEM_OVERLAP and
# LAZY_RESCALE as extra defines, not knobs of the profile), then the peers at long D=64 with 11 rounds
export PYTHONUNBUFFERED=1; S=$OUT/s; mkdir -p $S
echo "device: $(nvidia-smi --query-gpu=name --format=csv,noheader)" > $S/log.txt
pack() { tar czf $OUT/c5.tgz -C $S . ; }
R=docs/results/fa3/h100-s8; R6=docs/results/fa3/h100-s6
F16=MMA_PATH=3,NUM_WARPS=12,USE_TMA=1,TILE_M=192,TILE_N=128,STAGES=2,WG_PIPE=1,PINGPONG=1,PERSIST=1,STREAM_K=1
smi() { nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv,noheader -lms 100 > $S/clocks_$1.csv 2>&1 & SMI=$!; }
smi ab
timeout 120 python3 bench/ab.py $R/rows_c5.json --shapes long --rounds 9 --json $S/ab.json > $S/ab.txt 2>&1
echo "$(date +%T) ab rc=$?" >> $S/log.txt; kill $SMI; pack
smi 64
timeout 250 python3 bench/peers.py --shapes long --fp16-profile profiles/sdpa_fp16_wgmma.json --fp16 long:$F16 --fp8-profile profiles/sdpa_fp8pv_wgmma.json --fp8 long:kernels/sdpa_fp8pv_wgmma-8bc41ce62b12bc83.cu --rounds 11 --out $S/peers64.json > $S/peers64.txt 2>&1
echo "$(date +%T) peers64 rc=$?" >> $S/log.txt; kill $SMI; pack
for f in $S/clocks_*.csv; do python3 $R6/clock_summary.py $f; done | tee $S/clocks_summary.txt
cat $S/log.txt; sed -n '/^row/,$p' $S/ab.txt; grep -h -A9 "^peer" $S/peers64.txt; grep -h "^target" $S/peers64.txt
