#!/usr/bin/env bash
# call 9: the peers again on the committed code (main at 1a9b748), 11 rounds each: long D=64 with the final fp16
# kernel (192x128, PINGPONG PERSIST STREAM_K ITEM_OVERLAP, from the shipped profile) and the three D=128 shapes
export PYTHONUNBUFFERED=1; S=$OUT/s; mkdir -p $S
echo "device: $(nvidia-smi --query-gpu=name --format=csv,noheader)" > $S/log.txt
pack() { tar czf $OUT/c9.tgz -C $S . ; }
R=docs/results/fa3/h100-s8; R6=docs/results/fa3/h100-s6; R7=docs/results/fa3/h100-s7; S3=docs/results/fa3/h100-s3
p=sdpa_fp8pv_wgmma_d128; K=kernels/$p-a5a1a55cc136802b.cu
F16=MMA_PATH=3,NUM_WARPS=12,USE_TMA=1,TILE_M=192,TILE_N=128,STAGES=2,WG_PIPE=1,PINGPONG=1,PERSIST=1,STREAM_K=1,ITEM_OVERLAP=1
smi() { nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv,noheader -lms 100 > $S/clocks_$1.csv 2>&1 & SMI=$!; }
smi 64
timeout 200 python3 bench/peers.py --shapes long --fp16-profile profiles/sdpa_fp16_wgmma.json --fp16 long:$F16 --fp8-profile profiles/sdpa_fp8pv_wgmma.json --fp8 long:kernels/sdpa_fp8pv_wgmma-8bc41ce62b12bc83.cu --rounds 11 --out $S/peers64.json > $S/peers64.txt 2>&1
echo "$(date +%T) peers64 rc=$?" >> $S/log.txt; kill $SMI; pack
smi 128
timeout 330 python3 bench/peers.py --shapes long128,prefill128,long128_causal --fp8-profile profiles/$p.json --fp8 long128:$K --best $S3/c2/check_sdpa_fp16_wgmma_d128.json --best $R7/c3/check_$p.json --best $R6/c9/check_sdpa_fp8pv_wgmma_d128.json --rounds 11 --out $S/peers128.json > $S/peers128.txt 2>&1
echo "$(date +%T) peers128 rc=$?" >> $S/log.txt; kill $SMI; pack
for f in $S/clocks_*.csv; do python3 $R6/clock_summary.py $f; done | tee $S/clocks_summary.txt
cat $S/log.txt; grep -h -A9 "^peer" $S/peers64.txt $S/peers128.txt; grep -h "^target" $S/peers64.txt $S/peers128.txt
