#!/usr/bin/env bash
# call 7: the peers at head size 128 again, 11 rounds, with this pass's two exports at long128 (the committed files)
# and the sweeps' fastest elsewhere (c3, c4), the clock sampled
export PYTHONUNBUFFERED=1; S=$OUT/s; mkdir -p $S
echo "device: $(nvidia-smi --query-gpu=name --format=csv,noheader)" > $S/log.txt
pack() { tar czf $OUT/c7.tgz -C $S . ; }
R=docs/results/fa3/h100-s9; R6=docs/results/fa3/h100-s6
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv,noheader -lms 100 > $S/clocks_128.csv 2>&1 & SMI=$!
timeout 420 python3 bench/peers.py --shapes long128,prefill128,long128_causal --fp16-profile profiles/sdpa_fp16_wgmma_d128.json --fp16 long128:kernels/sdpa_fp16_wgmma_d128-39f324296584c0a2.cu --fp8-profile profiles/sdpa_fp8pv_wgmma_d128.json --fp8 long128:kernels/sdpa_fp8pv_wgmma_d128-5358f09ced70c318.cu --best $R/c4/check_sdpa_fp16_wgmma_d128.json --best $R/c3/check_sdpa_fp8pv_wgmma_d128.json --rounds 11 --out $S/peers128.json > $S/peers128.txt 2>&1
echo "$(date +%T) peers128 rc=$?" >> $S/log.txt; kill $SMI; python3 $R6/clock_summary.py $S/clocks_128.csv >> $S/log.txt; pack
cat $S/log.txt; grep -h -A9 "^peer" $S/peers128.txt; grep -h "^target" $S/peers128.txt
