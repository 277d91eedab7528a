#!/usr/bin/env bash
# call 4: the targets again (bench/peers.py, 7 interleaved rounds, the same entries as h100-s5/c4), with
# the SM clock, power and throttle reasons sampled every 100 ms beside each peers run (clocks_*.csv)
export PYTHONUNBUFFERED=1; S=$OUT/s; mkdir -p $S
echo "device: $(nvidia-smi --query-gpu=name --format=csv,noheader)" > $S/log.txt
pack() { tar czf $OUT/c4.tgz -C $S . ; }
S3=docs/results/fa3/h100-s3; S4=docs/results/fa3/h100-s4; R=docs/results/fa3/h100-s6
smi() { nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv,noheader -lms 100 > $S/clocks_$1.csv 2>&1 & SMI=$!; }
smi 128
timeout 250 python3 bench/peers.py --shapes long128,prefill128,long128_causal --fp8-profile profiles/sdpa_fp8pv_wgmma_d128.json --fp8 long128:kernels/sdpa_fp8pv_wgmma_d128-58f042ba6935d02f.cu --best $S3/c2/check_sdpa_fp16_wgmma_d128.json --best $S3/c5/check_sdpa_fp8pv_wgmma_d128.json --rounds 7 --out $S/peers128.json > $S/peers128.txt 2>&1
echo "$(date +%T) peers128 rc=$?" >> $S/log.txt; kill $SMI; pack
smi 64
timeout 150 python3 bench/peers.py --shapes long --fp16-profile profiles/sdpa_fp16_wgmma.json --fp8-profile profiles/sdpa_fp8pv_wgmma.json --fp8 long:kernels/sdpa_fp8pv_wgmma-8bc41ce62b12bc83.cu --best $S4/c1/check_sdpa_fp16_wgmma.json --rounds 7 --out $S/peers64.json > $S/peers64.txt 2>&1
echo "$(date +%T) peers64 rc=$?" >> $S/log.txt; kill $SMI; pack
for f in $S/clocks_*.csv; do python3 $R/clock_summary.py $f; done | tee $S/clocks_summary.txt
cat $S/log.txt; grep -h -A9 "^peer" $S/peers128.txt $S/peers64.txt; grep -h "^target" $S/peers128.txt $S/peers64.txt
