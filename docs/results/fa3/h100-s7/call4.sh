#!/usr/bin/env bash
# call 4: the peers at head size 128 with the new e4m3 export (EXP_BEFORE_MAX) at long128, 7 rounds, the SM clock
# sampled beside them (as h100-s6/call10.sh)
export PYTHONUNBUFFERED=1; S=$OUT/s; mkdir -p $S
echo "device: $(nvidia-smi --query-gpu=name --format=csv,noheader)" > $S/log.txt
pack() { tar czf $OUT/c4.tgz -C $S . ; }
R=docs/results/fa3/h100-s7; R6=docs/results/fa3/h100-s6; S3=docs/results/fa3/h100-s3; p=sdpa_fp8pv_wgmma_d128
K=$R/c3/kernels/$p-062bb747e212b06b.cu
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv,noheader -lms 100 > $S/clocks_128.csv 2>&1 & SMI=$!
timeout 270 python3 bench/peers.py --shapes long128,prefill128,long128_causal --fp8-profile profiles/$p.json --fp8 long128:$K --best $S3/c2/check_sdpa_fp16_wgmma_d128.json --best $R/c3/check_$p.json --best $R6/c9/check_sdpa_fp8pv_wgmma_d128.json --rounds 7 --out $S/peers128.json > $S/peers128.txt 2>&1
echo "$(date +%T) peers128 rc=$?" >> $S/log.txt; kill $SMI; python3 $R6/clock_summary.py $S/clocks_128.csv >> $S/log.txt; pack
cat $S/log.txt; grep -h -A9 "^peer" $S/peers128.txt; grep -h "^target\|^evo" $S/peers128.txt
